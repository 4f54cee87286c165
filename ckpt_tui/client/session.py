"""Start-up and credentials: how a client speaks to its server, settled as the SDK does.

Before its first call (other than the open health check) a client asks the server how to be
spoken to, `POST /api/v1/client/config`, presenting the key (or, with no key, the output of
`$TINKER_CREDENTIAL_CMD`), exactly as the tinker SDK 0.38.0 does
(tinker/lib/internal_client_holder.py):

- `{}` or `"pjwt_auth_enabled": false`: the API key goes in `X-API-Key` on every call. A key
  that is a JWT is refused here once it has expired, rather than sent.
- `"pjwt_auth_enabled": true`: the key is never sent to other endpoints. It is traded for a
  short-lived JWT at `POST /api/v1/auth/token`; the JWT goes in `X-API-Key`. A background task
  trades again after about half the JWT's lifetime, a call made near expiry trades first, and
  a call answered 401 with `error="invalid_token"` is replayed once with a fresh JWT.
  `"credential_default_source": "credential_cmd"` makes `$TINKER_CREDENTIAL_CMD` the
  credential that is traded, run again for each trade (see `Endpoint.credential`).

A start-up that fails is tried again by the next call (in the TUI: `r`). A renewal that fails
in the background is only noted by the next call that needs the token: it renews on demand,
and when that fails too while the old token is still valid, the old token is used; after
that, the call fails with the renewal's error. No key, JWT or command output is ever part of
a message, a repr or a log.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncGenerator, Awaitable, Callable

import httpx
import msgspec

from ckpt_tui.api_types import AuthToken, ClientConfig
from ckpt_tui.client.credential_cmd import CREDENTIAL_CMD_ENV, run_credential_cmd
from ckpt_tui.client.endpoint import API_KEY_HEADER, Credential, Endpoint, usable_key
from ckpt_tui.client.errors import (
    AuthError,
    BadResponse,
    ClientError,
    CredentialsError,
    NotFoundError,
    decoded,
)
from ckpt_tui.client.retry import Call
from ckpt_tui.client.secret import Secret
from ckpt_tui.client.tokens import Jwt, jwt_expired

SDK_VERSION = "0.38.0"
"""The tinker SDK whose start-up this reproduces; sent as `sdk_version` in the client config."""
CLIENT_CONFIG_PATH = "/api/v1/client/config"
TOKEN_PATH = "/api/v1/auth/token"

_CLIENT_CONFIG = msgspec.json.Decoder(ClientConfig)
_AUTH_TOKEN = msgspec.json.Decoder(AuthToken)

ControlSend = Callable[[Call, str | None], Awaitable[httpx.Response]]
"""Sends a start-up call (no session auth, with retries); the str names its credential."""


def is_invalid_token(response: httpx.Response) -> bool:
    """The server refused the JWT itself (RFC 6750), not the caller: a fresh one may pass."""
    challenge = response.headers.get("WWW-Authenticate", "")
    return response.status_code == 401 and 'error="invalid_token"' in challenge


class Session(httpx.Auth):
    """The credential of every call of one client: an `httpx.Auth` that starts up first."""

    def __init__(
        self,
        endpoint: Endpoint,
        control: ControlSend,
        *,
        clock: Callable[[], float] = time.monotonic,
        uniform: Callable[[float, float], float] = random.uniform,
    ) -> None:
        self.endpoint = endpoint
        self._control = control
        self._clock = clock
        self._uniform = uniform
        self._started = endpoint.is_local  # the in-process app has nothing to settle
        self._start_lock = asyncio.Lock()
        self._key: Credential | None = None
        """Without JWT exchange: the key sent as is."""
        self._exchanged: Credential | None = None
        """With JWT exchange: what is traded for JWTs."""
        self._token: Jwt | None = None
        self._refresh_lock = asyncio.Lock()
        self._refresh_task: asyncio.Task[None] | None = None
        self._closed = False
        self.tokens_received = 0

    # --- what people see ---------------------------------------------------------------------
    @property
    def uses_jwt(self) -> bool:
        return self._exchanged is not None

    def describe(self) -> str:
        """The backend's one line, naming the credential as start-up settled it."""
        if self._exchanged is not None:
            return self.endpoint.describe(f"JWTs for the {self._exchanged.short}")
        return self.endpoint.describe()

    @property
    def credential_description(self) -> str | None:
        """How errors name what was sent: 'the API key from X', 'the JWT exchanged for ...'."""
        if self._exchanged is not None:
            return f"the JWT exchanged for {self._exchanged.description}"
        if self._key is not None:
            return self._key.description
        credential = None if self._started else self.endpoint.credential()
        return None if credential is None else credential.description

    # --- httpx.Auth --------------------------------------------------------------------------
    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        sent = await self.credential()
        if sent is not None:
            request.headers[API_KEY_HEADER] = sent.reveal()
        response = yield request
        if sent is None or not self.uses_jwt or not is_invalid_token(response):
            return
        await response.aread()  # free the connection before the exchange
        request.headers[API_KEY_HEADER] = (await self._replace(sent)).reveal()
        yield request

    async def credential(self) -> Secret | None:
        """What to send in `X-API-Key` now (None: nothing); starts up on first use."""
        await self._start_once()
        if self._exchanged is not None:
            return await self._current_jwt()
        return None if self._key is None else await present(self._key)

    # --- start-up ----------------------------------------------------------------------------
    async def _start_once(self) -> None:
        if self._started:
            return
        async with self._start_lock:
            if not self._started:
                await self._start()
                self._started = True

    async def _start(self) -> None:
        config = await self._client_config()
        if config.pjwt_auth_enabled:
            required = config.credential_default_source == "credential_cmd"
            credential = self.endpoint.credential(command_required=required)
            if credential is None:
                raise CredentialsError(
                    f"{self.endpoint.base_url} trades credentials for JWTs and none is "
                    f"configured: pass --api-key, set TINKER_API_KEY or {CREDENTIAL_CMD_ENV}, "
                    "or store a key with `tinker auth login`"
                )
            self._exchanged = credential
        elif self.endpoint.api_key:
            # Without JWT exchange only API keys are accepted: the command is not used.
            self._key = self.endpoint.credential()

    async def _client_config(self) -> ClientConfig:
        credential = self.endpoint.credential()
        body = {"sdk_version": SDK_VERSION}
        call = Call(
            "POST", CLIENT_CONFIG_PATH, "the client configuration", body=body,
            key=None if credential is None else await present(credential),
            authenticated=False,
        )  # fmt: skip
        description = None if credential is None else credential.description
        try:
            response = await self._control(call, description)
        except NotFoundError:
            return ClientConfig()  # a server from before this handshake: all defaults
        return decoded(response, _CLIENT_CONFIG, self.endpoint.display_url, call.subject)

    # --- JWTs --------------------------------------------------------------------------------
    async def _current_jwt(self) -> Secret:
        token = self._token
        if token is not None and not token.near_expiry(self._clock()):
            return token.value
        async with self._refresh_lock:
            token = self._token
            if token is not None and not token.near_expiry(self._clock()):
                return token.value
            try:
                return (await self._fetch()).value
            except AuthError:
                raise  # the credential itself was refused: say so now
            except ClientError:
                if token is not None and token.remaining(self._clock()) > 0:
                    return token.value  # still valid: the server decides
                raise

    async def _replace(self, rejected: Secret) -> Secret:
        """A JWT other than `rejected`; one exchange however many calls it failed at once."""
        if self._token is not None and self._token.value != rejected:
            return self._token.value
        async with self._refresh_lock:
            if self._token is not None and self._token.value != rejected:
                return self._token.value
            return (await self._fetch()).value

    async def _fetch(self) -> Jwt:
        """Trade the credential for a JWT (callers hold the refresh lock)."""
        assert self._exchanged is not None
        call = Call(
            "POST", TOKEN_PATH, "the JWT exchange", body={},
            key=await present(self._exchanged), authenticated=False,
        )  # fmt: skip
        response = await self._control(call, self._exchanged.description)
        answer = decoded(response, _AUTH_TOKEN, self.endpoint.display_url, call.subject)
        try:
            token = Jwt.received_now(Secret(answer.jwt), self._clock())
        except ValueError as exc:
            message = f"{self.endpoint.display_url} answered {call.subject} without a usable JWT"
            raise BadResponse(message, detail=str(exc)) from None
        self._token = token
        self.tokens_received += 1
        if not self._closed and (self._refresh_task is None or self._refresh_task.done()):
            self._refresh_task = asyncio.create_task(self._refresh_loop())
        return token

    async def _refresh_loop(self) -> None:
        """Trade again after about half of each JWT's lifetime, until a trade fails."""
        while not self._closed and self._token is not None:
            token = self._token
            delay = token.refresh_delay(self._uniform) - (self._clock() - token.received)
            await asyncio.sleep(max(delay, 0.0))
            async with self._refresh_lock:
                if self._token is not token:
                    continue  # renewed on demand meanwhile
                try:
                    await self._fetch()
                except ClientError:
                    return  # the next call renews on demand, and says why if it fails

    async def aclose(self) -> None:
        """Stop renewing (the client is closing)."""
        self._closed = True
        task, self._refresh_task = self._refresh_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def present(credential: Credential) -> Secret:
    """The credential's value now: the key, or what the command prints (run afresh, and
    checked as a key is: a header must carry it)."""
    if credential.command is not None:
        printed = f"what {CREDENTIAL_CMD_ENV} printed"
        fix = "make it print the credential alone (run it in a shell to see)"
        return usable_key(await run_credential_cmd(credential.command), printed, fix)
    assert credential.key is not None
    if jwt_expired(credential.key.reveal()):
        raise CredentialsError(
            f"{credential.description} is a JWT that has expired: pass a fresh one, or remove "
            f"it and set {CREDENTIAL_CMD_ENV} to a command that prints one"
        )
    return credential.key
