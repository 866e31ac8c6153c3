"""gateway: the public HTTP entry of spine.

Routes (metric/route name in brackets):
- [login]    POST /api/login {"user": name}                -> auth    POST /login
- [channels] GET  /api/channels                            -> channel GET  /channels
- [send]     POST /api/channels/{channel}/messages {"text"} -> message POST /channels/{channel}/messages
- [delete]   DELETE /api/channels/{channel}/messages/{seq}  -> message DELETE /channels/{channel}/messages/{seq}
- [read]     GET  /api/channels/{channel}/messages?after=N -> channel GET  /channels/{channel}/messages
- [unread]   GET  /api/unread                              -> channel GET  /unread
send, delete, read and unread need `Authorization: Bearer <token>` (from login); the gateway checks the
token and passes the user on. A backend that does not answer within UPSTREAM_TIMEOUT_MS gives 504
(and the gateway drops the connection, which cancels the backend's handler); one that cannot be
reached gives 502. Other backend answers pass through unchanged.
"""

from __future__ import annotations

import aiohttp
from aiohttp import web

from spine_services.app import Component, Handler, error
from spine_services.common import USER_HEADER, verify_token


class Gateway(Component):
    _session: aiohttp.ClientSession | None = None

    def routes(self) -> list[web.RouteDef]:
        return [
            web.post("/api/login", self._to("AUTH_URL", "/login", auth=False), name="login"),
            web.get("/api/channels", self._to("CHANNEL_URL", "/channels", auth=False), name="channels"),
            web.post("/api/channels/{channel}/messages",
                     self._to("MESSAGE_URL", "/channels/{channel}/messages"), name="send"),
            web.delete("/api/channels/{channel}/messages/{seq}",
                       self._to("MESSAGE_URL", "/channels/{channel}/messages/{seq}"), name="delete"),
            web.get("/api/channels/{channel}/messages",
                    self._to("CHANNEL_URL", "/channels/{channel}/messages"), name="read"),
            web.get("/api/unread", self._to("CHANNEL_URL", "/unread"), name="unread"),
        ]

    async def start(self) -> None:
        # one keep-alive pool per backend; the limit stops a stalled backend from eating all sockets
        self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit_per_host=200))

    async def stop(self) -> None:
        if self._session is not None:
            await self._session.close()

    def not_ready(self) -> str:
        return "" if self._session is not None else "starting"

    def _to(self, base_key: str, path: str, auth: bool = True) -> Handler:
        async def forward(request: web.Request) -> web.StreamResponse:
            headers = {"Content-Type": request.headers.get("Content-Type", "application/json")}
            if auth:
                scheme, _, token = request.headers.get("Authorization", "").partition(" ")
                user = verify_token(token, self.ctx.config.get("AUTH_SECRET")) if scheme == "Bearer" else None
                if user is None:
                    return error(401, "unauthorized", "a valid Bearer token is required")
                headers[USER_HEADER] = user
            url = self.ctx.config.get(base_key) + path.format(**request.match_info)
            timeout = aiohttp.ClientTimeout(total=self.ctx.config.get_int("UPSTREAM_TIMEOUT_MS") / 1000)
            assert self._session is not None
            try:
                async with self._session.request(
                    request.method, url, params=request.query, data=await request.read(),
                    headers=headers, timeout=timeout,
                ) as upstream:
                    body = await upstream.read()
                    return web.Response(status=upstream.status, body=body,
                                        content_type=upstream.content_type or "application/json")
            except TimeoutError:
                return error(504, "upstream_timeout", f"{base_key} did not answer in time")
            except aiohttp.ClientError as exc:
                return error(502, "upstream_unreachable", f"{base_key}: {exc}")

        return forward
