"""The agent's tool clients as files, for the agent's image of an exported task.

TODO(h-hserve): replace this module with `arenac.broker.clients.write_tool_clients` (h-hserve,
merged into main after this branch forked; same signature, same file shape): import it in
arenac/export/task.py, delete this file and its SLEEP_SOURCE copy, and allow `arenac.broker.clients`
in pyproject.toml's export-reads-bundles-only contract (it imports arenac.broker.tools for the
names it checks). Until then this branch's client.py connects a `HOST:PORT` address
(`harness:7400`) to the empty host, so the exported clients reach the harness only with
h-hserve's client.py.

Contract: `write_tool_clients(directory, tools, address, token, *, interpreter, time_scale)` writes
one executable (mode 0755) per tool into `directory`: `#!INTERPRETER -I`, client.py's source, and
the one line that names the tool, the broker's `address` and the `token` (the shape of
`Broker.install_tools`); with `time_scale`, also the scaled `sleep`. The bytes depend on the
arguments and this arenac's client.py alone. Returns the paths written, in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from arenac.broker import client

DEFAULT_INTERPRETER = "/usr/local/bin/python3"  # a python image's: the exported agent container's

# the same program as arenac.broker.server.SLEEP_SOURCE (importing the server would bring the
# broker's whole toolbox into the exporter); the TODO above removes this copy
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


def write_tool_clients(directory: Path, tools: Sequence[str], address: str, token: str, *,
                       interpreter: str = DEFAULT_INTERPRETER, time_scale: float | None = None) -> list[Path]:
    source = Path(client.__file__).read_text(encoding="utf-8")
    files = [(tool, f"#!{interpreter} -I\n{source}\n\nif __name__ == '__main__':\n"
                    f"    sys.exit(main({tool!r}, {address!r}, {token!r}, sys.argv[1:]))\n") for tool in tools]
    if time_scale is not None:
        files.append(("sleep", f"#!{interpreter} -I\n{SLEEP_SOURCE.format(scale=float(time_scale))}"))
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in files:
        path = directory / name
        path.write_bytes(text.encode("utf-8"))
        path.chmod(0o755)
        written.append(path)
    return written
