"""RedisGate: the agent's Redis, one exec at a time, through a command filter in the broker.

Contract:
- `RedisGate(upstream_port, user, password, socket_path, audit=...)` listens on a Unix socket
  (`socket_path`, in the exec's private scratch directory) for the duration of one `kubectl exec`
  into the redis pod; each client connection gets its own upstream connection, authenticated as
  the Redis ACL user `agent`. The agent never learns that user's password (it stays in the
  broker), so the gate is the only way in, and every command passes `check` first.
- `check(words)` returns "" or why the command is refused. Refused, whatever Redis' ACLs say
  (an `ACL SETUSER` could widen those): MODULE, DEBUG, SHUTDOWN, MONITOR, replication and
  cluster commands, (P|S)SUBSCRIBE, AUTH and HELLO ... AUTH (no switching users), scripts (EVAL,
  FUNCTION: their calls would not pass the gate); CONFIG other
  than GET and SET of `CONFIG_SETTABLE` (so no `CONFIG SET dir`, no REWRITE); ACL other than the
  read-outs and SETUSER of `acl_users` (the substrate's application users: its driver's
  `redis_acl_users`) with rules that neither set a password nor switch
  one off (no `>pw`, `#hash`, `nopass`, `resetpass`, `reset`). A refused command gets a
  `-NOPERM` error reply and reaches no server; the connection stays usable.
- `audit(words, allowed, reason)` is called for every command (the broker logs it).
- Requests are RESP arrays of bulk strings (what redis-cli sends) or inline commands; replies are
  relayed whole, one per request (RESP2 and RESP3 types).
- `close()` ends the listener and every connection; idempotent.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

CONFIG_SETTABLE = frozenset({"maxmemory", "maxmemory-policy", "maxmemory-samples"})
ACL_READ = frozenset({"LIST", "GETUSER", "USERS", "WHOAMI", "CAT", "LOG", "HELP", "GENPASS"})
DENIED = frozenset({"MODULE", "DEBUG", "SHUTDOWN", "MONITOR", "SYNC", "PSYNC", "REPLICAOF", "SLAVEOF",
                    "FAILOVER", "CLUSTER", "MIGRATE", "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "AUTH",
                    "RESET", "BGSAVE", "SAVE", "BGREWRITEAOF", "LASTSAVE", "SWAPDB",
                    # scripts run their redis.call()s past this gate, with the user's ACLs only
                    "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "SCRIPT", "FUNCTION", "FCALL", "FCALL_RO"})
PASSWORD_RULES = ("nopass", "resetpass", "reset")
Audit = Callable[[list[str], bool, str], None]


def check(words: Sequence[str], acl_users: frozenset[str] = frozenset()) -> str:
    """"" if the agent may send this command, else why not (`acl_users`: the ACL users it may
    change, the substrate's application users)."""
    if not words:
        return "empty command"
    name = words[0].upper()
    sub = words[1].upper() if len(words) > 1 else ""
    if name in DENIED:
        return f"{name} is not available to the agent"
    if name == "HELLO" and any(word.upper() == "AUTH" for word in words[1:]):
        return "HELLO ... AUTH is not available to the agent (no switching users)"
    if name == "CONFIG":
        if sub == "GET":
            return ""
        if sub == "SET":
            keys = [words[i].lower() for i in range(2, len(words), 2)]
            bad = [key for key in keys if key not in CONFIG_SETTABLE]
            if bad or not keys:
                return (f"CONFIG SET {' '.join(bad) or '(nothing)'} is not available to the agent "
                        f"(settable: {', '.join(sorted(CONFIG_SETTABLE))})")
            return ""
        return f"CONFIG {sub} is not available to the agent"
    if name == "ACL":
        if sub in ACL_READ:
            return ""
        if sub == "SETUSER":
            target = words[2] if len(words) > 2 else ""
            if target not in acl_users:
                return f"ACL SETUSER {target} is not available to the agent (users: {', '.join(sorted(acl_users))})"
            for rule in words[3:]:
                if rule[:1] in (">", "<", "#", "!") or rule.lower() in PASSWORD_RULES:
                    return "ACL SETUSER rules that set or drop a password are not available to the agent"
            return ""
        return f"ACL {sub} is not available to the agent"
    return ""


class _Reader:
    """Buffered reads off a socket: lines and exact byte counts."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError
        self.buf += chunk

    def line(self) -> bytes:
        while b"\r\n" not in self.buf:
            if b"\n" in self.buf:  # an inline command typed with bare newlines (nc)
                head, _, self.buf = self.buf.partition(b"\n")
                return head + b"\r\n"
            self._fill()
        head, _, self.buf = self.buf.partition(b"\r\n")
        return head + b"\r\n"

    def exact(self, count: int) -> bytes:
        while len(self.buf) < count:
            self._fill()
        out, self.buf = self.buf[:count], self.buf[count:]
        return out


def read_command(reader: _Reader) -> list[bytes]:
    line = reader.line()
    if not line.startswith(b"*"):
        return line.strip().split()
    words = []
    for _ in range(int(line[1:-2] or 0)):
        header = reader.line()
        if not header.startswith(b"$"):
            raise ValueError("expected a bulk string")
        size = int(header[1:-2])
        words.append(reader.exact(size + 2)[:-2])
    return words


def read_reply(reader: _Reader) -> bytes:
    """One whole reply, raw."""
    line = reader.line()
    kind = line[:1]
    if kind in (b"$", b"=", b"!"):
        size = int(line[1:-2])
        return line if size < 0 else line + reader.exact(size + 2)
    if kind in (b"*", b"~", b">", b"%", b"|"):
        count = int(line[1:-2])
        if count < 0:
            return line
        items = count * 2 if kind in (b"%", b"|") else count
        return line + b"".join(read_reply(reader) for _ in range(items))
    return line  # + - : _ , # (


def encode(words: Sequence[bytes]) -> bytes:
    return b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%s\r\n" % (len(w), w) for w in words)


class RedisGate:
    def __init__(self, upstream_port: int, user: str, password: str, socket_path: Path,
                 audit: Audit | None = None, owner: tuple[int, int] | None = None,
                 acl_users: frozenset[str] = frozenset()) -> None:
        self.upstream = ("127.0.0.1", upstream_port)
        self.user, self.password = user, password
        self.acl_users = acl_users
        self.path = Path(socket_path)
        self.audit = audit
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(self.path))
        if owner is not None:
            os.chown(self.path, *owner)
        self.path.chmod(0o600)
        self._listener.listen(16)
        self._open: list[socket.socket] = [self._listener]
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, name="arenac-redis-gate", daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self._open.append(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream = None
        try:
            upstream = socket.create_connection(self.upstream, timeout=10)
            upstream.settimeout(None)
            with self._lock:
                self._open.append(upstream)
            up = _Reader(upstream)
            upstream.sendall(encode([b"AUTH", self.user.encode(), self.password.encode()]))
            if not read_reply(up).startswith(b"+"):
                client.sendall(b"-ERR the agent's Redis user cannot log in\r\n")
                return
            down = _Reader(client)
            while True:
                words = read_command(down)
                if not words:
                    continue
                text = [w.decode(errors="replace") for w in words]
                reason = check(text, self.acl_users)
                if self.audit is not None:
                    self.audit(text, not reason, reason or "forwarded")
                if reason:
                    client.sendall(f"-NOPERM {reason}\r\n".encode())
                    continue
                upstream.sendall(encode(words))
                client.sendall(read_reply(up))
        except (EOFError, OSError, ValueError):
            pass
        finally:
            for sock in (client, upstream):
                if sock is not None:
                    sock.close()

    def close(self) -> None:
        self._closed = True
        with self._lock:
            for sock in self._open:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()
            self._open.clear()
        try:
            self.path.unlink()
        except OSError:
            pass
