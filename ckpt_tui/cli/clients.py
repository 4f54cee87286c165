"""Clients for the backend the options name: the one place that composes client, server and store.

A server is reached over HTTP. A local store (`--local`) is served by the server's own app,
in-process through `httpx.ASGITransport`: the client only receives that transport, so it never
imports the server or the store, and the TUI only receives the opener.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
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

Opened = tuple[httpx.AsyncBaseTransport, Callable[[], None]]
"""A local store's in-process transport, and what closes the store."""


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
    open_later: bool = False,
    keep_store_id: bool = False,
    begin_bucket_now: bool = False,
) -> CheckpointClient:
    """Like `open_client`, but a local store is opened here and now (blocking); or with
    `open_later` (the app), by its first request, in a thread of its own (`OpenedOnFirstRequest`).
    `keep_store_id`: see `bucket_transport`. `begin_bucket_now` (with `open_later`): a bucket
    starts opening now, in a thread of its own, and its first request waits for that.

    Why a bucket and not a folder: a bucket's open and first look wait on the network, which
    holds no interpreter lock, so they go on while the app imports and paints (the app's
    first request to a bucket left 0.6-1.0 s after `ls`'s did, which began its open before
    any import of the app). A folder's open is this process's CPU: begun early it would only
    slow the first frame.
    """
    opener: Callable[[], Opened] | None = None
    if backend.local_bucket is not None:
        opener = partial(bucket_transport, backend, readonly, keep_store_id)
    elif backend.local_store is not None:
        opener = partial(local_transport, backend.local_store, readonly)
    if opener is None:
        return _client(backend, None, readonly, timeouts, retry, max_in_flight)
    if not open_later:
        return _client(backend, opener(), readonly, timeouts, retry, max_in_flight)
    later = OpenedOnFirstRequest(opener)
    client = _client(backend, (later, later.close), readonly, timeouts, retry, max_in_flight)
    if begin_bucket_now and begins_early(backend):
        import_bucket_store()  # here, not in the thread: see `import_bucket_store`
        later.begin()  # once the client that closes it is made
    return client


def begins_early(backend: Endpoint) -> bool:
    """Whether a local store's open may begin before the app paints: a bucket's, unless it
    reads an AWS profile, as importing boto3 for it is this process's CPU (0.27-0.31 s),
    which would delay the first frame as much (and so would importing the store for it)."""
    from ckpt_tui.locations import UnsupportedLocationError, parse_location, reads_aws_profile

    if backend.local_bucket is None:
        return False
    try:
        location = parse_location(str(backend.local_bucket))
    except UnsupportedLocationError:  # the open says so, on the first request
        return False
    return location is not None and not reads_aws_profile(location)


class OpenedOnFirstRequest(httpx.AsyncBaseTransport):
    """A local store's transport that opens the store (`opener`, in a thread of its own) when
    its first request comes, or when `begin` is called: the app paints its first frame while
    the store opens.

    Importing the server and the store and opening an empty one took 0.13-0.19 s of the
    0.8 s of CPU time before the app's first frame (0.3-0.5 s of wall time at load 5;
    benchmarks/bench_start.py); its first requests come from workers after the first frame.
    A store that cannot be opened fails every request with the same LocalStoreFailed, as a
    client that could not be built shows its problem (nothing is sent). `close` closes the
    store, whether it is open yet, still opening or never opened. There is one open, however
    many requests come first, and a request cancelled while it waits (a reload, a quit)
    cancels its own wait, not the open, which the next request waits for.
    """

    def __init__(self, opener: Callable[[], Opened]) -> None:
        self._opener = opener
        self._guard = threading.Lock()
        self._opened: Opened | None = None
        self._failure: LocalStoreFailed | None = None
        self._closed = False
        self._begun: Future[None] | None = None

    def begin(self) -> Future[None]:
        """Start opening now (once), in a thread of its own; the open, done when it ends. An
        app quit meanwhile closes the store once it is open (`close`); the executable ends
        without waiting for the thread (`end_process`)."""
        if self._begun is not None:
            return self._begun
        begun: Future[None] = Future()
        begun.set_running_or_notify_cancel()  # a cancelled wait cannot cancel it (see above)
        self._begun = begun

        def open_in_thread() -> None:
            try:
                if not self._closed:  # not when the app quit before this thread began
                    self._open_now()
            except LocalStoreFailed as exc:
                self._failure = exc
                begun.set_result(None)
            except BaseException as exc:  # a bug: the requests waiting raise it, the next
                self._begun = None  # request opens again
                begun.set_exception(exc)
            else:
                begun.set_result(None)

        try:
            threading.Thread(target=open_in_thread, name="ckpt-tui-open").start()
        except RuntimeError as exc:  # "can't start new thread": fail, do not wait forever
            self._failure = LocalStoreFailed(f"could not start opening the store: {exc}")
            begun.set_result(None)
        return begun

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        opened = self._opened or await self._open()
        return await opened[0].handle_async_request(request)

    async def _open(self) -> Opened:
        begun = self._begun if self._closed else self.begin()
        if begun is not None:  # held here: an open that failed forgets itself as it ends
            await asyncio.wrap_future(begun)
        if self._failure is not None:
            raise LocalStoreFailed(self._failure.message, detail=self._failure.detail)
        if self._opened is None:  # closed before it opened
            raise LocalStoreFailed("the local store was closed")
        return self._opened

    def _open_now(self) -> None:
        opened = self._opener()
        with self._guard:
            if not self._closed:
                self._opened = opened
                return
        opened[1]()  # closed while it opened (the app quit): close it here

    def close(self) -> None:
        with self._guard:
            self._closed = True
            opened, self._opened = self._opened, None
        if opened is not None:
            opened[1]()


def _client(
    backend: Endpoint,
    local: Opened | None,
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


def local_transport(store_path: Path, readonly: bool = False) -> Opened:
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


def import_bucket_store() -> None:
    """Import what `bucket_transport` imports, in the calling thread: an open begun in a thread
    of its own while the main thread imports the app would otherwise import modules from two
    threads at once, which can deadlock on modules that import each other."""
    import ckpt_tui.server
    import ckpt_tui.store.bucket.opening  # noqa: F401


def bucket_transport(
    endpoint: Endpoint, readonly: bool = False, keep_store_id: bool = False
) -> Opened:
    """`local_transport` for a bucket location: the same app over a `BucketStore`. With
    `keep_store_id` (a command about to change it), the bucket keeps its store id first."""
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
            keep_store_id=keep_store_id,
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
