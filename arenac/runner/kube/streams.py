"""The runner's streams into a trial's harness pod: a command run in it (exec), the agent's route to
its broker (a relay of a local unix socket to the pod's broker port), and the run fetched from it.

Contract:

- `PodExec` runs one command in the pod and returns its `ExecResult` (exit code, stdout, stderr as
  bytes) within `timeout_s`, or raises `KubeError` (the API refused, the stream broke, the bound
  passed). `KubePodExec` is the real one: the API server's exec subresource through the official
  client's websocket stream (`create pods/exec` with the runner's credentials, never the agent's
  or the harness's), kept thin: what it does beyond the client is read both channels until the
  stream closes or the bound passes.
- `BrokerRoutes.connect()` opens one connection to the pod's broker port and returns it as an
  `Upstream` (a socket to select on, a half-close, a close). `PortForwardRoutes` is the real one
  (the pods/portforward subresource, one websocket per connection, as the official client's
  `portforward` serves one connection per port); `TcpRoutes` reaches a `host:port` directly (a
  runner inside the cluster reaching the `arenac-broker` Service; the tests' loopback broker).
- `UnixRelay.start(path, routes)` listens on a unix socket at `path` (mode 0666 in a directory the
  caller makes reachable to the agent only: the sandbox binds it) and relays every connection
  accepted to a fresh upstream, bytes both ways, a half-close passed on, until both sides are done.
  `address` is `unix:PATH` (what broker/clients.py writes into the tool clients). `close()` stops
  accepting and ends every relayed connection (the freeze); it is idempotent. A connection whose
  upstream cannot be opened is closed at once and counted (`failures`): the tool client then says
  "the broker closed the connection without an answer".
- `archive_argv(directory)` is the command that writes `directory`'s tree to stdout as a base64
  tar.gz (Python's own `tarfile`, run by the pod's `python3`: no tar binary assumed), and
  `unpack_archive(stdout, destination)` unpacks it, refusing any member that is not a plain file
  or directory inside `destination` (an absolute path, `..`, a link, a device). Returns the paths
  unpacked, relative, sorted.
"""

from __future__ import annotations

import base64
import binascii
import io
import os
import selectors
import socket
import tarfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Protocol

from arenac.runner.kube.api import KubeError, describe, k8s

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

CHUNK = 64 * 1024
ACCEPT_POLL_S = 0.2  # how often the listener notices close() (its socket is non-blocking under a selector)


@dataclass(frozen=True)
class ExecResult:
    code: int
    stdout: bytes = field(repr=False)
    stderr: bytes

    def line(self) -> str:
        """The command's last line of stderr (what a harness command says when it refuses), for a message."""
        lines = self.stderr.decode("utf-8", "replace").strip().splitlines()
        return lines[-1] if lines else f"exit code {self.code}"


class PodExec(Protocol):
    def run(self, argv: Sequence[str], timeout_s: float) -> ExecResult: ...


class Upstream(Protocol):
    def fileno(self) -> int: ...
    def recv(self, size: int) -> bytes: ...
    def sendall(self, data: bytes) -> None: ...
    def shutdown_write(self) -> None: ...
    def close(self) -> None: ...


class BrokerRoutes(Protocol):
    def connect(self) -> Upstream: ...


# ---- exec -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class KubePodExec:
    api: ApiClient
    namespace: str
    pod: str
    container: str

    def run(self, argv: Sequence[str], timeout_s: float) -> ExecResult:
        from kubernetes.stream import stream  # imported here: heavy, and only a trial on a cluster needs it

        what = f"exec in pod {self.namespace}/{self.pod}"
        try:
            response = stream(k8s().CoreV1Api(self.api).connect_get_namespaced_pod_exec, self.pod, self.namespace,
                              command=list(argv), container=self.container, stdin=False, stdout=True, stderr=True,
                              tty=False, binary=True, _preload_content=False)
        except Exception as error:
            raise KubeError(f"cannot {what}: {describe(error)}") from error
        out, err = bytearray(), bytearray()
        deadline = time.monotonic() + timeout_s
        try:
            while response.is_open():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise KubeError(f"{what}: {argv[0]} did not end within {timeout_s:g} s")
                response.update(timeout=min(1.0, left))
                out += _bytes(response.read_stdout(timeout=0)) if response.peek_stdout() else b""
                err += _bytes(response.read_stderr(timeout=0)) if response.peek_stderr() else b""
            # what arrived with the close (or before a stream that closed at once was first read)
            out += _bytes(response.read_stdout(timeout=0)) if response.peek_stdout() else b""
            err += _bytes(response.read_stderr(timeout=0)) if response.peek_stderr() else b""
            code = response.returncode
        except KubeError:
            raise
        except Exception as error:
            raise KubeError(f"{what}: the stream broke: {describe(error)}") from error
        finally:
            response.close()
        return ExecResult(int(code) if code is not None else -1, bytes(out), bytes(err))


