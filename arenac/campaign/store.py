"""The campaign's results store: an embedded SQLite database, `results.sqlite` in the campaign
directory, one row per trial (docs/campaign.md, "The results database").

Contract:
- `CampaignStore.open(directory)` creates the database (and its tables) or opens the existing
  one; a database of another schema version is refused (`StoreError`), never migrated in place.
- `record(row)` writes one trial's `TrialRow` (arenac/model/campaign.py), replacing an earlier row
  of the same (agent, variant, trial), and its gate checks, in one transaction, committed before
  it returns: a campaign killed between trials loses none it finished. Safe from several threads.
- Tables: `trials` (the row's fields as columns for queries: agent, agent_spec, task, variant,
  trial, attempts, status, reward, outcome, safe_repair, reason, access, substrate, layers (the
  distinct fault layers, comma-separated), wall_s, run_dir, failure_classes (comma-separated, in
  the taxonomy's order), full_fix (1, 0 or NULL: not said), taxonomy_problem; and `row`, the whole row as JSON,
  which `rows()` reads back), `checks` (agent, variant, trial, gate, position, text, passed,
  detail) and `meta` (schema_version).
- `rows()` returns every row, sorted by (agent, task, variant, trial); `trials()` the same as the
  statistics' `Trial` (campaign/trials.py).
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from arenac.campaign.trials import Trial
from arenac.model.campaign import TrialRow
from arenac.rundir import CAMPAIGN_DATABASE as DATABASE

SCHEMA_VERSION = "arenac.campaign-results/v2"

_TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trials (
  agent TEXT NOT NULL, agent_spec TEXT NOT NULL, task TEXT NOT NULL, variant TEXT NOT NULL,
  trial INTEGER NOT NULL, attempts INTEGER NOT NULL, status TEXT NOT NULL, reward INTEGER NOT NULL,
  outcome INTEGER NOT NULL, safe_repair INTEGER NOT NULL, reason TEXT, access TEXT NOT NULL,
  substrate TEXT NOT NULL, layers TEXT NOT NULL, wall_s REAL NOT NULL, run_dir TEXT NOT NULL,
  failure_classes TEXT NOT NULL, full_fix INTEGER, taxonomy_problem TEXT, row TEXT NOT NULL,
  PRIMARY KEY (agent, variant, trial));
CREATE TABLE IF NOT EXISTS checks (
  agent TEXT NOT NULL, variant TEXT NOT NULL, trial INTEGER NOT NULL, gate TEXT NOT NULL,
  position INTEGER NOT NULL, text TEXT NOT NULL, passed INTEGER NOT NULL, detail TEXT NOT NULL,
  PRIMARY KEY (agent, variant, trial, gate, position));
"""


class StoreError(Exception):
    """The database cannot be used: another schema version, or not a database at all."""


class CampaignStore:
    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection
        self._lock = threading.Lock()

    @classmethod
    def open(cls, directory: Path) -> CampaignStore:
        path = directory / DATABASE
        try:
            connection = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            connection.executescript(_TABLES)
            found = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if found is None:
                connection.execute("INSERT INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
            elif found[0] != SCHEMA_VERSION:
                connection.close()
                raise StoreError(f"{path.as_posix()} is of schema {found[0]}, this arenac writes {SCHEMA_VERSION}: "
                                 "use a new campaign directory")
        except sqlite3.DatabaseError as error:
            raise StoreError(f"{path.as_posix()}: {error}") from None
        return cls(connection)

    def close(self) -> None:
        with self._lock:
            self._connection.close()

    def record(self, row: TrialRow) -> None:
        key = (row.agent, row.variant, row.trial)
        layers = ",".join(sorted(set(row.faults.values())))
        with self._lock:
            connection = self._connection
            connection.execute("BEGIN IMMEDIATE")
            try:
                connection.execute("DELETE FROM checks WHERE agent = ? AND variant = ? AND trial = ?", key)
                connection.execute(
                    "INSERT OR REPLACE INTO trials VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (row.agent, row.agent_spec, row.task, row.variant, row.trial, row.attempts, row.status,
                     row.reward, int(row.outcome), int(row.safe_repair), row.reason, row.access, row.substrate,
                     layers, row.wall_s, row.run_dir, ",".join(row.failure_classes),
                     None if row.full_fix is None else int(row.full_fix), row.taxonomy_problem,
                     row.model_dump_json()))
                connection.executemany(
                    "INSERT INTO checks VALUES (?,?,?,?,?,?,?,?)",
                    [(*key, check.gate, position, check.text, int(check.passed), check.detail)
                     for position, check in enumerate(row.checks)])
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise

    def rows(self) -> list[TrialRow]:
        with self._lock:
            found = self._connection.execute("SELECT row FROM trials ORDER BY agent, task, variant, trial").fetchall()
        return [TrialRow.model_validate_json(text) for (text,) in found]

    def trials(self) -> list[Trial]:
        return [as_trial(row) for row in self.rows()]


def as_trial(row: TrialRow) -> Trial:
    """A row as the statistics read it."""
    return Trial(agent=row.agent, task=row.task, variant=row.variant, faults=row.faults, access=row.access,
                 substrate=row.substrate, status=row.status, reward=row.reward, full_fix=row.full_fix)
