"""Clients for the backend the options name: the one place that composes client, server and store.

A server is reached over HTTP. A local store (`--local`) is served by the server's own app,
in-process through `httpx.ASGITransport`: the client only receives that transport, so it never
imports the server or the store, and the TUI only receives the opener.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

import httpx

from ckpt_tui.client import (
    DEFAULT_MAX_IN_FLIGHT,
    CheckpointClient,
    Endpoint,
    LocalStoreFailed,
    RetryPolicy,
    Timeouts,
)


async def open_client(
    backend: Endpoint,
    *,
    readonly: bool = False,
    timeouts: Timeouts | None = None,
    retry: RetryPolicy | None = None,
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
) -> CheckpointClient:
    """The client for `backend`; a local store is opened in a worker thread (a large store's
    first scan takes a while: an event loop, e.g. the TUI's, stays responsive meanwhile).
    LocalStoreFailed if the local store cannot be opened."""
    local = None
    if backend.local_bucket is not None:
        local = await asyncio.to_thread(bucket_transport, backend, readonly)
    elif backend.local_store is not None:
        local = await asyncio.to_thread(local_transport, backend.local_store, readonly)
    return _client(backend, local, readonly, timeouts, retry, max_in_flight)


def client_for(
    backend: Endpoint,
    *,
    readonly: bool = False,
    timeouts: Timeouts | None = None,
    retry: RetryPolicy | None = None,
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
) -> CheckpointClient:
    """Like `open_client`, but a local store is opened here and now (blocking)."""
    local = None
    if backend.local_bucket is not None:
        local = bucket_transport(backend, readonly)
    elif backend.local_store is not None:
        local = local_transport(backend.local_store, readonly)
    return _client(backend, local, readonly, timeouts, retry, max_in_flight)


def _client(
    backend: Endpoint,
    local: tuple[httpx.AsyncBaseTransport, Callable[[], None]] | None,
    readonly: bool,
    timeouts: Timeouts | None,
    retry: RetryPolicy | None,
    max_in_flight: int,
) -> CheckpointClient:
    transport, close = local if local is not None else (None, None)
    return CheckpointClient(
        backend,
        transport=transport,
        on_close=close,
        timeouts=timeouts,
        retry=retry,
        readonly=readonly,
        max_in_flight=max_in_flight,
    )


def local_transport(
    store_path: Path, readonly: bool = False
) -> tuple[httpx.AsyncBaseTransport, Callable[[], None]]:
    """The server's app over the store at `store_path`, in-process (no lifespan, no sweeper),
    and what closes the store. A read-only client opens the store read-only."""
    # Imported here: a client of a URL (`ls --url`, the TUI) needs neither (50 ms of imports).
    from ckpt_tui.server import create_app
    from ckpt_tui.store import Store, StoreError

    try:
        # browsing writes nothing; read-only writes nothing at all (no sweep either)
        readonly_or_detect = True if readonly else None
        store = Store.open(store_path, create=False, lazy=True, readonly=readonly_or_detect)
    except OSError as exc:
        message = f"could not open local store {store_path}: {unreadable_text(store_path, exc)}"
        raise LocalStoreFailed(message, detail=exc.strerror or str(exc)) from None
    except StoreError as exc:
        message = f"could not open local store {store_path}: {exc}"
        raise LocalStoreFailed(message, detail=str(exc)) from None
    app = create_app(store, sweep_interval=None)
    return httpx.ASGITransport(app=app, raise_app_exceptions=False), store.close


def bucket_transport(
    endpoint: Endpoint, readonly: bool = False
) -> tuple[httpx.AsyncBaseTransport, Callable[[], None]]:
    """`local_transport` for a bucket location: the same app over a `BucketStore`."""
    from ckpt_tui.server import create_app
    from ckpt_tui.store import StoreError
    from ckpt_tui.store.bucket.opening import open_bucket_store

    location = str(endpoint.local_bucket)
    try:
        store = open_bucket_store(
            location,
            endpoint=endpoint.bucket_endpoint,
            region=endpoint.bucket_region,
            readonly=readonly,
            first_look_behind=True,  # the app paints while the bucket is read; reads wait
        )
    except StoreError as exc:
        message = f"could not open local store {location}: {exc}"
        raise LocalStoreFailed(message, detail=str(exc)) from None
    app = create_app(store, sweep_interval=None)
    return httpx.ASGITransport(app=app, raise_app_exceptions=False), store.close


def unreadable_text(store_path: Path, exc: OSError) -> str:
    """'FOLDER cannot be read: WHY; check ...' naming the first folder from the store's root
    down to the path the error names that cannot be listed (a folder that cannot be searched
    makes the error name a path inside it, which is not the one to fix)."""
    folder = first_unreadable(store_path, exc.filename) if exc.filename else None
    where = folder or (exc.filename and str(exc.filename)) or str(store_path)
    reason = exc.strerror or str(exc)
    if isinstance(exc, PermissionError):
        return f"{where} cannot be read: {reason}; check its permissions, or run as its owner"
    return f"{where} cannot be read: {reason}"


def first_unreadable(store_path: Path, named: object) -> str | None:
    """The first of `store_path` and the folders below it on the way to `named` that
    cannot be listed; None when all can (or `named` is not under `store_path`)."""
    target = Path(str(named))
    if target != store_path and store_path not in target.parents:
        return None
    folders = [store_path, *(p for p in reversed(target.parents) if store_path in p.parents)]
    for folder in [*folders, target]:
        try:
            with os.scandir(folder):
                pass
        except NotADirectoryError:
            return None  # a file: reached
        except FileNotFoundError:
            return None
        except OSError:
            return str(folder)
    return None
