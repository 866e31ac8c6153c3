"""The agent's tool clients as files: the one writer of the executables an agent finds on its PATH.

Contract:
- `write_tool_clients(directory, tools, address, token, *, interpreter=DEFAULT_INTERPRETER,
  time_scale=None) -> list[Path]` writes one executable per tool into `directory` (created if
  needed), each `#!INTERPRETER -I`, then client.py's source, then the one line that names the
  tool, the broker's `address` and the episode's `token`; with `time_scale`, also a `sleep` that
  multiplies its durations by it (the oracle's solve.sh waits in plan time). Returns the paths, in
  the order written (the tools as given, then `sleep`). Mode 0755.
- The bytes are a function of the arguments and of this arenac's client.py alone: no path of the
  machine that writes them unless given (`interpreter`, a unix `address`), no time, no randomness.
  So an exporter can bake them into an image (address `harness:7400`, the compose network's name
  of the harness container) and get the same files every time.
- `address`: `unix:PATH`, `tcp:HOST:PORT` or `HOST:PORT` (client.py's `call` speaks all three).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from arenac.broker import client
from arenac.model.plan import BROKERED_TOOLS as TOOLS

DEFAULT_INTERPRETER = "/usr/local/bin/python3"  # a python image's (the agent container of an export)

SLEEP_SOURCE = '''"""sleep DURATION...: coreutils sleep with every duration multiplied by the episode's time scale."""
import sys
import time

UNITS = {{"s": 1, "m": 60, "h": 3600, "d": 86400}}
total = 0.0
for word in sys.argv[1:]:
    unit = word[-1] if word[-1:] in UNITS else "s"
    total += float(word.rstrip("smhd")) * UNITS[unit]
time.sleep(total * {scale!r})
'''


def tool_client_bytes(tool: str, address: str, token: str, interpreter: str = DEFAULT_INTERPRETER) -> bytes:
    """One tool's client executable, as written."""
    source = Path(client.__file__).read_text(encoding="utf-8")
    return (f"#!{interpreter} -I\n{source}\n\nif __name__ == '__main__':\n"
            f"    sys.exit(main({tool!r}, {address!r}, {token!r}, sys.argv[1:]))\n").encode()


def scaled_sleep_bytes(time_scale: float, interpreter: str = DEFAULT_INTERPRETER) -> bytes:
    return f"#!{interpreter} -I\n{SLEEP_SOURCE.format(scale=float(time_scale))}".encode()


def write_tool_clients(directory: Path, tools: Sequence[str], address: str, token: str, *,
                       interpreter: str = DEFAULT_INTERPRETER, time_scale: float | None = None) -> list[Path]:
    """Write the clients of `tools` (and a scaled `sleep` when `time_scale` is given) into `directory`."""
    unknown = sorted(set(tools) - set(TOOLS))
    if unknown:
        raise ValueError(f"unknown tool(s) {', '.join(unknown)}; known: {', '.join(TOOLS)}")
    if not token or any(c.isspace() for c in token):
        raise ValueError("the broker token must be a non-empty word")
    if time_scale is not None and not time_scale > 0:
        raise ValueError(f"the time scale must be positive, not {time_scale!r}")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    files = [(tool, tool_client_bytes(tool, address, token, interpreter)) for tool in tools]
    if time_scale is not None:
        files.append(("sleep", scaled_sleep_bytes(time_scale, interpreter)))
    written = []
    for name, data in files:
        path = directory / name
        path.write_bytes(data)
        path.chmod(0o755)
        written.append(path)
    return written
