"""Short-lived JWTs for `ckpt-tui serve --jwt`: the exchange the tinker SDK does at start-up.

With JWT exchange on, a client trades the server's API key for a JWT at
`POST /api/v1/auth/token` and sends that JWT (in `X-API-Key`) to every other endpoint. The
tokens are HS256-signed with a secret made when the server starts, so a restart (or
`rotate`) invalidates every token handed out before; clients then get 401
`error="invalid_token"` and exchange their key again.
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field

ALGORITHM = "HS256"
MAX_TOKEN_CHARS = 4096
"""Our tokens are ~200 characters; anything far longer is not one of ours."""


@dataclass
class JwtIssuer:
    """Mints and checks the server's JWTs; `issued` counts the tokens handed out."""

    lifetime: int
    issued: int = 0
    _secret: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        if self.lifetime < 1:
            raise ValueError(f"a JWT lifetime must be at least 1 second, got {self.lifetime}")
        # PyJWT is imported here, not with the module: with cryptography it took 70-75 ms of
        # importing the server (`python -X importtime`), which every `--local` store (the
        # app's, `ls`'s, `prune`'s) paid, though only `serve --jwt` signs tokens.
        import jwt  # noqa: F401  (here, not at the first request)

    def mint(self) -> str:
        """A new token valid for `lifetime` seconds from now (`iat`, `exp`, a unique `jti`)."""
        issued_at = int(time.time())
        claims = {
            "iat": issued_at,
            "exp": issued_at + self.lifetime,
            "jti": secrets.token_hex(8),
        }
        import jwt

        with self._lock:
            self.issued += 1
            return jwt.encode(claims, self._secret, algorithm=ALGORITHM)

    def problem(self, token: str) -> str | None:
        """Why `token` is refused (expired, forged, not a JWT), or None when it is good."""
        if len(token) > MAX_TOKEN_CHARS:
            return "invalid JWT: too long to be one of this server's tokens"
        import jwt

        try:
            jwt.decode(
                token,
                self._secret,
                algorithms=[ALGORITHM],
                options={"require": ["exp", "iat"]},
                leeway=0,
            )
        except jwt.ExpiredSignatureError:
            return "expired JWT: exchange the API key for a new one at POST /api/v1/auth/token"
        except jwt.InvalidTokenError:
            return (
                "invalid JWT (not signed by this server, or not a JWT): exchange the API key "
                "for one at POST /api/v1/auth/token and send it in X-API-Key"
            )
        return None

    def rotate(self) -> None:
        """Sign with a new secret: every token handed out so far is refused from now on."""
        with self._lock:
            self._secret = secrets.token_bytes(32)
