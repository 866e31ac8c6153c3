"""The broker: serves the agent's tools from the runner's process, one episode at a time.

Contract:
- `Broker(toolbox, tools=..., on_action=..., clock=...)`; `start(parent=None)` listens on a Unix
  socket in a fresh private directory, created in `parent` when given (the socket itself is
  world-connectable so that an unprivileged agent user can reach it; the per-episode secret `token`
  is what authenticates) and serves each connection in a thread; `stop()` closes it and removes the
  directory. Idempotent. `listen_tcp(host, port)` listens on TCP as well (an external agent in
  another container: the same protocol, the same token); `close()` ends the agent's window: calls
  in flight have their connections shut down, later ones are refused (and not recorded), the Unix
  socket goes and a TCP listener answers only that refusal until `stop()`.
- A request is one JSON line `{"token", "tool", "argv", "stdin" (base64 | null), "edit"}`; the
  answer one JSON line `{"code", "stdout", "stderr", "edit"}`. A wrong token or a tool the
  episode does not grant is refused.
- Every call, allowed or denied, is reported to `on_action` as the actions.jsonl record
  `{"t", "tool", "argv", "allowed", "reason"}` (t from `clock`: plan seconds; default seconds since
  start); so is each admin call (`exec:admin-api`) and Redis command (`exec:redis`) that a
  `kubectl exec` makes, `reason` naming the pod. `ActionLog(path, clock)` is such a callback: it
  appends the records to a file.
- `install_tools(dir)` writes the client executables (clients.py's `write_tool_clients`, the one
  writer: see client.py) for the granted tools, and optionally a `sleep` that scales its argument by
  the time scale (for the oracle's solve.sh).
  `socket_as_seen` is the socket's path as the agent sees it (a sandbox mounts the socket's
  directory elsewhere); by default the real one.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import os
import secrets
import shutil
import socket
import socketserver
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

from arenac.broker.clients import write_tool_clients
from arenac.broker.outcome import ToolResult
from arenac.broker.tools import TOOLS, ToolBox

ActionCallback = Callable[[dict[str, Any]], None]
MAX_REQUEST = 64 * 1024 * 1024


class ActionLog:
    """An `on_action` callback that appends records to actions.jsonl (sorted keys), thread-safe."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def __call__(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, sort_keys=True) + "\n"
        with self._lock, open(self.path, "a", encoding="utf-8") as handle:
            handle.write(line)


class _Quiet:
    broker: Broker

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a client gone mid-call (the freeze killed it, or it gave up) is no error of the harness and
        # prints nothing on the runner's console; anything else is a bug, reported as socketserver does
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError) or (isinstance(error, OSError) and self.broker.closed):
            return
        socketserver.BaseServer.handle_error(cast(socketserver.BaseServer, self), request, client_address)


