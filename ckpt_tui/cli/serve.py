"""`ckpt-tui serve STORE`: serve a local checkpoint store over the Tinker checkpoint REST API."""

from __future__ import annotations

import argparse
import ipaddress
import os
import signal
import socket
import sys
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import msgspec

from ckpt_tui.cli.prune import positive_int
from ckpt_tui.cost import RateError, parse_rate
from ckpt_tui.locations import UnsupportedLocationError, parse_location

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from ckpt_tui.store import Store

from ckpt_tui.cli import allocator, options

API_KEY_ENV = "CKPT_TUI_API_KEY"
DEFAULT_JWT_LIFETIME = 900
DEFAULT_URL_LIFETIME = 3600
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8750
LISTEN_BACKLOG = 2048
"""Connections that may wait to be accepted (uvicorn's own default)."""
USAGE_ERROR = 2
EVENT_LOOP = "asyncio" if sys.platform == "win32" else "uvloop"
"""uvicorn's event loop. uvloop (a dependency except on Windows) cut `serve`'s CPU per DELETE
from 0.70 to 0.59 ms (median of six, `benchmarks/bench_delete.py --serve-only`, turn about,
load 2): the sockets, the wake-ups from the store's thread and the tasks cost less."""

DESCRIPTION = f"""\
Serve the checkpoint store in folder STORE (created if missing) over the Tinker checkpoint
REST API, so the official `tinker` CLI/SDK and `ckpt-tui` can browse and manage it.

Without an API key the server only binds to a loopback address. With one (--api-key, or the
environment variable {API_KEY_ENV}), every call but GET /api/v1/healthz must send it in the
X-API-Key header. The tinker SDK only accepts keys that start with "tml-".
With --jwt (needs a key) the server works like an organisation with JWT exchange on: clients
trade the key for a short-lived JWT at POST /api/v1/auth/token and send that JWT instead.
Download URLs (GET .../external_weights_urls, for every checkpoint type) are signed by the
server with a secret of its own and valid --url-lifetime seconds; they need no key.
--credential-cmd (implies --jwt) also tells clients to take the credential to trade from the
command in $TINKER_CREDENTIAL_CMD.
A STORE folder that is not writable is refused: the server must be able to delete expired
checkpoints. With --readonly, STORE must exist and is served read-only: every change is
refused (403) and nothing in the folder is written. With --storage-rate R (USD per
GiB-month) GET /api/v1/billing/usage/checkpoints/current answers the store's checkpoint count
and bytes at that rate, so clients cost this box's checkpoints by it. Stop the server with
Ctrl-C.
"""


SERVE_HELPS = {
    "storage_rate": "USD per GiB-month: GET /api/v1/billing/usage/checkpoints/current answers "
    "this store's checkpoint count and bytes at this rate, so clients cost its checkpoints by "
    "it (without it, that endpoint answers 404 and clients show no cost for this server)",
}
"""serve's own words for options the other commands explain in terms of their backends."""


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "serve",
        help="serve a local checkpoint store over the Tinker REST API",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "store", metavar="STORE", help="the store's folder, or a bucket: s3://bucket/prefix"
    )
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"address to bind ({DEFAULT_HOST})")
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port, 0 = any free one ({DEFAULT_PORT})"
    )
    parser.add_argument(
        "--api-key",
        default=None,
        help=f"key every client must send (default: ${API_KEY_ENV}; none = no auth, loopback only)",
    )
    parser.add_argument(
        "--jwt",
        action="store_true",
        help="JWT exchange: clients trade the API key for short-lived JWTs (needs a key)",
    )
    parser.add_argument(
        "--jwt-lifetime",
        type=positive_int,
        default=DEFAULT_JWT_LIFETIME,
        metavar="SECONDS",
        help=f"how long each JWT is valid (default {DEFAULT_JWT_LIFETIME})",
    )
    parser.add_argument(
        "--credential-cmd",
        action="store_true",
        help="tell clients to get their credential from $TINKER_CREDENTIAL_CMD (implies --jwt)",
    )
    parser.add_argument(
        "--url-lifetime",
        type=positive_int,
        default=DEFAULT_URL_LIFETIME,
        metavar="SECONDS",
        help=f"how long each signed download URL is valid (default {DEFAULT_URL_LIFETIME})",
    )
    options.add_global_options(
        parser, ("readonly", "storage_rate"), after_command=True, helps=SERVE_HELPS
    )
    parser.set_defaults(func=run)


