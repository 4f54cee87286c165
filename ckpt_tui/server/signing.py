"""Signed download URLs: the server signs each file's URL itself, and serves it to whoever
holds an unexpired signature, without an API key (as the hosted service's signed URLs are).

A signature is an HMAC-SHA256, with a secret made fresh for each server process, over the
run, the checkpoint (its id and its creation time, so a checkpoint deleted and made again
under the same name does not answer old URLs), the file's path inside it and the expiry.
The secret never leaves this object: not in answers, logs or its repr.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from datetime import datetime, timedelta, timezone

import msgspec

from ckpt_tui.server.error_responses import ApiError

DEFAULT_URL_LIFETIME = 3600
"""Seconds a signed URL is valid (`ckpt-tui serve --url-lifetime`)."""
SIGNED_PREFIX = "/api/v1/signed/"
"""Where signed files are served; the auth middleware lets these through (the URL is the key)."""
MAX_SIGNATURE_CHARS = 64


class FileClaim(msgspec.Struct, frozen=True, gc=False):
    """What one signature vouches for: this file of this checkpoint."""

    run_id: str
    checkpoint_id: str
    created: str
    """The checkpoint's creation time (ISO), its identity beside its name."""
    file: str

    def message(self, expires: int) -> bytes:
        # JSON keeps the fields apart whatever they hold.
        fields = [self.run_id, self.checkpoint_id, self.created, self.file, expires]
        return json.dumps(fields, separators=(",", ":")).encode("utf-8")


class UrlSigner:
    """Signs and checks download URLs with a secret of its own."""

    __slots__ = ("_secret", "lifetime")

    def __init__(self, lifetime: int = DEFAULT_URL_LIFETIME, secret: bytes | None = None) -> None:
        if lifetime <= 0:
            raise ValueError(f"the URL lifetime must be positive, got {lifetime}")
        self.lifetime = lifetime
        self._secret = secret if secret is not None else secrets.token_bytes(32)

    def __repr__(self) -> str:
        return f"UrlSigner(lifetime={self.lifetime})"

    def expiry(self, now: datetime) -> int:
        """The expiry (Unix seconds) of URLs signed at `now`."""
        return int((now + timedelta(seconds=self.lifetime)).timestamp())

    def signature(self, claim: FileClaim, expires: int) -> str:
        return hmac.new(self._secret, claim.message(expires), hashlib.sha256).hexdigest()

    def check(self, claim: FileClaim, expires_text: str, signature: str, now: datetime) -> None:
        """Refuse (403) a signature that is not this server's for this file, or has expired.

        The refusal never repeats the signature or the expected one.
        """
        if not expires_text.isdigit() or len(expires_text) > 12:
            raise ApiError(403, "this download URL has no valid expiry: ask for new URLs")
        expires = int(expires_text)
        if len(signature) > MAX_SIGNATURE_CHARS or not hmac.compare_digest(
            signature.encode("ascii", "replace"), self.signature(claim, expires).encode("ascii")
        ):
            raise ApiError(
                403,
                "this download URL's signature is not valid for this file: "
                "ask the server for new URLs (external_weights_urls)",
            )
        if now.timestamp() >= expires:
            when = datetime.fromtimestamp(expires, timezone.utc).isoformat()
            raise ApiError(403, f"this download URL expired at {when}: ask for new URLs")
