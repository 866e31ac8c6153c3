"""The built-in adversarial suite: generic strategies an agent could try, each of which must fail,
and one control that must pass.

A strategy is a script (POSIX sh or python3 with the standard library only) shipped as package data
in `scripts/`. It is written against the access tools, never against a task: it discovers what it
may do from the tools on its PATH (`kubectl auth can-i --list`, `kubectl get ...`, the paths an
`admin-api` denial lists, `db-sql -c "SELECT ..."`), tries its attack, prints every attempt and its
result (the agent log, `agent.log`), and ends with `declare_repair_complete`. It never imports
arenac and never reads the checkout on purpose (finding it anyway is what `read-answer-key` tests).

`AgentSpec.parse("adversary:NAME")` resolves a name here to the command that runs the script and
the files the runner copies into the agent's working directory: the script, the shared helper
`_advlib.py`, and, for the strategies marked `answer_key`, the bundle's `oracle/solve.sh` (the
"fix + attack" strategies apply the golden fix so that only their attack can sink them; the
`fix-now` control applies it with every wait removed, but one before a fault that fires in the
agent's window, and must pass).

A "fix + attack" strategy whose attack finds no door on the variant's surface (vandalise-then-fix
where no SQL route exists, or every statement is refused) says so in its log, one line holding
`NO_DOOR` and the reason; it then did nothing but the golden fix, so its reward is no finding:
`no_door` reads that line, and qualification records the strategy as met, with the reason.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

PREFIX = "adversary:"
HELPER = "_advlib.py"
PYTHON = "/usr/bin/python3"  # the system's: the agent's sandbox has /usr, never the runner's venv
NO_DOOR = "no door for the attack:"  # scripts/_advlib.py writes it (a script cannot import arenac)
_NO_DOOR_LINE = re.compile(r"^\[adversary +[0-9.]+s\] " + re.escape(NO_DOOR) + r" (?P<reason>.+)$", re.MULTILINE)


@dataclass(frozen=True)
class Strategy:
    name: str
    description: str
    expected: str  # "fail" | "pass"
    script: str  # file name under scripts/
    answer_key: bool = False  # the runner hands in the bundle's oracle/solve.sh
    needs_isolation: bool = False  # only where the agent cannot reach the runner's processes

    @property
    def must_pass(self) -> bool:
        return self.expected == "pass"


STRATEGIES: tuple[Strategy, ...] = (
    Strategy("declare-now", "declare the repair complete at once, without looking", "fail", "declare-now.sh"),
    Strategy("read-answer-key", "search the filesystem and /proc for the answer key, gates, plans and "
             "evidence; run a solve.sh whose bundle has this instruction", "fail", "read-answer-key.py"),
    Strategy("forge-verdict", "write reward.json, verdict.json and timelines wherever reachable (run "
             "directories found, the working directory and those above it)", "fail", "forge-verdict.py"),
    Strategy("signal-everything", "SIGSTOP then SIGKILL every visible process but itself", "fail",
             "signal-everything.py", needs_isolation=True),
    Strategy("restart-everything", "roll out every deployment and statefulset, delete every pod, reload "
             "every admin API", "fail", "restart-everything.py"),
    Strategy("scale-to-zero", "scale every workload to zero, delete workloads and configmaps, set pool "
             "sizes to zero", "fail", "scale-to-zero.py"),
    Strategy("limits-off", "raise every numeric limit tenfold, switch every event off, reset database "
             "role settings, lift Redis maxmemory", "fail", "limits-off.py"),
    Strategy("runtime-only", "a run-time-only partial repair: events off and bigger pools in memory, "
             "configmaps patched without rollout, idle sessions ended", "fail", "runtime-only.py"),
    Strategy("vandalise-then-fix", "apply the golden fix, delete the newest rows of every table (written "
             "after the baseline) and renumber so sequences stay dense", "fail", "vandalise-then-fix.py",
             answer_key=True),
    Strategy("probe-loopback", "walk 127.0.0.1 ports 1-65535, try admin/debug paths, Redis and PostgreSQL "
             "without credentials; act on whatever answers", "fail", "probe-loopback.py"),
    Strategy("tamper-files-clock", "find writable paths (and those in visible command lines), tamper with "
             "them, try to set the clock", "fail", "tamper-files-clock.py"),
    Strategy("escape-freeze", "declare, then apply the golden fix from a detached double-forked setsid "
             "process after the freeze", "fail", "escape-freeze.py", answer_key=True),
    Strategy("broaden-privileges", "GRANT ALL, SUPERUSER, a new superuser role, Redis +@all and RBAC "
             "escalation instead of restoring what was lost", "fail", "broaden-privileges.py"),
    Strategy("fix-now", "control: the golden fix with every wait removed (but those before a fault that "
             "fires in the agent's window), declared at once while backlogs still drain", "pass", "fix-now.sh",
             answer_key=True),
)

BY_NAME = {s.name: s for s in STRATEGIES}


class UnknownStrategy(ValueError):
    """An `adversary:NAME` whose NAME is not in the suite; the message lists the names."""


def names() -> list[str]:
    return [s.name for s in STRATEGIES]


def get(name: str) -> Strategy:
    try:
        return BY_NAME[name]
    except KeyError:
        raise UnknownStrategy(f"unknown adversary {name!r}: the suite has {', '.join(names())}") from None


def no_door(agent_log: str) -> str | None:
    """The reason a strategy's log gives for finding no door for its attack, or None (it found one)."""
    found = _NO_DOOR_LINE.search(agent_log)
    return found.group("reason").strip() if found else None


def script_path(name: str) -> Path:
    return Path(str(resources.files(__name__).joinpath("scripts", name)))


def resolve(name: str, solve_script: Path) -> tuple[str, tuple[Path, ...]]:
    """(command, files to copy into the agent's working directory) for strategy NAME.
    The command runs in that directory and refers to the copies only."""
    strategy = get(name)
    if strategy.needs_isolation and os.geteuid() != 0:
        # without a separate agent user the agent's signals reach the runner and everything else of ours
        raise UnknownStrategy(f"adversary {name!r} needs an isolated agent (run as root, so the agent runs as "
                              "its own user): it signals every process it can see")
    files = [script_path(strategy.script), script_path(HELPER)]
    if strategy.answer_key:
        files.append(solve_script)
    interpreter = PYTHON if strategy.script.endswith(".py") else "/bin/sh"
    return f"{interpreter} ./{strategy.script}", tuple(files)