class AuthOptions(msgspec.Struct, frozen=True, gc=False):
    """How the server authenticates: the key, and whether it exchanges it for JWTs."""

    api_key: str | None
    key_hint: str
    jwt_lifetime: int | None = None
    """Seconds each JWT lives; None: no JWT exchange."""
    credential_cmd: bool = False
    url_lifetime: int = DEFAULT_URL_LIFETIME
    """Seconds each signed download URL lives."""

    def describe(self) -> str:
        if self.api_key is None:
            return "off (loopback only)"
        if self.jwt_lifetime is None:
            return "on (X-API-Key)"
        source = ", credential from TINKER_CREDENTIAL_CMD" if self.credential_cmd else ""
        return f"on (API key exchanged for {self.jwt_lifetime} s JWTs{source})"


def auth_options(args: argparse.Namespace) -> AuthOptions:
    """The server's authentication from the arguments; ServeError if they do not fit."""
    api_key, key_hint = resolve_api_key(args.api_key)
    jwt = args.jwt or args.credential_cmd
    if jwt and api_key is None:
        raise ServeError(
            f"--jwt needs an API key to exchange for JWTs: pass --api-key KEY "
            f"(or set {API_KEY_ENV})"
        )
    lifetime = args.jwt_lifetime if jwt else None
    return AuthOptions(api_key, key_hint, lifetime, args.credential_cmd, args.url_lifetime)


def build_app(store: Store, auth: AuthOptions, storage_rate: float | None = None) -> Starlette:
    """The server's app over `store`, authenticating as `auth` says; with `storage_rate`, its
    billing endpoint answers the store's usage at that rate."""
    from ckpt_tui.server import create_app
    from ckpt_tui.server.signing import UrlSigner
    from ckpt_tui.server.tokens import JwtIssuer

    issuer = None if auth.jwt_lifetime is None else JwtIssuer(auth.jwt_lifetime)
    return create_app(
        store,
        api_key=auth.api_key,
        jwt=issuer,
        credential_cmd=auth.credential_cmd,
        storage_rate=storage_rate,
        url_signer=UrlSigner(auth.url_lifetime),
    )


class ServeError(Exception):
    """A refusal to start, with the message to print."""


def is_loopback(host: str) -> bool:
    """True for localhost and any 127.0.0.0/8 or ::1 address."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def resolve_api_key(flag: str | None) -> tuple[str | None, str]:
    """The key to require and how to show it: from the flag, else the environment, else none."""
    if flag is not None:
        return (flag or None), "<the key given to --api-key>"
    from_env = os.environ.get(API_KEY_ENV) or None
    return from_env, f"${API_KEY_ENV}"


def served_place(raw: str, readonly: bool = False) -> Path | str:
    """The bucket location STORE names (`s3://bucket/prefix`), else its folder, prepared
    (`prepare_store_dir`). A scheme this build cannot open is refused: never a folder."""
    try:
        bucket = parse_location(raw)
    except UnsupportedLocationError as exc:
        raise ServeError(f"STORE {exc}") from None
    return bucket.url if bucket is not None else prepare_store_dir(raw, readonly)


def prepare_store_dir(raw: str, readonly: bool = False) -> Path:
    """Create STORE if missing; refuse a non-folder or an unwritable folder.

    Read-only: STORE must already be a folder, and nothing is created.
    """
    path = Path(raw).expanduser().resolve()
    if path.exists() and not path.is_dir():
        raise ServeError(f"STORE {path} exists and is not a folder: give a folder path")
    if readonly:
        if not path.is_dir():
            raise ServeError(f"no STORE folder at {path} (--readonly creates nothing)")
        return path
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ServeError(f"cannot create STORE folder {path}: {exc.strerror}") from exc
    if not os.access(path, os.W_OK | os.X_OK):
        raise ServeError(f"STORE folder {path} is not writable: fix its permissions")
    return path


def bind_socket(host: str, port: int) -> socket.socket:
    """Bind and listen now, so a busy port is a clear error before anything else starts, and
    a client that reads the start line and connects at once waits in the backlog until the
    server accepts (instead of being refused while it is still starting).

    The explicit IPPROTO_TCP makes asyncio set TCP_NODELAY on each connection; without it
    every small answer waits ~40 ms for a delayed ACK.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
        sock.listen(LISTEN_BACKLOG)
    except OSError as exc:
        sock.close()
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    return sock


