"""JWTs as a client sees them: when one expires, and when to trade it for the next.

The claims are read without checking the signature: only the server that minted a JWT can
check it; the client only needs `iat` and `exp` to know when to stop sending it. As in the
SDK (tinker/lib/_jwt_auth.py), a token is renewed after about half its lifetime (45-55%,
jittered, so many clients do not renew at once), and on demand when it is near expiry.
Timing uses the lifetime the server wrote (`exp - iat`) from the moment the token arrived,
on the monotonic clock, so a skewed local clock cannot make it expire early or late.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import msgspec

from ckpt_tui.client.secret import Secret, key_problem

REFRESH_SHARE = (0.45, 0.55)
NEAR_EXPIRY_SECONDS = 60.0
NEAR_EXPIRY_SHARE = 0.1
"""'Near expiry' is the last 60 s, or the last tenth of a shorter lifetime."""


def is_jwt(credential: str) -> bool:
    """A JWT rather than an opaque key (the SDK's test: a JSON header, base64 `eyJ`)."""
    return credential.startswith("eyJ")


def unverified_claims(token: str) -> dict[str, object]:
    """A JWT's payload without checking its signature; {} when it is not a JWT."""
    import jwt  # here: 4 ms of every start, for the few credentials that are JWTs

    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.InvalidTokenError:
        return {}
    return claims if isinstance(claims, dict) else {}


def jwt_expired(credential: str, now: float | None = None) -> bool:
    """True for a JWT whose `exp` (wall clock) has passed; an opaque key never expires."""
    if not is_jwt(credential):
        return False
    exp = unverified_claims(credential).get("exp")
    if not isinstance(exp, (int, float)):
        return False
    return (time.time() if now is None else now) >= exp


class Jwt(msgspec.Struct, frozen=True, gc=False):
    """A token the server handed out, and when it arrived (monotonic seconds)."""

    value: Secret
    lifetime: float
    received: float

    def __repr__(self) -> str:  # never the token itself
        return f"Jwt(lifetime={self.lifetime!r}, received={self.received!r})"

    @classmethod
    def received_now(cls, value: Secret, now: float) -> Jwt:
        """ValueError when the token has no usable `iat` and `exp`, or a header cannot
        carry it."""
        problem = key_problem(value.reveal())
        if problem is not None:
            raise ValueError(f"the JWT cannot be sent: {problem}")
        claims = unverified_claims(value.reveal())
        issued, expires = claims.get("iat"), claims.get("exp")
        if not isinstance(issued, (int, float)) or not isinstance(expires, (int, float)):
            raise ValueError("the JWT has no numeric iat and exp claims")
        if expires <= issued:
            raise ValueError(f"the JWT's lifetime is not positive ({expires - issued} s)")
        return cls(value, float(expires - issued), now)

    def remaining(self, now: float) -> float:
        return self.received + self.lifetime - now

    def near_expiry(self, now: float) -> bool:
        margin = min(NEAR_EXPIRY_SECONDS, self.lifetime * NEAR_EXPIRY_SHARE)
        return self.remaining(now) <= margin

    def refresh_delay(self, uniform: Callable[[float, float], float] = random.uniform) -> float:
        """Seconds after arrival to trade it for the next one."""
        return self.lifetime * uniform(*REFRESH_SHARE)
