"""`write_tool_clients`: the one writer of the agent's tool clients (an export bakes them into its
agent image): deterministic bytes, no path of this machine, the scaled sleep, bad input refused;
and `Broker.install_tools` writes through it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from arenac.broker import Broker
from arenac.broker.clients import DEFAULT_INTERPRETER, write_tool_clients
from arenac.broker.cluster import LocalCluster
from arenac.broker.server import client_interpreter
from arenac.broker.tools import TOOLS, ToolBox
from arenac.lower.library import load_library
from arenac.substrate.spine.spec import SpineSpec
from arenac.substrate.spine.stack import SpineStack


def _tree(directory: Path) -> dict[str, tuple[bytes, int]]:
    return {path.name: (path.read_bytes(), path.stat().st_mode & 0o777) for path in sorted(directory.iterdir())}


def test_the_same_arguments_write_the_same_bytes_anywhere(tmp_path: Path) -> None:
    first = write_tool_clients(tmp_path / "a", TOOLS, "harness:7400", "s3cret", time_scale=0.1)
    second = write_tool_clients(tmp_path / "elsewhere" / "b", TOOLS, "harness:7400", "s3cret", time_scale=0.1)
    assert [p.name for p in first] == [*TOOLS, "sleep"] == [p.name for p in second]
    assert _tree(tmp_path / "a") == _tree(tmp_path / "elsewhere" / "b")
    for path in first:
        data = path.read_bytes()
        assert data.startswith(f"#!{DEFAULT_INTERPRETER} -I\n".encode())
        assert str(tmp_path).encode() not in data and os.getcwd().encode() not in data
        assert path.stat().st_mode & 0o777 == 0o755
    kubectl = (tmp_path / "a" / "kubectl").read_text()
    assert kubectl.endswith("sys.exit(main('kubectl', 'harness:7400', 's3cret', sys.argv[1:]))\n")
    assert "time.sleep(total * 0.1)" in (tmp_path / "a" / "sleep").read_text()


def test_without_a_time_scale_there_is_no_sleep_and_the_interpreter_is_the_one_given(tmp_path: Path) -> None:
    written = write_tool_clients(tmp_path, ("db-sql",), "tcp:10.0.0.2:7400", "t", interpreter="/opt/py/bin/python")
    assert [p.name for p in written] == ["db-sql"]
    assert written[0].read_bytes().startswith(b"#!/opt/py/bin/python -I\n")


@pytest.mark.parametrize(("tools", "token", "scale", "message"), [
    (("kubectl", "rm"), "t", None, "unknown tool(s) rm"),
    (("kubectl",), "", None, "non-empty word"),
    (("kubectl",), "a b", None, "non-empty word"),
    (("kubectl",), "t", 0.0, "must be positive"),
])
def test_bad_input_is_refused_before_anything_is_written(tmp_path: Path, tools: tuple[str, ...], token: str,
                                                        scale: float | None, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        write_tool_clients(tmp_path / "tools", tools, "harness:7400", token, time_scale=scale)
    assert not (tmp_path / "tools").exists()


def test_the_scaled_sleep_scales(tmp_path: Path) -> None:
    (sleep,) = write_tool_clients(tmp_path, (), "harness:7400", "t", interpreter=sys.executable, time_scale=0.01)
    done = subprocess.run([str(sleep), "1m"], capture_output=True, text=True, timeout=30)  # 0.6 real seconds
    assert done.returncode == 0, done.stderr


def test_a_client_names_a_bad_address_in_one_line(tmp_path: Path) -> None:
    (tool,) = write_tool_clients(tmp_path, ("time-left",), "harness", "t", interpreter=sys.executable)
    done = subprocess.run([str(tool)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 1
    assert done.stderr == ("time-left: bad broker address 'harness': use unix:PATH, tcp:HOST:PORT or "
                           "HOST:PORT\n")


def test_install_tools_writes_what_write_tool_clients_writes(tmp_path: Path) -> None:
    surface = load_library().substrates["spine"].access["confined"]
    toolbox = ToolBox(LocalCluster(SpineStack(tmp_path / "stack", SpineSpec())), surface, [], time_scale=0.5)
    broker = Broker(toolbox, tools=("kubectl", "time-left"))
    broker.start(parent=tmp_path)
    try:
        installed = broker.install_tools(tmp_path / "installed", scaled_sleep=True)
        direct = write_tool_clients(tmp_path / "direct", ("kubectl", "time-left"), broker.address, broker.token,
                                    interpreter=client_interpreter(), time_scale=0.5)
    finally:
        broker.stop()
    assert [p.name for p in installed] == [p.name for p in direct] == ["kubectl", "time-left", "sleep"]
    assert _tree(tmp_path / "installed") == _tree(tmp_path / "direct")
