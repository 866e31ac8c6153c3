"""auth: logs users in.

`POST /login {"user": name}` records the login time of a known user and returns
{"token": ..., "user": name}; an unknown user gets 401 (the protected user table never grows).
While the admin event `read_consistency_strict` is on, the login holds its database connection for
READ_CONSISTENCY_HOLD_MS before looking the user up ("wait until every write is visible"), as the
channel service's reads do: latency first, then pool exhaustion and timeouts under load.
"""

from __future__ import annotations

from aiohttp import web

from spine_services.app import DbComponent, error, strict_hold
from spine_services.common import issue_token, json_object


class Auth(DbComponent):
    def routes(self) -> list[web.RouteDef]:
        return [web.post("/login", self.login, name="login")]

    async def login(self, request: web.Request) -> web.Response:
        user = (await json_object(request)).get("user")
        if not isinstance(user, str) or not user:
            return error(400, "bad_request", 'expected {"user": name}')
        async with self.db.connection() as conn:
            await strict_hold(self.ctx)
            found = await conn.fetchval("UPDATE users SET last_login = now() WHERE name = $1 RETURNING id", user)
        if found is None:
            return error(401, "unknown_user", f"no user {user!r}")
        return web.json_response({"token": issue_token(user, self.ctx.config.get("AUTH_SECRET")), "user": user})
