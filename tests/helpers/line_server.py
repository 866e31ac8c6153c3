"""A stand-in for the harness pod's broker port in the runner's stream tests: a TCP server on
loopback speaking the broker's framing (one JSON request line in, one JSON answer out, then close),
answering every request with an echo and recording it (`seen`), or holding each connection open
unanswered (`hold`), as a long call would. Not the broker: no token check, no tools."""

from __future__ import annotations

import json
import socket
import threading


class LineServer:
    """A TCP server on loopback that answers each connection's first line with a JSON echo and
    closes (the broker's protocol: one request line, one answer), or holds it open (`hold`)."""

    def __init__(self, hold: bool = False) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.hold = hold
        self.seen: list[dict] = []
        self.held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        data = b""
        while not data.endswith(b"\n"):
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
        request = json.loads(data or b"{}")
        self.seen.append(request)
        if self.hold:
            self.held.append(conn)
            return
        conn.sendall(json.dumps({"code": 0, "stdout": f"{request.get('tool')} {' '.join(request.get('argv', []))}\n",
                                 "stderr": ""}).encode())
        conn.close()

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()
