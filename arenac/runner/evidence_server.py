"""A read-only HTTP view of a run directory, from which the runner fetches a cluster episode's
evidence (`arenac harness serve-evidence`).

Contract: `make_server(root, host, port)` serves the files under `root` and nothing else:
- `GET /PATH` (or `HEAD`) answers a regular file's bytes (200; JSON files as application/json,
  `*.jsonl` as application/x-ndjson, the rest application/octet-stream), and a directory's listing
  as JSON: `{"path": "evidence", "entries": [{"name", "type": "file" | "dir", "size"}]}` sorted by
  name (a file written atomically is seen whole or not at all);
- a path that leaves `root` (`..`, or a symbolic link pointing out), or that names nothing, is 404;
  every other method is 405: nothing is ever written, deleted or executed;
- `server.url` is where it listens (port 0 picks a free port).
The harness namespace's NetworkPolicy admits only its own pods; the runner reaches the server
through the API server (a port-forward), with its own credentials.
"""

from __future__ import annotations

import json
import posixpath
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

_TYPES = {".json": "application/json", ".jsonl": "application/x-ndjson"}


class EvidenceServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, root: Path, host: str, port: int) -> None:
        self.root = root.resolve()
        super().__init__((host, port), _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host if isinstance(host, str) else host.decode()}:{port}"

    def resolve(self, request_path: str) -> Path | None:
        """The file or directory under the root a request names, or None."""
        relative = posixpath.normpath("/" + unquote(urlsplit(request_path).path)).lstrip("/")
        if relative in ("", "."):
            return self.root
        if "\x00" in relative:
            return None
        target = (self.root / relative).resolve()
        if not target.is_relative_to(self.root) or not target.exists():
            return None
        return target


def make_server(root: Path, host: str = "0.0.0.0", port: int = 8080) -> EvidenceServer:
    return EvidenceServer(root, host, port)


class _Handler(BaseHTTPRequestHandler):
    server: EvidenceServer
    server_version = "arenac-evidence/1"

    def do_GET(self) -> None:
        self._answer(with_body=True)

    def do_HEAD(self) -> None:
        self._answer(with_body=False)

    def _refuse(self) -> None:
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, b'{"error": "read-only"}\n', "application/json", True,
                   allow="GET, HEAD")

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse

    def _answer(self, with_body: bool) -> None:
        target = self.server.resolve(self.path)
        if target is None:
            self._send(HTTPStatus.NOT_FOUND, b'{"error": "not found"}\n', "application/json", with_body)
            return
        if target.is_dir():
            entries = []
            for entry in sorted(target.iterdir(), key=lambda p: p.name):
                real = entry.resolve()
                if not real.is_relative_to(self.server.root) or not real.exists():
                    continue  # a link out of the run directory is not shown either
                is_dir = real.is_dir()
                entries.append({"name": entry.name, "type": "dir" if is_dir else "file",
                                "size": 0 if is_dir else real.stat().st_size})
            shown = target.relative_to(self.server.root).as_posix()
            body = (json.dumps({"path": "" if shown == "." else shown, "entries": entries}, sort_keys=True)
                    + "\n").encode()
            self._send(HTTPStatus.OK, body, "application/json", with_body)
            return
        try:
            body = target.read_bytes()
        except OSError:
            self._send(HTTPStatus.NOT_FOUND, b'{"error": "not found"}\n', "application/json", with_body)
            return
        self._send(HTTPStatus.OK, body, _TYPES.get(target.suffix, "application/octet-stream"), with_body)

    def _send(self, status: HTTPStatus, body: bytes, content_type: str, with_body: bool, **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.title(), value)
        self.end_headers()
        if with_body:
            self.wfile.write(body)
