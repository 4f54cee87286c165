"""API-key check for every endpoint but the health check.

The SDK sends the key as `X-API-Key` (tinker/lib/_auth_token_provider.py); `Authorization:
Bearer <key>` is accepted too, for curl and other clients.
"""

from __future__ import annotations

import hmac

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from ckpt_tui.server.errors import error_response

OPEN_PATHS = frozenset({"/api/v1/healthz"})


def presented_key(headers: Headers) -> str | None:
    """The key the caller sent, from `X-API-Key` or else `Authorization: Bearer`."""
    key = headers.get("x-api-key")
    if key is not None:
        return key
    scheme, _, token = headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return None


def key_problem(expected: str, presented: str | None) -> str | None:
    """Why the presented key is refused, or None when it is right. Never echoes a key."""
    if presented is None:
        return "missing API key: send it in the X-API-Key header"
    if not hmac.compare_digest(presented.encode("utf-8"), expected.encode("utf-8")):
        return "wrong API key: the X-API-Key header does not match the server's key"
    return None


class ApiKeyMiddleware:
    """Refuse (401) HTTP requests that lack the right key; healthz stays open."""

    def __init__(self, app: ASGIApp, api_key: str) -> None:
        self.app = app
        self.api_key = api_key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        problem = key_problem(self.api_key, presented_key(Headers(scope=scope)))
        if problem is None:
            await self.app(scope, receive, send)
            return
        response = error_response(401, problem, headers={"WWW-Authenticate": "Bearer"})
        await response(scope, receive, send)
