"""Who may call what: the API key, and with JWT exchange on, the short-lived JWTs.

The SDK sends its credential as `X-API-Key` (tinker/lib/_auth_token_provider.py);
`Authorization: Bearer <key>` is accepted too, for curl and other clients.

- API key only: every call but the health check needs the key.
- JWT exchange (`ckpt-tui serve --jwt`): `POST /api/v1/auth/token` needs the key and answers
  a JWT; the client config stays open (the SDK reads it before it has a JWT); every other call
  needs a valid, unexpired JWT. A refused JWT gets 401 with
  `WWW-Authenticate: Bearer error="invalid_token"`, which tells the SDK (and ckpt-tui) to
  exchange the key again and replay the request once.
"""

from __future__ import annotations

import hmac

from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from ckpt_tui.server.error_responses import error_response
from ckpt_tui.server.signing import SIGNED_PREFIX
from ckpt_tui.server.tokens import JwtIssuer

OPEN_PATHS = frozenset({"/api/v1/healthz"})
CLIENT_CONFIG_PATH = "/api/v1/client/config"
TOKEN_PATH = "/api/v1/auth/token"
INVALID_TOKEN = 'Bearer error="invalid_token"'


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


class AuthMiddleware:
    """Refuse (401) HTTP requests without the right credential; healthz stays open."""

    def __init__(self, app: ASGIApp, api_key: str, issuer: JwtIssuer | None = None) -> None:
        self.app = app
        self.api_key = api_key
        self.issuer = issuer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = None if scope["type"] != "http" else self.refusal(scope)
        if refusal is None:
            await self.app(scope, receive, send)
        else:
            await refusal(scope, receive, send)

    def refusal(self, scope: Scope) -> Response | None:
        """The 401 answer for this request, or None to let it through."""
        path = scope["path"]
        if (
            path in OPEN_PATHS
            or path.startswith(SIGNED_PREFIX)
            or (self.issuer is not None and path == CLIENT_CONFIG_PATH)
        ):
            return None
        presented = presented_key(Headers(scope=scope))
        if self.issuer is None or path == TOKEN_PATH:
            problem = key_problem(self.api_key, presented)
            if problem is None:
                return None
            return error_response(401, problem, headers={"WWW-Authenticate": "Bearer"})
        if presented is None:
            detail = (
                "missing JWT: this server exchanges the API key for a JWT at "
                f"POST {TOKEN_PATH}; send that JWT in the X-API-Key header"
            )
            return error_response(401, detail, headers={"WWW-Authenticate": "Bearer"})
        problem = self.issuer.problem(presented)
        if problem is None:
            return None
        # No `x-should-retry: false` here: a retry with a fresh JWT does help, and the SDK
        # replays on this answer in its auth flow (tinker/lib/_jwt_auth.py).
        headers = {"WWW-Authenticate": INVALID_TOKEN}
        return error_response(401, problem, headers=headers, retry_helps=True)
