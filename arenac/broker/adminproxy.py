"""AdminProxy: a service's own port as a process "in its pod" sees it, with the admin credential
added by the broker.

Contract:
- `AdminProxy(upstream, token, audit=...)` listens on a free loopback port for the duration of one
  `kubectl exec` into a service pod; podexec rewrites the pod's own address (`127.0.0.1:8080`,
  `localhost:8080`, `spine-<service>:8080`) to it. Each request is forwarded to the service
  (`upstream`, its real base URL) with the method, path, query, body and content type it came
  with; `/admin/*` requests get `Authorization: Bearer <token>` (any Authorization the client sent
  is dropped there), so a shell in the pod can use the service's admin API as the service's own
  operator could, without ever seeing the credential. Other paths go through unchanged.
- Every `/admin/*` request is reported to `audit(method, path, status)` (the broker logs it).
- `close()` stops it; idempotent.
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-authorization",
              "proxy-connection", "host", "content-length"}
MAX_BODY = 16 * 1024 * 1024
Audit = Callable[[str, str, int], None]


class AdminProxy:
    def __init__(self, upstream: str, token: str, audit: Audit | None = None) -> None:
        parts = urlsplit(upstream)
        target = (parts.hostname or "127.0.0.1", parts.port or 80)
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_: object) -> None:  # no stderr chatter in the broker
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(min(length, MAX_BODY)) if length else None
                path = self.path if self.path.startswith("/") else urlsplit(self.path).path or "/"
                bare = path.split("?", 1)[0]
                admin = bare == "/admin" or bare.startswith("/admin/")
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                if admin:
                    headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
                    headers["Authorization"] = f"Bearer {token}"
                status, reply, reply_headers = 502, b'{"error": "bad_gateway", "message": "service unreachable"}', []
                try:
                    connection = http.client.HTTPConnection(*target, timeout=60)
                    try:
                        connection.request(self.command, path, body=body, headers=headers)
                        response = connection.getresponse()
                        status, reply = response.status, response.read()
                        reply_headers = [(k, v) for k, v in response.getheaders() if k.lower() not in HOP_BY_HOP]
                    finally:
                        connection.close()
                except OSError:
                    reply_headers = [("Content-Type", "application/json")]
                if admin and proxy.audit is not None:
                    proxy.audit(self.command, bare, status)
                self.send_response(status)
                for key, value in reply_headers:
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(reply)))
                self.send_header("Connection", "close")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(reply)
                self.close_connection = True

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _forward

        self.audit = audit
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, name="arenac-admin-proxy", daemon=True)
        self._thread.start()
        self._closed = False

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