def _bytes(data: Any) -> bytes:
    return data if isinstance(data, bytes) else str(data).encode("utf-8")


# ---- routes to the broker -------------------------------------------------------------------------
@dataclass(eq=False)  # identity: the relay keeps its live ends in a set
class SocketUpstream:
    """An upstream that is a socket of our own (TCP): a half-close is a shutdown of its writing side."""

    sock: socket.socket

    def fileno(self) -> int:
        return self.sock.fileno()

    def recv(self, size: int) -> bytes:
        return self.sock.recv(size)

    def sendall(self, data: bytes) -> None:
        self.sock.sendall(data)

    def shutdown_write(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def close(self) -> None:
        self.sock.close()


@dataclass(frozen=True)
class TcpRoutes:
    host: str
    port: int
    timeout_s: float = 10.0

    def connect(self) -> Upstream:
        try:
            return SocketUpstream(socket.create_connection((self.host, self.port), timeout=self.timeout_s))
        except OSError as error:
            raise KubeError(f"cannot reach the broker at {self.host}:{self.port}: {error.strerror or error}") from error


@dataclass(eq=False)
class PortForwardUpstream:
    """One port-forwarded connection: the client's socket end of the forward, and the forward itself."""

    forward: Any  # kubernetes.stream.ws_client.PortForward
    sock: Any  # its socket for the port (one end of a socketpair the client's proxy thread pumps)

    def fileno(self) -> int:
        return int(self.sock.fileno())

    def recv(self, size: int) -> bytes:
        return bytes(self.sock.recv(size))

    def sendall(self, data: bytes) -> None:
        self.sock.sendall(data)

    def shutdown_write(self) -> None:
        # deliberately nothing: the client's proxy reads a half-close as the port closed and ends the
        # whole forward, answer included; the broker answers one request line and closes, so the
        # relay need not pass the client's half-close on to it
        pass

    def close(self) -> None:
        try:
            self.sock.close()
        finally:
            self.forward.close()


@dataclass(frozen=True)
class PortForwardRoutes:
    api: ApiClient
    namespace: str
    pod: str
    port: int

    def connect(self) -> Upstream:
        from kubernetes.stream import portforward  # imported here, as in KubePodExec

        try:
            forward = portforward(k8s().CoreV1Api(self.api).connect_get_namespaced_pod_portforward, self.pod,
                                  self.namespace, ports=str(self.port))
            return PortForwardUpstream(forward, forward.socket(self.port))
        except Exception as error:
            raise KubeError(f"cannot port-forward to {self.namespace}/{self.pod}:{self.port}: "
                            f"{describe(error)}") from error


# ---- the relay ------------------------------------------------------------------------------------
class UnixRelay:
    """A unix socket whose every connection is relayed to a fresh upstream (see the module's contract)."""

    def __init__(self, path: Path, routes: BrokerRoutes) -> None:
        self.path, self.routes = path, routes
        self.connections = 0
        self.failures = 0
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._open: set[Any] = set()  # every socket and upstream of a live connection, for close()
        self._threads: list[threading.Thread] = []
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)

    @classmethod
    def start(cls, path: Path, routes: BrokerRoutes) -> UnixRelay:
        relay = cls(path, routes)
        path.unlink(missing_ok=True)
        relay._listener.bind(str(path))
        os.chmod(path, 0o666)  # the agent's user connects; the directory around it is what confines
        relay._listener.listen(16)
        relay._listener.setblocking(False)
        thread = threading.Thread(target=relay._accept, name="arenac-broker-relay", daemon=True)
        relay._threads.append(thread)
        thread.start()
        return relay

    @property
    def address(self) -> str:
        return f"unix:{self.path}"

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        with self._lock:
            live = list(self._open)
            self._open.clear()
        for end in live:
            _quietly_close(end)
        for thread in list(self._threads):
            thread.join(timeout=5)
        self._listener.close()
        self.path.unlink(missing_ok=True)

    def _accept(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._listener, selectors.EVENT_READ)
            while not self._closed.is_set():
                if not selector.select(ACCEPT_POLL_S):
                    continue
                try:
                    client, _ = self._listener.accept()
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    return  # closed under us
                client.setblocking(True)
                thread = threading.Thread(target=self._serve, args=(client,), name="arenac-broker-relay-conn",
                                          daemon=True)
                self._threads.append(thread)
                thread.start()

    def _serve(self, client: socket.socket) -> None:
        with self._lock:
            self.connections += 1
            if self._closed.is_set():
                client.close()
                return
            self._open.add(client)
        try:
            upstream = self.routes.connect()
        except (KubeError, OSError):
            with self._lock:
                self.failures += 1
                self._open.discard(client)
            _drain(client)  # closed with its request unread, the client would see a reset, not an end
            client.close()
            return
        with self._lock:
            if self._closed.is_set():
                upstream.close()
                client.close()
                return
            self._open.add(upstream)
        try:
            _pump(client, upstream, self._closed)
        finally:
            with self._lock:
                self._open.discard(client)
                self._open.discard(upstream)
            _quietly_close(client)
            _quietly_close(upstream)


