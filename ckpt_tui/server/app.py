"""The local checkpoint server: the Tinker checkpoint REST API over a `Store`.

Serves every endpoint of shared/spec/tinker-rest-api.md so the official `tinker` CLI and SDK,
and ckpt-tui's own client, can talk to a folder of checkpoints on this machine.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware

from ckpt_tui.api_types import CheckpointType
from ckpt_tui.server.auth import AuthMiddleware
from ckpt_tui.server.deletes import DeleteQueue
from ckpt_tui.server.downloads import ALL_SIGNED_TYPES
from ckpt_tui.server.error_responses import http_exception_handler, internal_error_handler
from ckpt_tui.server.routes import ROUTES
from ckpt_tui.server.signing import UrlSigner
from ckpt_tui.server.sweeper import sweeping_lifespan
from ckpt_tui.server.tokens import JwtIssuer
from ckpt_tui.store import Store

DEFAULT_SWEEP_INTERVAL = 60.0


def create_app(
    store: Store,
    *,
    api_key: str | None = None,
    jwt: JwtIssuer | None = None,
    credential_cmd: bool = False,
    sweep_interval: float | None = DEFAULT_SWEEP_INTERVAL,
    storage_rate: float | None = None,
    url_signer: UrlSigner | None = None,
    signed_types: tuple[CheckpointType, ...] = ALL_SIGNED_TYPES,
) -> Starlette:
    """Build the ASGI app over `store` (which the caller opens and closes).

    With `api_key`, every call but `GET /api/v1/healthz` needs it (401 otherwise).
    With `jwt` too, the client config says `"pjwt_auth_enabled": true`, `POST /api/v1/auth/token`
    trades the key for one of `jwt`'s tokens, and every other call needs such a token (see
    ckpt_tui.server.auth). `credential_cmd` makes the client config tell the SDK to take its
    credential from `$TINKER_CREDENTIAL_CMD` (only meaningful with `jwt`).
    `sweep_interval` is how often, in seconds, expired checkpoints are removed while the app
    runs (the store also sweeps when opened); None turns the background sweep off.
    With `storage_rate` (USD per GiB-month), `GET /api/v1/billing/usage/checkpoints/current`
    answers the store's usage at that rate; without, it is a 404 (ckpt_tui.server.billing).
    `url_signer` signs download URLs (default: a fresh secret, URLs valid an hour) for the
    checkpoint types in `signed_types` (ckpt_tui.server.downloads).
    """
    if api_key is not None and not api_key:
        raise ValueError("api_key must be a non-empty string or None")
    if sweep_interval is not None and sweep_interval <= 0:
        raise ValueError(f"sweep_interval must be positive or None, got {sweep_interval}")
    if jwt is not None and api_key is None:
        raise ValueError("JWT exchange needs an api_key to exchange")
    if storage_rate is not None and not (0 <= storage_rate < float("inf")):
        raise ValueError(f"storage_rate must be a finite number >= 0, got {storage_rate}")
    if credential_cmd and jwt is None:
        raise ValueError("credential_cmd needs JWT exchange (the SDK only uses it then)")
    middleware = (
        [] if api_key is None else [Middleware(AuthMiddleware, api_key=api_key, issuer=jwt)]
    )
    app = Starlette(
        routes=ROUTES,
        middleware=middleware,
        exception_handlers={
            HTTPException: http_exception_handler,
            Exception: internal_error_handler,
        },
        lifespan=sweeping_lifespan(store, sweep_interval),
    )
    app.state.store = store
    app.state.deletes = DeleteQueue(store)
    app.state.jwt_issuer = jwt
    app.state.storage_rate = storage_rate
    app.state.url_signer = url_signer or UrlSigner()
    app.state.signed_types = signed_types
    app.state.client_config = client_config(jwt is not None, credential_cmd)
    return app


def client_config(jwt_exchange: bool, credential_cmd: bool) -> dict[str, object]:
    """What `POST /api/v1/client/config` answers: only the flags that differ from the
    SDK's defaults (`{}` is all defaults)."""
    config: dict[str, object] = {}
    if jwt_exchange:
        config["pjwt_auth_enabled"] = True
    if credential_cmd:
        config["credential_default_source"] = "credential_cmd"
    return config