class _Server(_Quiet, socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class _TcpServer(_Quiet, socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True  # a harness restarted in its container listens again at once


class _Handler(socketserver.StreamRequestHandler):
    def setup(self) -> None:
        super().setup()
        cast(_Server, self.server).broker._connected(self.request, True)

    def finish(self) -> None:
        cast(_Server, self.server).broker._connected(self.request, False)
        try:
            super().finish()
        except OSError:
            pass  # the connection was shut down at the close

    def handle(self) -> None:
        line = self.rfile.readline(MAX_REQUEST + 1)
        server = cast(_Server, self.server)  # typeshed knows it only as a BaseServer
        answer = server.broker.answer(line)
        try:
            self.wfile.write(json.dumps(answer).encode() + b"\n")
        except OSError:
            pass  # the client is gone (the freeze killed it mid-call, or the close ended it); the call was logged


class Broker:
    def __init__(self, toolbox: ToolBox, *, tools: Sequence[str] = TOOLS, on_action: ActionCallback | None = None,
                 clock: Callable[[], float] | None = None, token: str | None = None) -> None:
        unknown = sorted(set(tools) - set(TOOLS))
        if unknown:
            raise ValueError(f"unknown tool(s) {', '.join(unknown)}; known: {', '.join(TOOLS)}")
        self.toolbox = toolbox
        self.tools = tuple(tools)
        self.on_action = on_action
        self.token = token or secrets.token_urlsafe(32)
        self._started = time.monotonic()
        self.clock = clock or (lambda: time.monotonic() - self._started)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._dir: Path | None = None
        self._tcp: _TcpServer | None = None
        self._tcp_thread: threading.Thread | None = None
        self._closed = threading.Event()  # close(): the agent's window is over
        self._connections: set[Any] = set()
        self._connections_lock = threading.Lock()
        set_audit = getattr(toolbox, "set_audit", None)
        if set_audit is not None:
            set_audit(self._audit)

    @property
    def declared(self) -> threading.Event:
        """Set when the agent runs declare_repair_complete (as well as the `on_declare` callback)."""
        return self.toolbox.declared

    @property
    def address(self) -> str:
        if self._dir is None:
            raise RuntimeError("the broker is not running")
        return f"unix:{self._dir / 'broker.sock'}"

    def start(self, parent: Path | None = None) -> str:
        """Listen; returns the address. `parent`: the directory to create the socket's directory in
        (the runner gives its episode's scratch directory, so whatever reaps that directory after a
        runner that died, SIGKILL included, reaps the socket too); the system's temporary directory
        by default."""
        if self._server is not None:
            return self.address
        self._dir = Path(tempfile.mkdtemp(prefix="arenac-broker-", dir=parent))
        self._dir.chmod(0o711)  # others may reach the socket by name, not list the directory
        path = self._dir / "broker.sock"
        self._server = _Server(str(path), _Handler)
        self._server.broker = self
        path.chmod(0o666)
        self._thread = threading.Thread(target=self._server.serve_forever, name="arenac-broker", daemon=True)
        self._thread.start()
        return self.address

    def listen_tcp(self, host: str, port: int) -> str:
        """Also listen on TCP at HOST:PORT (0: any free port); returns the address `tcp:HOST:PORT`
        (the port bound). The token is the one authentication: give it to no one but the agent."""
        if self._tcp is None:
            self._tcp = _TcpServer((host, port), _Handler)
            self._tcp.broker = self
            self._tcp_thread = threading.Thread(target=self._tcp.serve_forever, name="arenac-broker-tcp",
                                                daemon=True)
            self._tcp_thread.start()
        return self.tcp_address

    @property
    def tcp_address(self) -> str:
        if self._tcp is None:
            raise RuntimeError("the broker does not listen on TCP")
        host, port = self._tcp.server_address[:2]
        return f"tcp:{host!s}:{port}"

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def close(self) -> None:
        """The agent's window is over: every later call is refused (and not recorded: the agent's
        record ends here), the connections of calls in flight are shut down, the Unix socket goes.
        A TCP listener stays, answering the refusal, until `stop()`: an agent that outlives its
        window (an external one) reads why, rather than a refused connection. Idempotent."""
        self._closed.set()
        self._stop_unix()
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already gone

    def _connected(self, connection: Any, opened: bool) -> None:
        with self._connections_lock:
            if opened:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def stop(self) -> None:
        self._stop_unix()
        _shut(self._tcp, self._tcp_thread)
        self._tcp = self._tcp_thread = None

    def _stop_unix(self) -> None:
        _shut(self._server, self._thread)
        self._server = self._thread = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> Broker:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    # -- requests ----------------------------------------------------------------------------
    def answer(self, line: bytes) -> dict[str, Any]:
        try:
            request = json.loads(line) if len(line) <= MAX_REQUEST else None
        except ValueError:
            request = None
        if self.closed:  # nothing of the agent's is read, decided or recorded any more
            return ToolResult(1, "", "error: the agent's window is closed: no further actions\n", False).to_wire()
        if not isinstance(request, dict) or not isinstance(request.get("argv"), list):
            return ToolResult(1, "", "error: malformed request\n").to_wire()
        tool = str(request.get("tool"))
        argv = [str(word) for word in request["argv"]]
        if not hmac.compare_digest(str(request.get("token", "")), self.token):
            return self._record(tool, argv, ToolResult(1, "", "error: You must be logged in to the server "
                                                       "(Unauthorized)\n", False, "bad broker token")).to_wire()
        try:
            stdin = base64.b64decode(request["stdin"]) if request.get("stdin") is not None else None
        except (binascii.Error, TypeError):
            return ToolResult(1, "", "error: malformed stdin\n").to_wire()
        edit = request.get("edit")
        return self.call(tool, argv, stdin, edit if isinstance(edit, str) else None).to_wire()

    def call(self, tool: str, argv: Sequence[str], stdin: bytes | None = None, edit: str | None = None) -> ToolResult:
        """One tool call, decided and logged (the socket's path, and the runner's or a test's in-process one).
        Once the repair is declared nothing more is done: the freeze follows, and a call that races
        it (a detached process, a call already in flight) must not land after the declaration.
        After `close()` nothing is done or recorded."""
        if self.closed:
            return ToolResult(1, "", f"{tool}: the agent's window is closed; no further actions\n", False,
                              "after the freeze")
        if self.toolbox.declared.is_set() and tool != "declare_repair_complete":
            result = ToolResult(1, "", f"{tool}: the repair was declared complete; no further actions\n", False,
                                "after the declaration")
            return self._record(tool, list(argv), result)
        if tool not in self.tools:
            result = ToolResult(127, "", f"{tool}: this tool is not available in this episode\n", False,
                                "tool not granted")
            return self._record(tool, list(argv), result)
        try:
            result = self.toolbox.call(tool, argv, stdin, edit)
        except Exception as exc:  # an infrastructure failure must not kill the broker
            result = ToolResult(1, "", f"error: internal broker failure: {exc}\n", True, f"broker error: {exc}")
        return self._record(tool, list(argv), result)

    def _audit(self, tool: str, argv: list[str], allowed: bool, reason: str) -> None:
        self._record(tool, list(argv), ToolResult(0 if allowed else 1, "", "", allowed, reason))

    def _record(self, tool: str, argv: list[str], result: ToolResult) -> ToolResult:
        if self.on_action is not None:
            self.on_action({"t": round(self.clock(), 3), "tool": tool, "argv": argv,
                            "allowed": result.allowed, "reason": result.reason})
        return result

    # -- the agent's side --------------------------------------------------------------------
    @property
    def socket_dir(self) -> Path:
        if self._dir is None:
            raise RuntimeError("the broker is not running")
        return self._dir

    def install_tools(self, directory: Path, tools: Sequence[str] | None = None,
                      scaled_sleep: bool = False, socket_as_seen: str | None = None) -> list[Path]:
        """Write the client executables into `directory` (created if needed); returns their paths."""
        address = f"unix:{socket_as_seen}" if socket_as_seen else self.address
        return write_tool_clients(directory, tools or self.tools, address, self.token,
                                  interpreter=client_interpreter(),
                                  time_scale=self.toolbox.time_scale if scaled_sleep else None)


def _shut(server: socketserver.BaseServer | None, thread: threading.Thread | None) -> None:
    """Stop a listener and its serving thread (either may be missing)."""
    if server is not None:
        server.shutdown()
        server.server_close()
    if thread is not None:
        thread.join(timeout=5)


def client_interpreter() -> str:
    """A Python the agent's (unprivileged) user can run, inside its sandbox too (which shows /usr,
    never a home directory): the clients use the standard library only, and the runner's own
    interpreter may live under a home directory others cannot enter."""
    system = shutil.which("python3", path="/usr/bin:/bin:/usr/local/bin")
    if system and os.access(system, os.X_OK) and os.stat(os.path.realpath(system)).st_mode & 0o001:
        return system
    return os.path.realpath(sys.executable)

