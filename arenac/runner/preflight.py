"""Refusals before anything is spent: what `arenac run` and `arenac qualify` check before they
start a stack, write a state record, or create a scratch, run or qualification directory.

Contract: each check returns None or one line saying what is wrong; the click types raise
`click.BadParameter` with one line. The CLI prints the line as `arenac: LINE` and exits 2 (a
usage error). Nothing here writes a file or starts an episode (a `cmd:` agent's syntax is checked
by `/bin/sh -n`, which reads the command and runs nothing). The rules (docs/runner.md):

- `--time-scale`: a finite number above 0.
- `--jobs`: at least 1, and at most `MAX_JOBS_PER_CPU` x the CPUs this runner may run on (and,
  as root, at most the agent users there are: one per live episode). Episodes side by side share
  the machine; beyond that their latency gates measure the contention, not the task.
- `-k`, `--adversary-k`: at least 1 (click.IntRange in the CLI).
- a `cmd:` agent: a command `/bin/sh -c` can parse, whose first command word, when it can be
  known without running anything, names a program the agent can start: an absolute path must be
  an executable file; a bare name must be a shell builtin or keyword, one of the brokered tools,
  or an executable in the agent's system PATH (/usr/local/bin, /usr/bin, /bin: the agent's PATH
  is not the operator's). A relative path is refused: the agent starts in a fresh working
  directory holding only instruction.md. A first word that the shell would expand (`$X`, `~`,
  a glob, a command substitution), or a command that does not start with a plain word (a
  subshell, a redirection), is left to the shell.
- `--out` of `arenac run`: absent, an empty directory, or an arenac run directory (rundir.py),
  which the episode then replaces; `--out` of `arenac qualify`: absent, an empty directory, or an
  arenac qualification directory, which it resumes; `--out` of `arenac campaign` likewise, with
  an arenac campaign directory. Anything else (a regular file, a directory
  holding other things) is refused, so that nothing of the operator's is mixed with or deleted by
  a run.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import subprocess
from pathlib import Path

import click

from arenac.rundir import is_campaign_dir, is_qualification_dir, is_run_dir

MAX_JOBS_PER_CPU = 4
AGENT_USERS = 16  # agents.py: as root, one user of its own per live episode
_SYSTEM_PATH = ("/usr/local/bin", "/usr/bin", "/bin")  # the agent's PATH after its tools (sandbox.AGENT_PATH)
_SHELL_WORDS = frozenset([
    "!", "case", "do", "done", "elif", "else", "esac", "fi", "for", "function", "if", "in", "then", "time",
    "until", "while", "{", "}"
])
_BUILTINS = frozenset([
    ".", ":", "[", "alias", "bg", "break", "cd", "command", "continue", "echo", "eval", "exec", "exit", "export",
    "false", "fc", "fg", "getopts", "hash", "jobs", "kill", "local", "printf", "pwd", "read", "readonly",
    "return", "set", "shift", "test", "times", "trap", "true", "type", "ulimit", "umask", "unalias", "unset",
    "wait"
])
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_EXPANDS = set("$`*?[~\\")


# ---- option types ------------------------------------------------------------------------------
class TimeScale(click.ParamType):
    """A finite number above 0."""

    name = "float"

    def convert(self, value, param, ctx):
        if isinstance(value, float):
            number = value
        else:
            try:
                number = float(value)
            except (TypeError, ValueError):
                self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(number) or number <= 0:
            self.fail(f"must be a finite number above 0, not {value} (0.1 runs ten times faster than the plan)",
                      param, ctx)
        return number


class Jobs(click.ParamType):
    """Episodes side by side: from 1 to `max_jobs()`."""

    name = "integer"

    def convert(self, value, param, ctx):
        try:
            jobs = value if isinstance(value, int) else int(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a whole number", param, ctx)
        problem = jobs_problem(jobs)
        if problem:
            self.fail(problem, param, ctx)
        return jobs


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, else the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def max_jobs() -> tuple[int, str]:
    """The most episodes side by side, and why that many."""
    cpus = usable_cpus()
    limit, why = MAX_JOBS_PER_CPU * cpus, f"{MAX_JOBS_PER_CPU} x the {cpus} CPU(s) this runner may use"
    if os.geteuid() == 0 and limit > AGENT_USERS:
        limit, why = AGENT_USERS, f"the {AGENT_USERS} agent users (one per live episode)"
    return limit, why


def jobs_problem(jobs: int) -> str | None:
    if jobs < 1:
        return f"must be at least 1, not {jobs}"
    limit, why = max_jobs()
    if jobs > limit:
        return (f"{jobs} episodes side by side is more than {why} ({limit}): they would compete for the "
                "machine, and the latency gates would measure that")
    return None


# ---- agents ------------------------------------------------------------------------------------
def command_problem(command: str) -> str | None:
    """Why a `cmd:` agent's COMMAND cannot start its program (see the module docstring), or None."""
    if not command.strip():
        return 'cmd: names no command (give one: cmd:"PROGRAM ARGS")'
    try:
        syntax = subprocess.run(["/bin/sh", "-n", "-c", command], capture_output=True, text=True, timeout=10,
                                stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        syntax = None  # no judge of the syntax here: the shell will be, when the agent starts
    if syntax is not None and syntax.returncode != 0:
        said = (syntax.stderr.strip().splitlines() or ["a syntax error"])[-1]
        return f"cmd: {command!r} is not a command /bin/sh can run: {said}"
    word = _command_word(command)
    if word is None or word in _SHELL_WORDS or word in _BUILTINS:
        return None
    if "/" in word:
        if not word.startswith("/"):
            return (f"cmd: {word!r} is a relative path, but the agent starts in a fresh working directory holding "
                    "only instruction.md: name the program by an absolute path")
        path = Path(word)
        if not path.exists():
            return f"cmd: {word}: no such file"
        if not path.is_file():
            return f"cmd: {word}: not a file"
        if not os.access(path, os.X_OK):
            return f"cmd: {word}: not executable (chmod +x, or run it with its interpreter: cmd:\"sh {word}\")"
        return None
    if any(os.access(Path(directory) / word, os.X_OK) and (Path(directory) / word).is_file()
           for directory in _SYSTEM_PATH):
        return None
    from arenac.broker.tools import (
        TOOLS,  # lazily: the broker and spine load with it; `arenac check` imports this module
    )

    if word in TOOLS or word == "sleep":  # the brokered tools, first on the agent's PATH
        return None
    return (f"cmd: {word!r} is not on the agent's PATH ({':'.join(_SYSTEM_PATH)} and its tools; not this "
            "shell's PATH): name the program by an absolute path")


def _command_word(command: str) -> str | None:
    """The first command's name as the shell will see it, or None when that cannot be known
    without running anything (it starts with a subshell or a redirection, or would be expanded)."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    try:
        for token in lexer:
            if _ASSIGNMENT.match(token):  # VAR=value before the command
                continue
            if not token or token[0] in ";&|()<>" or token.isdigit() or _EXPANDS & set(token):
                return None
            return token
    except ValueError:  # shlex's quoting is not quite the shell's (here-documents): leave it to the shell
        return None
    return None


# ---- output directories ------------------------------------------------------------------------
def default_run_dir(bundle_dir: str) -> Path | None:
    """Where `arenac run` writes without --out (runs/<variant>), read from the bundle's plan.json
    before the bundle is opened; None when it cannot be read (opening the bundle refuses it then)."""
    try:
        return Path("runs") / str(json.loads((Path(bundle_dir) / "plan.json").read_text(encoding="utf-8"))["variant"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def run_out_problem(out: Path) -> str | None:
    """Why `arenac run` must not write its run directory at OUT, or None."""
    return _out_problem(out, is_run_dir, "an arenac run directory",
                        "run.json, INCOMPLETE, or events.jsonl beside evidence/timeline.json")


def qualification_out_problem(out: Path) -> str | None:
    """Why `arenac qualify` must not write (or resume) at OUT, or None."""
    return _out_problem(out, is_qualification_dir, "an arenac qualification directory",
                        "qualification.json, run directories at TASK/VARIANT/RUN, or only build/")


def campaign_out_problem(out: Path) -> str | None:
    """Why `arenac campaign` must not write (or resume) at OUT, or None."""
    return _out_problem(out, is_campaign_dir, "an arenac campaign directory", "results.sqlite, or only build/ and "
                        "campaign.json")


def _out_problem(out: Path, recognised, what: str, marks: str) -> str | None:
    out = Path(out)
    if not out.exists() and not out.is_symlink():
        return None
    if not out.is_dir():
        return f"--out {out}: exists and is not a directory"
    try:
        if not any(out.iterdir()) or recognised(out):
            return None
    except OSError as error:
        return f"--out {out}: cannot be read: {error.strerror or error}"
    return f"--out {out}: exists, is not empty and is not {what} (it holds none of {marks}): choose another --out"
