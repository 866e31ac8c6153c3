"""Run one spine service: `python -m spine_services SERVICE --config PATH [--port N | --listen-fd FD]
[--image-release-file F]`.

Contract: reads the config (file or ConfigMap directory, then SPINE_* environment), refuses to start
with exit code 2 on an invalid config or an unknown release, serves until SIGTERM/SIGINT and then
shuts down gracefully. `--listen-fd` serves on an already listening socket inherited from the
parent (the local stack keeps the port across restarts that way); `--port` binds one itself (a
container). Logs go to stderr. The release an image carries (see releases.py: the baked file, or
the stand-in `--image-release-file`) wins over `RELEASE` from the config file and the environment.
The admin credential is read once, at start, from the file `SPINE_ADMIN_TOKEN_FILE` names (default
/etc/spine-admin/token, the chart's Secret mount); the variable carries a path, never the token.
Without a readable, non-empty file the admin API refuses every call (401).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import socket
import sys
from pathlib import Path

from aiohttp import web

from spine_services.app import Component, ServiceContext, build_app, make_context
from spine_services.configstore import ConfigStore
from spine_services.keys import SERVICES, ConfigError
from spine_services.releases import image_release, release


def component_for(ctx: ServiceContext) -> Component:
    # lazily: a service process loads only its own service's code
    cls: type[Component]
    if ctx.name == "gateway":
        from spine_services.gateway import Gateway as cls
    elif ctx.name == "auth":
        from spine_services.auth import Auth as cls
    elif ctx.name == "channel":
        from spine_services.channel import Channel as cls
    elif ctx.name == "message":
        from spine_services.message import Message as cls
    elif ctx.name == "fanout":
        from spine_services.fanout import Fanout as cls
    else:
        from spine_services.maintenance import Maintenance as cls
    return cls(ctx)


async def _watch_parent(stop: asyncio.Event) -> None:
    """Exit when the process that started us is gone (a crashed local stack leaves no orphans)."""
    parent = os.getppid()
    # already adopted by init: the stack died while this process was starting (a SIGKILL then)
    while parent != 1 and os.getppid() == parent:
        await asyncio.sleep(0.5)
    stop.set()


ADMIN_TOKEN_FILE = "/etc/spine-admin/token"


def read_admin_token(path: str | None = None) -> str:
    """The admin credential from its file; "" (admin API closed) when there is none."""
    path = path or os.environ.get("SPINE_ADMIN_TOKEN_FILE") or ADMIN_TOKEN_FILE
    try:
        return Path(path).read_text().strip()
    except OSError:
        logging.warning("no admin credential at %s: the admin API refuses every call", path)
        return ""


async def serve(component: Component, sock: socket.socket | None, host: str, port: int,
                exit_with_parent: bool = False, admin_token: str = "") -> None:
    runner = web.AppRunner(
        build_app(component, admin_token),
        # a client that gives up (the gateway's timeout) cancels the handler and its query
        handler_cancellation=True,
        access_log=None,
    )
    await runner.setup()
    site = web.SockSite(runner, sock) if sock is not None else web.TCPSite(runner, host, port, reuse_address=True)
    await site.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    watcher = asyncio.create_task(_watch_parent(stop)) if exit_with_parent else None
    await stop.wait()
    if watcher is not None:
        watcher.cancel()
    await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spine_services")
    parser.add_argument("service", choices=SERVICES)
    parser.add_argument("--config", type=Path, help="config file (YAML KEY: value) or ConfigMap directory")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--listen-fd", type=int, help="serve on this inherited listening socket")
    parser.add_argument("--exit-with-parent", action="store_true", help="stop when the parent process ends")
    parser.add_argument("--image-release-file", type=Path,
                        help="the release the (emulated) image carries; a release baked into the image wins")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s {args.service} %(levelname)s %(name)s: %(message)s")
    try:
        carried = image_release(args.image_release_file)
        config = ConfigStore(args.service, args.config, image={"RELEASE": carried} if carried else {})
        ctx = make_context(args.service, config, release(config.get("RELEASE")))
    except ConfigError as exc:
        print(f"spine {args.service}: invalid configuration: {exc}", file=sys.stderr)
        return 2
    if config.unknown_in_file:
        logging.warning("ignoring unknown keys in %s: %s", args.config, ", ".join(config.unknown_in_file))
    sock = socket.socket(fileno=args.listen_fd) if args.listen_fd is not None else None
    asyncio.run(serve(component_for(ctx), sock, args.host, args.port, args.exit_with_parent, read_admin_token()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
