"""`CheckpointClient`: one async httpx client for every endpoint of the checkpoint REST API.

Checkpoints are named by their tinker path: every per-checkpoint method takes a `CheckpointRef`,
which is a `TinkerPath`, a `tinker://RUN/SEGMENT/NAME` string, or a `Checkpoint` (its
`tinker_path` is used). Runs are named by their run id. Answers are decoded from their bytes
straight into `ckpt_tui.api_types` structs; failures raise `ckpt_tui.client.errors.ClientError`
subclasses.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Callable
from operator import attrgetter
from types import TracebackType
from typing import Any, Literal, TypeVar
from urllib.parse import quote

import httpx
import msgspec

from ckpt_tui import __version__
from ckpt_tui.api_types import (
    Checkpoint,
    CheckpointsPage,
    CheckpointType,
    Health,
    SignedUrls,
    StorageUsage,
    StoreProblems,
    TinkerPath,
    TrainingRun,
    TrainingRunsPage,
    WeightsInfo,
)
from ckpt_tui.client import paging
from ckpt_tui.client.aiohttp_transport import AiohttpTransport
from ckpt_tui.client.endpoint import Endpoint, check_base_url
from ckpt_tui.client.errors import (
    BadRequestError,
    BadResponse,
    ClientError,
    IncompleteListError,
    NotFoundError,
    ReadOnlyError,
    decoded,
)
from ckpt_tui.client.pacing import DEFAULT_MAX_IN_FLIGHT, Pace
from ckpt_tui.client.paging import Listing, Page, Progress
from ckpt_tui.client.retry import Call, RetryPolicy, Target, send_with_retries
from ckpt_tui.client.session import Session

CheckpointRef = TinkerPath | str | Checkpoint
AccessScope = Literal["owned", "accessible"]
API = "/api/v1"
PAGE_SIZE = 10_000
"""Checkpoints asked for per page: 100,000 in 10 requests, the most `ckpt-tui serve` serves a
page (a server that serves fewer is paged by what it serves). Each request costs the client
CPU time of its own: `ls --json` over bench_ls.py's store, run turn about with pages of
5,000, took 565 ms of CPU time against 604."""
RUNS_PAGE_SIZE = 1000
"""Runs asked for per page: 1,000 runs in one request rather than ten (a server that serves
fewer is paged by what it serves)."""
PAGE_CONCURRENCY = 16
"""Pages in flight at once: enough to hide ~50 ms of latency per request behind each other."""
ITEMS_IN_FLIGHT = 100_000
"""Checkpoints in flight at once: 10 pages of 10,000 (about 20 MB of answers; with 5, the
client waited on the network between pages: `ls --json` took 15-78 ms longer, bench_ls.py's
store, turn about), or 16 of 1,000 from a server that caps pages there (the bytes of every
page in flight are held until it is decoded)."""
T = TypeVar("T")
ListItem = TypeVar("ListItem")
_HEALTH = msgspec.json.Decoder(Health)
_RUN = msgspec.json.Decoder(TrainingRun)
_RUNS_PAGE = msgspec.json.Decoder(TrainingRunsPage)
_CHECKPOINTS_PAGE = msgspec.json.Decoder(CheckpointsPage)
_WEIGHTS_INFO = msgspec.json.Decoder(WeightsInfo)
_STORAGE_USAGE = msgspec.json.Decoder(StorageUsage)
_SIGNED_URLS = msgspec.json.Decoder(SignedUrls)
HOSTED_SIGNED_TYPES: tuple[CheckpointType, ...] = ("external",)
"""What a server that does not say signs download URLs for (the hosted service)."""


class Timeouts(msgspec.Struct, frozen=True, gc=False):
    """Seconds to wait for a connection and for each read (writes and the pool use `read`)."""

    connect: float = 5.0
    read: float = 30.0

    def to_httpx(self) -> httpx.Timeout:
        return httpx.Timeout(self.read, connect=self.connect)


def tls_verification(base_url: str) -> ssl.SSLContext | bool:
    """How the client verifies TLS: against the CA bundle (True) for an https server.

    A plain-http server speaks no TLS, so its client gets a context that trusts no
    certificate at all: loading the bundle took 20 ms of every start (benchmarks/bench_ls.py),
    and a TLS connection, should one ever be made through it, fails rather than go unchecked.
    """
    if base_url.startswith("http://"):
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies, with no CA to trust
    return True


def to_tinker_path(ref: CheckpointRef) -> TinkerPath:
    """The `TinkerPath` a ref names; BadRequestError (raised before sending) if it names none."""
    if isinstance(ref, TinkerPath):
        path = ref
    else:
        text = ref.tinker_path if isinstance(ref, Checkpoint) else ref
        try:
            path = TinkerPath.parse(text)
        except ValueError as exc:
            raise BadRequestError(400, str(exc), f"refused before sending: {exc}") from None
    _check_segment(path.run_id, "run id")
    _check_segment(path.name, "checkpoint name")
    return path


def _check_segment(value: str, what: str) -> None:
    # A "." or ".." segment would be collapsed by URL normalisation and hit another route.
    if not value or "/" in value or value in (".", ".."):
        detail = f"{what} {value!r} cannot be one URL path segment"
        raise BadRequestError(400, detail, f"refused before sending: {detail}")


def _checkpoint_route(path: TinkerPath, suffix: str = "") -> str:
    segment, name = path.checkpoint_id.split("/", 1)
    run = quote(path.run_id, safe="")
    return f"{API}/training_runs/{run}/checkpoints/{segment}/{quote(name, safe='')}{suffix}"


class CheckpointClient:
    """Talks to one backend. Use as `async with CheckpointClient(endpoint) as client:`.

    `transport` replaces the network (e.g. `httpx.ASGITransport(app=...)`); a local backend
    needs one: the command line builds it (`ckpt_tui.cli.clients.open_client`), so the client
    never imports the server or the store. `on_close` runs at `aclose()` (e.g. to close a
    store the caller opened for `transport`). The first call
    starts up as the tinker SDK does (client config, then API key or JWT exchange): see
    ckpt_tui.client.session.
    A `readonly` client refuses every change before sending it (ReadOnlyError).
    Changes go at this backend's own `pace` (ckpt_tui.client.pacing), at most `max_in_flight`
    at once.
    """

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        timeouts: Timeouts | None = None,
        retry: RetryPolicy | None = None,
        on_close: Callable[[], None] | None = None,
        readonly: bool = False,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        pace: Pace | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.retry = retry or RetryPolicy()
        self.pace = pace or Pace(max_in_flight, sleep=self.retry.sleep)
        """How many changes are sent at once: adapted to this backend, at most its ceiling."""
        self.readonly = readonly
        self._on_close = on_close
        if transport is None and endpoint.is_local:
            raise ValueError(
                f"{endpoint.describe()}: a local store needs a transport "
                "(ckpt_tui.cli.clients.open_client builds it)"
            )
        if transport is None:
            check_base_url(endpoint.base_url)
        self.session = Session(endpoint, self._send_start_up)
        self._timeouts = timeouts or Timeouts()
        self._transport = transport
        self.network: AiohttpTransport | None = None
        """Over the network, requests go through aiohttp (ckpt_tui.client.aiohttp_transport),
        with connections enough for the pace's ceiling of changes and a listing's pages
        beside them. An in-process transport has none."""
        if transport is None:
            self.network = AiohttpTransport(
                endpoint.base_url,
                tls_verification(endpoint.base_url),
                self.pace.ceiling + PAGE_CONCURRENCY,
            )
        self._http = httpx.AsyncClient(
            base_url=endpoint.base_url,
            headers={"User-Agent": f"ckpt-tui/{__version__}"},
            timeout=self._timeouts.to_httpx(),
            transport=transport or self.network,
            auth=self.session,
        )

    async def __aenter__(self) -> CheckpointClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def describe(self) -> str:
        """Where this client talks to, and with which credential (never the credential)."""
        return self.session.describe()

    async def aclose(self) -> None:
        """Close connections (and the local store, in local mode)."""
        await self.session.aclose()
        await self._http.aclose()
        if self._on_close is not None:
            self._on_close()
            self._on_close = None

    # --- plumbing ----------------------------------------------------------------------------
    @property
    def _target(self) -> Target:
        return Target(self.endpoint.display_url, lambda: self.session.credential_description)

    async def _send(self, call: Call) -> httpx.Response:
        return await send_with_retries(self._http, call, self.retry, self._target)

    async def _send_start_up(self, call: Call, credential: str | None) -> httpx.Response:
        target = Target(self.endpoint.display_url, lambda: credential)
        return await send_with_retries(self._http, call, self.retry, target)

    async def _change(self, call: Call) -> httpx.Response:
        """Send a call that changes something, unless this client is read-only."""
        if self.readonly:
            raise ReadOnlyError(
                f"read-only mode: {call.subject} was not changed on "
                f"{self._target.display_url} (start without --readonly to change it)"
            )
        return await send_with_retries(self._http, call, self.retry, self._target, self.pace)

    async def _decode(self, call: Call, decoder: msgspec.json.Decoder[T]) -> T:
        """The answer's bytes decoded into the API type; BadResponse naming what was wrong."""
        response = await self._send(call)
        return decoded(response, decoder, self.endpoint.display_url, call.subject)

    # --- reads -------------------------------------------------------------------------------
    async def healthz(self) -> bool:
        """True when the server says it is ok (the local server's `GET /api/v1/healthz`)."""
        return (await self._health()).status == "ok"

    async def store_id(self) -> str | None:
        """The id of the store ckpt-tui's own server serves (its health check says it);
        None from a server that says none. Two backends with one store id are one store."""
        return (await self._health()).store_id

    async def _health(self) -> Health:
        call = Call("GET", f"{API}/healthz", "the health check", authenticated=False)
        return await self._decode(call, _HEALTH)

    async def signed_types(self) -> tuple[CheckpointType, ...]:
        """The checkpoint types whose files this server signs download URLs for: what its
        health check says (ckpt-tui's server), else external only (the hosted service)."""
        try:
            said = (await self._health()).signed_downloads
        except ClientError:
            said = None
        return HOSTED_SIGNED_TYPES if said is None else tuple(said)

    async def signed_urls(self, ref: CheckpointRef) -> SignedUrls:
        """One signed download URL per file of a checkpoint, and when they expire."""
        path = to_tinker_path(ref)
        route = _checkpoint_route(path, "/external_weights_urls")
        call = Call("GET", route, f"download URLs of {path}")
        return await self._decode(call, _SIGNED_URLS)

    def file_client(self) -> httpx.AsyncClient:
        """A client for signed file URLs: no credential (the URL is the key, and it may point
        at another host), the same transport (a local store is served in-process). The caller
        closes it."""
        return httpx.AsyncClient(
            headers={"User-Agent": f"ckpt-tui/{__version__}"},
            timeout=self._timeouts.to_httpx(),
            transport=self._transport,
            verify=tls_verification(self.endpoint.base_url),
        )

    def blocking_file_client(self) -> httpx.Client | None:
        """As `file_client`, but blocking, for reading large bodies in worker threads: its
        reads cost a third of the CPU time of the async client's (512 MiB: 0.39 s against
        1.26 s). None when this client has a transport of its own (a local store is served
        in-process, through the async client only). The caller closes it."""
        if self._transport is not None:
            return None
        return httpx.Client(
            headers={"User-Agent": f"ckpt-tui/{__version__}"},
            timeout=self._timeouts.to_httpx(),
            verify=tls_verification(self.endpoint.base_url),
        )

    async def list_training_runs(
        self,
        limit: int = 20,
        offset: int = 0,
        access_scope: AccessScope = "owned",
        project_id: str | None = None,
    ) -> Page[TrainingRun]:
        """One page of runs, newest activity first; only one project's with `project_id`."""
        params: dict[str, object] = {"limit": limit, "offset": offset, "access_scope": access_scope}
        if project_id is not None:
            params["project_id"] = project_id
        call = Call("GET", f"{API}/training_runs", "the list of training runs", params)
        page = await self._decode(call, _RUNS_PAGE)
        return _page(page.training_runs, offset, page.cursor.total_count, page.store_problems)

    async def get_training_run(self, run_id: str) -> TrainingRun:
        """One run; NotFoundError naming the id if unknown."""
        _check_segment(run_id, "run id")
        subject = f"training run {run_id!r}"
        call = Call("GET", f"{API}/training_runs/{quote(run_id, safe='')}", subject)
        return await self._decode(call, _RUN)

    async def list_run_checkpoints(self, run_id: str) -> list[Checkpoint]:
        """A run's checkpoints, oldest first (not paginated)."""
        _check_segment(run_id, "run id")
        route = f"{API}/training_runs/{quote(run_id, safe='')}/checkpoints"
        call = Call("GET", route, f"the checkpoints of training run {run_id!r}")
        return (await self._decode(call, _CHECKPOINTS_PAGE)).checkpoints

    async def list_checkpoints(self, limit: int = 100, offset: int = 0) -> Page[Checkpoint]:
        """One page of all my checkpoints, newest first."""
        params = {"limit": limit, "offset": offset}
        call = Call("GET", f"{API}/checkpoints", "the list of checkpoints", params)
        page = await self._decode(call, _CHECKPOINTS_PAGE)
        if page.cursor is None:
            message = f"{self._target.display_url} answered {call.subject} with no cursor"
            raise BadResponse(message, detail="Object missing required field `cursor`")
        return _page(page.checkpoints, offset, page.cursor.total_count, page.store_problems)

    async def weights_info(self, ref: CheckpointRef) -> WeightsInfo:
        """What a LoRA size estimate needs about a checkpoint's model."""
        path = to_tinker_path(ref)
        body = {"tinker_path": str(path)}
        call = Call("POST", f"{API}/weights_info", f"weights info of {path}", body=body)
        return await self._decode(call, _WEIGHTS_INFO)

    async def storage_usage(self, project_id: str | None = None) -> StorageUsage | None:
        """What the server bills for checkpoint storage, and at which rate; None when it has
        no billing endpoint (404: e.g. `ckpt-tui serve` without --storage-rate)."""
        params = None if project_id is None else {"project_id": project_id}
        route = f"{API}/billing/usage/checkpoints/current"
        call = Call("GET", route, "the checkpoint storage usage", params)
        try:
            return await self._decode(call, _STORAGE_USAGE)
        except NotFoundError:
            return None

    # --- writes ------------------------------------------------------------------------------
    async def delete_checkpoint(self, ref: CheckpointRef) -> None:
        """Delete; a 404 answering a retry of a possibly-performed delete counts as done."""
        path = to_tinker_path(ref)
        call = Call("DELETE", _checkpoint_route(path), f"checkpoint {path}")
        await self._change(_with_done(call, 404))

    async def publish(self, ref: CheckpointRef) -> None:
        """Make public; ConflictError if it already was (unless a retry caused that)."""
        path = to_tinker_path(ref)
        call = Call("POST", _checkpoint_route(path, "/publish"), f"checkpoint {path}")
        await self._change(_with_done(call, 409))

    async def unpublish(self, ref: CheckpointRef) -> None:
        """Make private; ConflictError if it already was (unless a retry caused that)."""
        path = to_tinker_path(ref)
        call = Call("DELETE", _checkpoint_route(path, "/publish"), f"checkpoint {path}")
        await self._change(_with_done(call, 409))

    async def set_ttl(self, ref: CheckpointRef, ttl_seconds: int | None) -> None:
        """Expire `ttl_seconds` from now (3600 s .. 10 years); None removes the expiry."""
        path = to_tinker_path(ref)
        body = {"ttl_seconds": ttl_seconds}
        await self._change(
            Call("PUT", _checkpoint_route(path, "/ttl"), f"checkpoint {path}", None, body)
        )

    # --- whole lists -------------------------------------------------------------------------
    def iter_checkpoint_pages(
        self, page_size: int = PAGE_SIZE, concurrency: int = PAGE_CONCURRENCY
    ) -> AsyncIterator[Page[Checkpoint]]:
        """One read of `/checkpoints`: pages as they arrive (any order; each knows its offset)."""
        return paging.iter_pages(
            self.list_checkpoints, page_size, concurrency, items_in_flight=ITEMS_IN_FLIGHT
        )

    async def read_all_checkpoints(
        self,
        page_size: int = PAGE_SIZE,
        concurrency: int = PAGE_CONCURRENCY,
        on_page: paging.OnPage[Checkpoint] | None = None,
        known: Callable[[list[Checkpoint]], list[Checkpoint]] | None = None,
    ) -> Listing[Checkpoint]:
        """Every checkpoint, newest first, de-duplicated; `complete` says whether it is whole.

        `known(items)` may swap each page's checkpoints for equal ones the caller already
        holds, as the page arrives (so the page's own copies are freed at once).
        """
        key = attrgetter("tinker_path")

        async def fetch(limit: int, offset: int) -> Page[Checkpoint]:
            page = await self.list_checkpoints(limit, offset)
            return page if known is None else msgspec.structs.replace(page, items=known(page.items))

        return await paging.read_whole(
            fetch,
            key,
            page_size,
            concurrency,
            on_page,
            items_in_flight=ITEMS_IN_FLIGHT,
        )

    async def list_all_checkpoints(
        self,
        page_size: int = PAGE_SIZE,
        concurrency: int = PAGE_CONCURRENCY,
        on_progress: Progress | None = None,
    ) -> list[Checkpoint]:
        """Every checkpoint, newest first; IncompleteListError if the list cannot be read whole."""
        listing = await self.read_all_checkpoints(
            page_size, concurrency, _progress_hook(on_progress)
        )
        return self._whole(listing, "the list of checkpoints")

    async def read_all_training_runs(
        self,
        page_size: int = RUNS_PAGE_SIZE,
        concurrency: int = 8,
        access_scope: AccessScope = "owned",
        project_id: str | None = None,
        on_page: paging.OnPage[TrainingRun] | None = None,
    ) -> Listing[TrainingRun]:
        """Every run, newest activity first, de-duplicated by id; see `read_all_checkpoints`."""

        async def fetch(limit: int, offset: int) -> Page[TrainingRun]:
            return await self.list_training_runs(limit, offset, access_scope, project_id)

        key = attrgetter("training_run_id")
        return await paging.read_whole(fetch, key, page_size, concurrency, on_page)

    async def list_all_training_runs(
        self,
        page_size: int = RUNS_PAGE_SIZE,
        concurrency: int = 8,
        on_progress: Progress | None = None,
        access_scope: AccessScope = "owned",
        project_id: str | None = None,
    ) -> list[TrainingRun]:
        """Every run (of one `project_id`, if given); IncompleteListError if not read whole."""
        hook = _progress_hook(on_progress)
        listing = await self.read_all_training_runs(
            page_size, concurrency, access_scope, project_id, hook
        )
        return self._whole(listing, "the list of training runs")

    def _whole(self, listing: Listing[ListItem], what: str) -> list[ListItem]:
        if not listing.complete:
            message = f"{what} at {self._target.display_url} is incomplete: {listing.problem}"
            raise IncompleteListError(message, detail=listing.problem)
        return listing.items


def _page(
    items: list[ListItem], offset: int, total: int, problems: StoreProblems | None
) -> Page[ListItem]:
    """A page, with what ckpt-tui's own server said its store could not read."""
    if problems is None:
        return Page(items, offset, total)
    return Page(items, offset, total, 1, tuple(problems.lines), problems.complete)


def _progress_hook(on_progress: Progress | None) -> paging.OnPage[Any] | None:
    """Report (loaded, total) per page as an `on_page` hook; a new read starts from zero."""
    if on_progress is None:
        return None
    loaded = {"read": 0, "items": 0}

    async def hook(page: Page[Any]) -> None:
        if page.read != loaded["read"]:
            loaded.update(read=page.read, items=0)
        loaded["items"] += len(page.items)
        on_progress(loaded["items"], max(page.total, loaded["items"]))

    return hook


def _with_done(call: Call, status: int) -> Call:
    return Call(call.method, call.path, call.subject, call.params, call.body, frozenset({status}))
