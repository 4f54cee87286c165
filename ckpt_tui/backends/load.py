"""Loading backends side by side: each with its own client, each load on its own.

A backend that fails (nothing listens, a refused key, an unreadable store) becomes an error
entry in the fleet, with what to do; it never holds back or fails the others.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

import msgspec

from ckpt_tui.backends.connection import Connection
from ckpt_tui.backends.descriptor import (
    RATE_DEFAULT,
    RATE_FROM_BILLING,
    RATE_SET_BY_YOU,
    Backend,
    RateSource,
)
from ckpt_tui.backends.fleet import KEY_REFUSED, UNREACHABLE, BackendState, ErrorKind, Fleet
from ckpt_tui.catalog.row_cache import RowCache
from ckpt_tui.catalog.snapshot import LogDirSettings, Snapshot, load_snapshot
from ckpt_tui.client import (
    ApiError,
    AuthError,
    CheckpointClient,
    ClientError,
    ConnectionFailed,
    LocalStoreFailed,
    Timeout,
)
from ckpt_tui.timekeeping.clock import Clock


def describe_client_error(exc: ClientError) -> str:
    """The message, plus the server's own words when a server answered and said more."""
    said = isinstance(exc, ApiError) and exc.detail and exc.detail not in exc.message
    detail = f" (server said: {exc.detail})" if said else ""
    return f"{exc.message}{detail}"


def what_to_do(exc: ClientError) -> str:
    """What a person can do about a backend that failed this way ("" when the message says)."""
    if isinstance(exc, LocalStoreFailed):
        return ""  # a folder on this machine: its message says what to do
    if isinstance(exc, (ConnectionFailed, Timeout)):
        return "if it is reached through an SSH tunnel, is the tunnel open?"
    return ""  # the client's own message already says what to do about a key


def error_kind(exc: ClientError) -> ErrorKind:
    """'key refused' for a key the server refused (401), else 'unreachable'."""
    return KEY_REFUSED if isinstance(exc, AuthError) and exc.key_sent else UNREACHABLE


def failed_word(kind: ErrorKind) -> str:
    """How a listing marks a failed backend: 'FAILED', or 'KEY REFUSED'."""
    return "FAILED" if kind == UNREACHABLE else kind.upper()


def failure_text(exc: ClientError) -> str:
    """The error and what to do: 'could not connect to http://…: connection refused — is
    `ckpt-tui serve` running?; if it is reached through an SSH tunnel, is the tunnel open?'."""
    hint = what_to_do(exc)
    message = describe_client_error(exc).rstrip(". ")
    return f"{message}; {hint}" if hint else message


async def measure_latency(client: CheckpointClient, clock: Clock | None = None) -> float:
    """Seconds one small request takes (a one-item page of checkpoints); by `clock` when
    given (the TUI shows it, and one clock is behind every time it shows)."""
    if clock is not None:
        begun = clock.now()
        await client.list_checkpoints(limit=1)
        return (clock.now() - begun).total_seconds()
    start = time.perf_counter()
    await client.list_checkpoints(limit=1)
    return time.perf_counter() - start


async def user_rate(connection: Connection) -> tuple[float | None, RateSource]:
    """The rate the user set for the backend, if any (nothing is asked)."""
    rate = connection.backend.storage_rate
    return (rate, RATE_SET_BY_YOU) if rate is not None else (None, RATE_DEFAULT)


async def resolve_rate(connection: Connection) -> tuple[float | None, RateSource]:
    """The backend's storage rate and where it came from: the user's, else the billing
    endpoint's `effective_rate_usd_per_gigabyte_month`, else none ("default": no cost shown).

    A billing endpoint that fails or is not there only means no rate from it.
    """
    if connection.backend.storage_rate is not None:
        return await user_rate(connection)
    try:
        usage = await connection.client.storage_usage()
    except ClientError:
        return None, RATE_DEFAULT
    if usage is None or usage.effective_rate_usd_per_gigabyte_month is None:
        return None, RATE_DEFAULT
    return usage.effective_rate_usd_per_gigabyte_month, RATE_FROM_BILLING


