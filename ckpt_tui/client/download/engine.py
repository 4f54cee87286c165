"""Download one checkpoint: signed URLs, several files in flight, each into a `.part` file
resumed with `Range` (checked against its ETag), verified, then all renamed at once.

Nothing is renamed until every file is whole and verified, so a failure (a full disk, a
refused write, a file that does not check out) leaves `.part` files and the state file for a
rerun to resume, and no half-renamed folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

import httpx
import msgspec

from ckpt_tui.api_types import CheckpointType, TinkerPath
from ckpt_tui.client.client import CheckpointClient
from ckpt_tui.client.download import folder as target_folder
from ckpt_tui.client.download.targets import STATE_FILE, UnsafeDownload, part_path, target_paths
from ckpt_tui.client.download.urls import UrlBook
from ckpt_tui.client.download.verify import VerifyError, verify_part
from ckpt_tui.timekeeping.clock import SYSTEM_CLOCK, Clock

FILES_IN_FLIGHT = 4
SEGMENT_BYTES = 256 * 1024 * 1024
"""Bytes asked for per request: each request takes a URL from the book, so a long file's
URLs are signed again between segments when they near expiry."""
REPORT_BYTES = 1024 * 1024
"""Bytes a worker thread reads between progress reports (each one wakes the event loop).
Every 4 MiB cost less CPU (1 GiB in 8 shards: 1.58 s against 1.78-1.89 s, serve on loopback)
but a file that stalls then shows up to 4 MiB less than has arrived: kept at 1 MiB."""
REPORT_SECONDS = 0.25
"""... or sooner, once this long has passed since its last report, so a slow link still
shows its progress."""
MAX_ATTEMPTS = 5
"""Connection failures in a row before the download of a file gives up (a rerun resumes)."""
FRESH_START_BYTES = 1024 * 1024
"""A cut (or an answer short of the range asked) after at least this many bytes arrived
starts the count of failures again: a server that cuts long answers now and then (a
bucket's `serve` whose reads of the bucket end after 30 s, for a slow client) is no
failure, while one that sends a few bytes at a time still ends the download after
MAX_ATTEMPTS; a file takes at most MAX_ATTEMPTS requests per MiB of it."""


class DownloadError(Exception):
    """The download did not finish; the message says why and what to do."""


class FileSpec(msgspec.Struct, frozen=True, gc=False):
    name: str
    size: int
    etag: str


class FileProgress(msgspec.Struct):
    """How far one file is: `done` of its `size` bytes (from its `.part` file on a resume)."""

    size: int
    done: int = 0
    whole: bool = False


class Progress(msgspec.Struct):
    """How far the download is; `fetched` counts only bytes sent this run. `by_file`, each
    file's own progress by its name, fills in once the server has said each one's size."""

    total: int = 0
    done: int = 0
    fetched: int = 0
    files: int = 0
    files_done: int = 0
    by_file: dict[str, FileProgress] = msgspec.field(default_factory=dict)


class Result(msgspec.Struct, frozen=True):
    tinker_path: str
    folder: str
    files: int
    bytes: int
    fetched_bytes: int


OnProgress = Callable[[Progress], None]


def cannot_sign(path: TinkerPath, where: str, signed: Iterable[CheckpointType]) -> str:
    """Why this backend cannot hand out this checkpoint's files, and what would work."""
    kinds = ", ".join(signed) or "none"
    return (
        f"{where} does not sign downloads of {path.checkpoint_type} checkpoints (it signs: "
        f"{kinds}), so {path} cannot be downloaded from it. What works: export it from a "
        "training session as an external checkpoint (save_weights_external in the tinker "
        "SDK) and download that tinker://RUN/external_weights/NAME path, or serve the store "
        "with `ckpt-tui serve`, which signs every checkpoint type"
    )


async def download(
    client: CheckpointClient,
    path: TinkerPath,
    folder: Path,
    *,
    force: bool = False,
    clock: Clock = SYSTEM_CLOCK,
    on_progress: OnProgress | None = None,
    in_flight: int = FILES_IN_FLIGHT,
    segment_bytes: int = SEGMENT_BYTES,
) -> Result:
    """Download `path`'s files into `folder`; DownloadError (or UnsafeDownload) if it did not
    finish. A folder holding an unfinished download of `path` is resumed."""
    signed = await client.signed_types()
    if path.checkpoint_type not in signed:
        raise DownloadError(cannot_sign(path, client.endpoint.display_url, signed))
    book = UrlBook(lambda: client.signed_urls(path), clock)
    folder = folder.expanduser().resolve()
    targets = target_paths(folder, (await book.current()).urls)
    try:
        state = target_folder.prepare(folder, str(path), targets, force)
    except OSError as exc:
        raise DownloadError(f"cannot use {folder}: {exc.strerror}") from exc
    progress = Progress(files=len(targets))
    report = on_progress or (lambda _: None)
    blocking = client.blocking_file_client()
    async with client.file_client() as files, _closing(blocking):
        job = _Job(files, blocking, book, targets, progress, report, segment_bytes)
        specs = await _bounded([functools.partial(job.head, name) for name in targets], in_flight)
        resumed = job.start_offsets(specs, state)
        try:
            target_folder.save(folder, state)
        except OSError as exc:
            raise _write_error(folder / STATE_FILE, exc) from exc
        progress.total = sum(spec.size for spec in specs)
        progress.done = sum(resumed.values())
        progress.by_file = {s.name: FileProgress(s.size, resumed[s.name]) for s in specs}
        report(progress)
        await _bounded([functools.partial(job.fetch, s, resumed[s.name]) for s in specs], in_flight)
    await asyncio.to_thread(_verify_all, specs, targets)
    _rename_all(specs, targets)
    target_folder.finish(folder)
    return Result(str(path), str(folder), len(specs), progress.total, progress.fetched)


class _Job:
    def __init__(
        self,
        files: httpx.AsyncClient,
        blocking: httpx.Client | None,
        book: UrlBook,
        targets: dict[str, Path],
        progress: Progress,
        report: OnProgress,
        segment_bytes: int,
    ) -> None:
        self.files = files
        self.blocking = blocking
        self.loop = asyncio.get_running_loop()
        self.lock = threading.Lock()
        self.book = book
        self.targets = targets
        self.progress = progress
        self.report = report
        self.segment_bytes = segment_bytes

    async def head(self, name: str) -> FileSpec:
        """The file's size and ETag, as the server says them now."""
        answer = await self._send("HEAD", name, {})
        try:
            size = int(answer.headers["content-length"])
            etag = answer.headers["etag"]
        except (KeyError, ValueError):
            raise DownloadError(f"{name}: the server sent no length or ETag for it") from None
        if size < 0:
            raise DownloadError(f"{name}: the server sent a negative length")
        return FileSpec(name, size, etag)

    def start_offsets(
        self, specs: list[FileSpec], state: target_folder.DownloadState
    ) -> dict[str, int]:
        """Where each file goes on from: its `.part` file's length when the server's ETag is
        the one it was started with; else from the start (the part is emptied)."""
        offsets: dict[str, int] = {}
        for spec in specs:
            part = part_path(self.targets[spec.name])
            have = part.stat().st_size if part.is_file() and not part.is_symlink() else 0
            if state.etags.get(spec.name) != spec.etag or have > spec.size:
                have = 0
            offsets[spec.name] = have
            state.etags[spec.name] = spec.etag
        return offsets

    async def fetch(self, spec: FileSpec, offset: int) -> None:
        part = part_path(self.targets[spec.name])
        try:
            part.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise _write_error(part, exc) from exc
        try:
            os.ftruncate(fd, offset)
            await self._fill(fd, spec, offset, part)
        finally:
            os.close(fd)
        self.progress.files_done += 1
        self.progress.by_file[spec.name].whole = True
        self.report(self.progress)

    async def _fill(self, fd: int, spec: FileSpec, offset: int, part: Path) -> None:
        failures = 0
        while offset < spec.size:
            end = min(offset + self.segment_bytes, spec.size) - 1
            headers = {"Range": f"bytes={offset}-{end}", "If-Range": spec.etag}
            try:
                reached = await self._segment(fd, spec, offset, headers, part)
                if reached <= end:  # short of the range asked (or no byte): as a cut
                    raise httpx.ReadError("the server sent less of the range than asked for")
                offset = reached
            except httpx.TransportError as exc:
                # Written in order: the part's length is where it stopped.
                reached = os.fstat(fd).st_size
                failures = 1 if reached - offset >= FRESH_START_BYTES else failures + 1
                offset = reached
                if failures >= MAX_ATTEMPTS:
                    raise DownloadError(
                        f"{spec.name}: the connection failed {failures} times ({exc}); "
                        "run the download again to resume it"
                    ) from None

    async def _segment(
        self, fd: int, spec: FileSpec, offset: int, headers: dict[str, str], part: Path
    ) -> int:
        if self.blocking is not None:
            return await self._segment_in_thread(fd, spec, offset, headers, part)
        async with self._stream(spec.name, headers) as answer:
            _check_range(answer, spec, offset)
            async for chunk in answer.aiter_bytes():  # as it comes: a cut keeps what arrived
                offset = _write_chunk(fd, chunk, offset, spec, part)
                self._add(spec.name, len(chunk))
                self.report(self.progress)
        return offset

    async def _segment_in_thread(
        self, fd: int, spec: FileSpec, offset: int, headers: dict[str, str], part: Path
    ) -> int:
        """`_segment` with the body read in a worker thread, on a duplicate of `fd` that the
        thread closes itself: a cancelled download stops the thread at its next chunk, and
        the caller's closing `fd` can never redirect its writes."""
        for renewed in (False, True):
            url = await self.book.url(spec.name)
            stop = threading.Event()
            own = os.dup(fd)
            read = functools.partial(self._read_blocking, own, spec, offset, headers, part)
            try:
                status, reached = await asyncio.to_thread(read, url, stop)
            except asyncio.CancelledError:
                stop.set()
                raise
            if status != 403 or renewed:
                return reached
            await self.book.renew()
        return offset  # not reached: the loop returns on its second turn

    def _read_blocking(
        self,
        fd: int,
        spec: FileSpec,
        offset: int,
        headers: dict[str, str],
        part: Path,
        url: str,
        stop: threading.Event,
    ) -> tuple[int, int]:
        """(status, offset reached): a ranged GET of `url` written into `fd` (then closed)."""
        assert self.blocking is not None
        unreported, reported_at = 0, time.monotonic()
        try:
            if stop.is_set():  # cancelled before this thread began: ask for nothing
                return 0, offset
            with self.blocking.stream("GET", url, headers=headers) as answer:
                if answer.status_code == 403:
                    return 403, offset
                if answer.status_code >= 400:
                    answer.read()
                    _check_ok(answer, spec.name)
                _check_range(answer, spec, offset)
                for chunk in answer.iter_bytes():
                    if stop.is_set():
                        break
                    offset = _write_chunk(fd, chunk, offset, spec, part)
                    unreported += len(chunk)
                    if unreported >= REPORT_BYTES or _overdue(reported_at):
                        self._count(spec.name, unreported)
                        unreported, reported_at = 0, time.monotonic()
                return answer.status_code, offset
        finally:
            self._count(spec.name, unreported)  # also what arrived before a cut
            os.close(fd)

    def _count(self, name: str, fetched: int) -> None:
        """Add bytes a worker thread fetched; the report runs on the event loop."""
        with self.lock:
            self._add(name, fetched)
        self.loop.call_soon_threadsafe(self.report, self.progress)

    def _add(self, name: str, fetched: int) -> None:
        self.progress.done += fetched
        self.progress.fetched += fetched
        self.progress.by_file[name].done += fetched

    def _stream(self, name: str, headers: dict[str, str]) -> _RenewingStream:
        return _RenewingStream(self, name, headers)

    async def _send(self, method: str, name: str, headers: dict[str, str]) -> httpx.Response:
        """One request to a file's URL; a refused URL (403) is signed again once."""
        for renewed in (False, True):
            answer = await self.files.request(method, await self.book.url(name), headers=headers)
            if answer.status_code != 403 or renewed:
                break
            await self.book.renew()
        _check_ok(answer, name)
        return answer


class _RenewingStream:
    """`async with`: a streamed GET of a file's URL, signed again once if refused."""

    def __init__(self, job: _Job, name: str, headers: dict[str, str]) -> None:
        self.job, self.name, self.headers = job, name, headers
        self.answer: httpx.Response | None = None

    async def __aenter__(self) -> httpx.Response:
        for renewed in (False, True):
            url = await self.job.book.url(self.name)
            request = self.job.files.build_request("GET", url, headers=self.headers)
            answer = await self.job.files.send(request, stream=True)
            if answer.status_code != 403 or renewed:
                break
            await answer.aclose()
            await self.job.book.renew()
        self.answer = answer
        if answer.status_code >= 400:
            await answer.aread()
            await answer.aclose()
            _check_ok(answer, self.name)
        return answer

    async def __aexit__(self, *exc: object) -> None:
        if self.answer is not None:
            await self.answer.aclose()


def _overdue(reported_at: float) -> bool:
    return time.monotonic() - reported_at >= REPORT_SECONDS


def _write_chunk(fd: int, chunk: bytes, offset: int, spec: FileSpec, part: Path) -> int:
    """Write `chunk` of `spec`'s answer at `offset` of its `.part` file; the next offset.
    More bytes than the file's length is the server's error, not written."""
    if offset + len(chunk) > spec.size:
        raise DownloadError(f"{spec.name}: the server sent more than its length")
    try:
        os.pwrite(fd, chunk, offset)
    except OSError as exc:
        raise _write_error(part, exc) from exc
    return offset + len(chunk)


def _check_range(answer: httpx.Response, spec: FileSpec, offset: int) -> None:
    """DownloadError unless the answer is the range asked for, of the version started."""
    if answer.status_code != 206:
        raise DownloadError(
            f"{spec.name} changed on the server while it was downloaded (it answered "
            f"{answer.status_code} to a range of version {spec.etag}); run it again"
        )
    if not answer.headers.get("content-range", "").startswith(f"bytes {offset}-"):
        raise DownloadError(f"{spec.name}: the server sent another range than asked")


@contextlib.asynccontextmanager
async def _closing(client: httpx.Client | None) -> AsyncIterator[None]:
    try:
        yield
    finally:
        if client is not None:
            client.close()


def _check_ok(answer: httpx.Response, name: str) -> None:
    if answer.status_code < 400:
        return
    try:
        detail = str(answer.json().get("detail", ""))[:300]
    except ValueError:
        detail = ""
    raise DownloadError(f"{name}: the server answered {answer.status_code} {detail}".rstrip())


def _write_error(part: Path, exc: OSError) -> DownloadError:
    return DownloadError(
        f"cannot write {part}: {exc.strerror or exc}; nothing was renamed, and a rerun "
        "resumes once there is room (or give another --output)"
    )


async def _bounded(jobs: list[Callable[[], Awaitable[Any]]], limit: int) -> list[Any]:
    """Run `jobs` at most `limit` at once; the first failure cancels the rest and is raised.

    A job waiting for the gate starts no more once one has failed: the failing job frees its
    place before the failure reaches here, and a job started then would send its request
    (from its worker thread) after the download had already failed and returned.
    """
    gate = asyncio.Semaphore(limit)
    failed = False

    async def gated(job: Callable[[], Awaitable[Any]]) -> Any:
        nonlocal failed
        async with gate:
            if failed:
                return None  # the first failure is what the download raises
            try:
                return await job()
            except BaseException:
                failed = True
                raise

    tasks = [asyncio.ensure_future(gated(job)) for job in jobs]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def _verify_all(specs: list[FileSpec], targets: dict[str, Path]) -> None:
    for spec in specs:
        verify_part(part_path(targets[spec.name]), spec.name, spec.size)


def _rename_all(specs: list[FileSpec], targets: dict[str, Path]) -> None:
    """Every verified part to its name; only after all are whole, so a failure here leaves
    at most renamed whole files beside whole `.part` files."""
    for spec in specs:
        target = targets[spec.name]
        try:
            os.replace(part_path(target), target)
        except OSError as exc:
            raise DownloadError(f"cannot rename {part_path(target)}: {exc.strerror}") from exc


__all__ = [
    "DownloadError",
    "FileProgress",
    "Progress",
    "Result",
    "UnsafeDownload",
    "VerifyError",
    "download",
]
