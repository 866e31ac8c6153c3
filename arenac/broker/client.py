"""The agent side of the brokered tools: a thin client, standard library only.

Each installed tool (`kubectl`, `admin-api`, `db-sql`, `wait-until-healthy`,
`declare_repair_complete`) is this file plus one line that names the tool, the broker's address and
the episode's token; it holds nothing else. It sends `{"token", "tool", "argv", "stdin", "edit"}`
as one JSON line and prints the answer `{"code", "stdout", "stderr", "edit"}`. Local files and
standard input are read here (`kubectl patch --patch-file`, `db-sql -f`, `kubectl exec -i`,
`admin-api ... -`), and `kubectl edit` runs $KUBE_EDITOR / $EDITOR here, between its two rounds.
Every decision is the broker's. The broker's address is `unix:PATH`, `tcp:HOST:PORT` or `HOST:PORT`.
"""

from __future__ import annotations

import base64
import json
import os
import shlex
import socket
import subprocess
import sys
import tempfile

PROTOCOL_LIMIT = 64 * 1024 * 1024


def call(address: str, token: str, tool: str, argv: list[str], stdin: bytes | None = None,
         edit: str | None = None) -> dict:
    if address.startswith("unix:"):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(address[len("unix:"):])
    else:  # tcp:HOST:PORT or HOST:PORT (an export's agent container: harness:7400)
        host, _, port = address.removeprefix("tcp:").rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"bad broker address {address!r}: use unix:PATH, tcp:HOST:PORT or HOST:PORT")
        sock = socket.create_connection((host.strip("[]"), int(port)))
    request = {"token": token, "tool": tool, "argv": argv, "edit": edit,
               "stdin": base64.b64encode(stdin).decode() if stdin is not None else None}
    with sock:
        sock.sendall(json.dumps(request).encode() + b"\n")
        chunks, size = [], 0
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > PROTOCOL_LIMIT:
                raise OSError("answer too large")
    return json.loads(b"".join(chunks) or b"{}")


def _wants_stdin(tool: str, argv: list[str]) -> bool:
    if tool == "kubectl":
        head = argv[:argv.index("--")] if "--" in argv else argv
        return any(w == "--stdin" or (w.startswith("-") and not w.startswith("--") and set(w[1:]) <= set("itq")
                                      and "i" in w) for w in head) and "exec" in head
    if tool == "admin-api":
        return argv[3:4] == ["-"]
    if tool == "db-sql":
        return not any(w in ("-c", "--command") or w.startswith("--command=") for w in argv) \
            and sys.stdin is not None and not sys.stdin.isatty()
    return False


def _inline_files(tool: str, argv: list[str]) -> list[str]:
    """`kubectl patch --patch-file F` -> `-p <contents>`; `db-sql -f F` -> `-c <contents>`."""
    names, replacement = {"kubectl": (("--patch-file",), "-p"), "db-sql": (("-f", "--file"), "-c")}.get(tool, ((), ""))
    out, words = [], list(argv)
    while words:
        word = words.pop(0)
        name, eq, value = word.partition("=")
        if name in names:
            path = value if eq else (words.pop(0) if words else "")
            with open(path, encoding="utf-8") as handle:
                out += [replacement, handle.read()]
        else:
            out.append(word)
    return out


def _edit(content: str) -> str | None:
    editor = os.environ.get("KUBE_EDITOR") or os.environ.get("EDITOR") or "vi"
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix="kubectl-edit-", delete=False) as handle:
        handle.write(content)
        path = handle.name
    try:
        subprocess.run([*shlex.split(editor), path], check=True)
        with open(path, encoding="utf-8") as handle:
            edited = handle.read()
    finally:
        os.unlink(path)
    return None if edited == content else edited


def main(tool: str, address: str, token: str, argv: list[str]) -> int:
    try:
        argv = _inline_files(tool, argv)
        stdin = sys.stdin.buffer.read() if _wants_stdin(tool, argv) else None
        answer = call(address, token, tool, argv, stdin)
        if not answer:  # the broker ended the call unanswered: the agent's window closed under it
            raise OSError("the broker closed the connection without an answer (the agent's window closed?)")
        if answer.get("edit") is not None and answer.get("code", 1) == 0:
            edited = _edit(answer["edit"])
            if edited is None:
                print("Edit cancelled, no changes made.")
                return 0
            answer = call(address, token, tool, argv, None, edited)
    except (OSError, ValueError, subprocess.CalledProcessError) as exc:
        print(f"{tool}: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(answer.get("stdout", ""))
    sys.stdout.flush()
    sys.stderr.write(answer.get("stderr", ""))
    return int(answer.get("code", 1))