async def load_backend(
    connection: Connection,
    settings: LogDirSettings,
    state: BackendState | None = None,
    on_partial: Callable[[BackendState], None] | None = None,
    cache: RowCache | None = None,
    *,
    own_logs_only: bool,
    costs: bool = True,
) -> BackendState:
    """One backend's new state: its snapshot (whole, or marked incomplete), rate and latency;
    or, when it cannot be loaded, its last state with the error and what to do.

    `on_partial` sees a state with each partial snapshot while pages arrive. Without `costs`
    (a listing that shows none) the billing endpoint is not asked.
    `own_logs_only`: one of several backends (see `load_snapshot`).
    """
    state = state or BackendState(connection.backend)
    if connection.problem is not None:
        return state.replace(error=connection.problem, complete=False)
    rate_task = asyncio.ensure_future((resolve_rate if costs else user_rate)(connection))
    partial = None
    if on_partial is not None:
        hook = on_partial

        def partial(snapshot: Snapshot) -> None:
            hook(state.replace(snapshot=snapshot, error=None, complete=False))

    try:
        snapshot = await load_snapshot(
            connection.client,
            settings,
            on_partial=partial,
            cache=cache or RowCache(connection.name, reused=False),
            own_logs_only=own_logs_only,
        )
    except ClientError as exc:
        rate_task.cancel()
        return state.replace(error=failure_text(exc), error_kind=error_kind(exc), complete=False)
    except BaseException:
        rate_task.cancel()
        raise
    rate, source = await rate_task
    # No latency: no command that loads a fleet shows one, and measuring it was one more
    # round trip before a prune's first delete (the app measures its own, after its load).
    return BackendState(connection.backend, snapshot, None, snapshot.complete, None, rate, source)


async def load_fleet(
    connections: Sequence[Connection],
    settings: LogDirSettings,
    on_change: Callable[[Fleet], None] | None = None,
    *,
    costs: bool = True,
) -> Fleet:
    """Every backend loaded concurrently; `on_change` sees the fleet each time one is in.
    `costs`: see `load_backend`. With several backends, a training log joins only the one
    that holds its run, as in the app."""
    fleet = Fleet.loading(connection.backend for connection in connections)
    several = len(connections) > 1

    async def one(connection: Connection) -> None:
        nonlocal fleet
        state = await load_backend(connection, settings, own_logs_only=several, costs=costs)
        fleet = fleet.with_backend(connection.name, state)
        if on_change is not None:
            on_change(fleet)

    await asyncio.gather(*(one(connection) for connection in connections))
    return fleet


class Status(msgspec.Struct, frozen=True):
    """What a quick look at one backend found (`ckpt-tui backends`)."""

    backend: Backend
    described: str
    error: str | None = None
    latency: float | None = None
    """Seconds the checkpoint count took to come back."""
    runs: int | None = None
    checkpoints: int | None = None
    rate: float | None = None
    rate_source: RateSource = RATE_DEFAULT
    error_kind: ErrorKind = UNREACHABLE

    @property
    def reachable(self) -> bool:
        return self.error is None


async def probe(connection: Connection) -> Status:
    """Reachable or not (and what to do), latency, run and checkpoint counts, and rate: one
    small request each, whatever the backend holds."""
    backend = connection.backend
    if connection.problem is not None:
        return Status(backend, backend.place, connection.problem)
    client = connection.client
    try:
        start = time.perf_counter()
        checkpoints = await client.list_checkpoints(limit=1)
        latency = time.perf_counter() - start
        runs = await client.list_training_runs(limit=1, project_id=client.endpoint.project)
    except ClientError as exc:
        described = client.describe()
        return Status(backend, described, failure_text(exc), error_kind=error_kind(exc))
    rate, source = await resolve_rate(connection)
    return Status(
        backend, client.describe(), None, latency, runs.total, checkpoints.total, rate, source
    )