def _pump(client: socket.socket, upstream: Upstream, closed: threading.Event) -> None:
    """Bytes both ways until both directions ended (EOF read on each side), either side broke, or
    the relay closed (an epoll set forgets a descriptor closed under it: the flag is what ends it)."""
    reading = {"client": True, "upstream": True}
    with selectors.DefaultSelector() as selector:
        selector.register(client, selectors.EVENT_READ, "client")
        selector.register(upstream.fileno(), selectors.EVENT_READ, "upstream")
        while any(reading.values()) and not closed.is_set():
            try:
                ready = selector.select(timeout=0.2)
            except (OSError, ValueError):  # an end closed under us (the relay's close): done
                return
            for key, _ in ready:
                side = key.data
                try:
                    data = client.recv(CHUNK) if side == "client" else upstream.recv(CHUNK)
                    if data:
                        (upstream.sendall if side == "client" else client.sendall)(data)
                        continue
                except OSError:
                    return
                reading[side] = False
                selector.unregister(key.fileobj)
                if side == "client":
                    upstream.shutdown_write()
                else:
                    try:
                        client.shutdown(socket.SHUT_WR)
                    except OSError:
                        return


def _drain(client: socket.socket, timeout_s: float = 1.0) -> None:
    """Read what the client sent (its one request line), briefly, so that closing ends it cleanly."""
    client.settimeout(timeout_s)
    try:
        while True:
            chunk = client.recv(CHUNK)
            if not chunk or chunk.endswith(b"\n"):
                return
    except OSError:
        return


def _quietly_close(end: Any) -> None:
    try:
        if isinstance(end, socket.socket):
            try:
                end.shutdown(socket.SHUT_RDWR)  # wakes a pump blocked in select on it
            except OSError:
                pass
        end.close()
    except OSError:
        pass


# ---- fetching a directory -------------------------------------------------------------------------
_ARCHIVE_SCRIPT = (
    "import base64,io,sys,tarfile\n"
    "buffer=io.BytesIO()\n"
    "with tarfile.open(fileobj=buffer,mode='w:gz',format=tarfile.PAX_FORMAT) as archive:\n"
    "    archive.add(sys.argv[1],arcname='.')\n"
    "sys.stdout.write(base64.b64encode(buffer.getvalue()).decode('ascii'))\n"
)


def archive_argv(directory: str) -> list[str]:
    return ["python3", "-c", _ARCHIVE_SCRIPT, directory]


def unpack_archive(stdout: bytes, destination: Path) -> list[str]:
    try:
        data = base64.b64decode(stdout.strip(), validate=True)
        archive = tarfile.open(fileobj=io.BytesIO(data), mode="r:gz")  # noqa: SIM115 - closed by the `with` below
    except (binascii.Error, tarfile.TarError, OSError) as error:
        raise KubeError(f"the run fetched from the pod is not an archive: {error}") from error
    unpacked = []
    with archive:
        for member in archive.getmembers():
            relative = PurePosixPath(member.name)
            parts = [p for p in relative.parts if p != "."]
            if relative.is_absolute() or ".." in parts:
                raise KubeError(f"the run fetched from the pod holds {member.name!r}, outside its directory")
            if not (member.isfile() or member.isdir()):
                raise KubeError(f"the run fetched from the pod holds {member.name!r}, not a file or directory")
            if not parts:
                continue
            target = destination.joinpath(*parts)
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            source = archive.extractfile(member)
            assert source is not None  # a regular file's member
            target.write_bytes(source.read())
            unpacked.append("/".join(parts))
    return sorted(unpacked)
