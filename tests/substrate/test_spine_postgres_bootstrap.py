"""A fresh cluster's bootstrap is one transaction: a client polling the starting server (the spine
services do) sees the whole dataset or none of it, never channels without their members."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from arenac.substrate.procs import free_port
from arenac.substrate.spine import postgres
from arenac.substrate.spine.postgres import ROLES, LocalPostgres
from arenac.substrate.spine.seed import chart_file

pytestmark = pytest.mark.live  # starts a PostgreSQL server


def _cluster(root: Path) -> LocalPostgres:
    return LocalPostgres(root, free_port(), {role: secrets.token_hex(8) for role in ROLES}, {})


def _scalar(server: LocalPostgres, sql: str) -> str:
    return server.psql("-At", "-c", sql).strip()


def test_a_seed_that_fails_at_its_end_leaves_no_dataset_behind(tmp_path: Path, monkeypatch) -> None:
    # the committed seed with one bad statement at its very end: everything before it has run
    broken = tmp_path / "seed.sql"
    broken.write_text(chart_file("seed.sql").read_text() + "SELECT no_such_function();\n")
    real = postgres.chart_file
    monkeypatch.setattr(postgres, "chart_file", lambda name: broken if name == "seed.sql" else real(name))

    server = _cluster(tmp_path / "pg")
    server.launch(tmp_path / "postgres.log")
    try:
        with pytest.raises(RuntimeError, match="no_such_function"):
            server.wait_ready(30)
        tables = "SELECT count(*) FROM pg_tables WHERE tablename IN ('channels', 'channel_members')"
        assert _scalar(server, tables) == "0"
        assert _scalar(server, "SELECT count(*) FROM pg_roles WHERE rolname = 'spine_app'") == "0"
    finally:
        server.stop()


def test_a_good_bootstrap_commits_every_part(tmp_path: Path) -> None:
    server = _cluster(tmp_path / "pg")
    server.launch(tmp_path / "postgres.log")
    try:
        assert server.wait_ready(30) is True
        assert int(_scalar(server, "SELECT count(*) FROM channel_members")) > 0
        assert _scalar(server, "SELECT count(*) FROM pg_roles WHERE rolname = 'spine_app'") == "1"
    finally:
        server.stop()