def client_url(sock: socket.socket) -> str:
    """The URL a client on this machine uses; a wildcard bind is reached through loopback."""
    host, port = sock.getsockname()[:2]
    host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


def start_line(sock: socket.socket, store: Path | str, auth: AuthOptions) -> str:
    """The one line printed on start: where, what, auth, and how to point `tinker` at it."""
    url = client_url(sock)
    host, port = sock.getsockname()[:2]
    where = url if host in url else f"{url} (listening on {host}:{port})"
    env_key = auth.key_hint if auth.api_key else "tml-local"
    credential = (
        f"TINKER_CREDENTIAL_CMD='echo {env_key}'"
        if auth.credential_cmd
        else f"TINKER_API_KEY={env_key}"
    )
    return (
        f"ckpt-tui serving {where} | store {store} | auth {auth.describe()} | "
        f"use: TINKER_BASE_URL={url} {credential} tinker checkpoint list"
    )


def run(args: argparse.Namespace) -> int:
    """Check the arguments, then serve until Ctrl-C."""
    try:
        auth = auth_options(args)
        api_key = auth.api_key
        if not api_key and not is_loopback(args.host):
            raise ServeError(
                f"refusing to serve on non-loopback host {args.host} without an API key: "
                f"pass --api-key KEY (or set {API_KEY_ENV}), or use --host 127.0.0.1"
            )
        rate = (
            None if args.storage_rate is None else parse_rate(args.storage_rate, "--storage-rate")
        )
        root = served_place(args.store, args.readonly)
        sock = bind_socket(args.host, args.port)
    except (ServeError, RateError) as exc:
        print(f"ckpt-tui serve: error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    if api_key and not api_key.startswith("tml-"):
        print(
            "ckpt-tui serve: note: the tinker SDK only sends keys starting with 'tml-'",
            file=sys.stderr,
        )
    allocator.map_big_blocks()  # a long-running server: as for the app (see its docstring)
    return serve_forever(root, sock, auth, args.readonly, rate)


def serve_forever(
    root: Path | str,
    sock: socket.socket,
    auth: AuthOptions,
    readonly: bool = False,
    storage_rate: float | None = None,
) -> int:
    """Open the store, run uvicorn on `sock` until a signal, close the store."""
    import uvicorn

    from ckpt_tui.store import Store, StoreError
    from ckpt_tui.store.bucket.opening import open_bucket_store

    try:
        if isinstance(root, str):  # a bucket location
            store: Store = open_bucket_store(root, readonly=readonly)
        else:
            store = Store.open(root, readonly=True if readonly else None)
    except (StoreError, OSError) as exc:
        sock.close()
        print(f"ckpt-tui serve: error: cannot open store {root}: {exc}", file=sys.stderr)
        return USAGE_ERROR
    previous_term = signal.signal(signal.SIGTERM, _interrupt)
    try:
        # No access log: signed download URLs carry their signature in the query string.
        app = build_app(store, auth, storage_rate)
        config = uvicorn.Config(app, loop=EVENT_LOOP, log_level="warning", access_log=False)
        line = start_line(sock, root, auth)
        if storage_rate is not None:
            line += f" | billing at ${storage_rate:g} per GiB-month"
        print(line + (" | read-only" if readonly else ""), flush=True)
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:
        pass  # uvicorn already shut down gracefully, then re-raised the signal
    finally:
        signal.signal(signal.SIGTERM, previous_term)
        store.close()
        sock.close()
    return 0


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """Turn the SIGTERM uvicorn re-raises after its graceful stop into a clean exit."""
    raise KeyboardInterrupt
