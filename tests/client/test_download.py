"""ckpt_tui.client.download against a real server (behind a small fault-injecting tap)."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ckpt_tui.api_types import TinkerPath
from ckpt_tui.client import CheckpointClient, Endpoint
from ckpt_tui.client.download import (
    DownloadError,
    FolderRefused,
    Progress,
    VerifyError,
    download,
    engine,
)
from ckpt_tui.server import create_app
from ckpt_tui.server.signing import SIGNED_PREFIX, UrlSigner
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support.file_tap import FileTap
from tests.support.live_server import run_server
from tests.support.safetensors_files import write_real
from tests.support.small_disk import small_tmpfs

PATH = TinkerPath.parse("tinker://run-1/external_weights/final")
BIG = os.urandom(300_000)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, bytes]:
    shard = write_real(tmp_path / "shard.safetensors", {"w": ("F32", [64, 64])})
    return {
        "model.safetensors": shard.read_bytes(),
        "big.bin": BIG,
        "sub/config.json": b'{"a": 1}',
        "empty.txt": b"",
    }


@pytest.fixture
def tap(store: Store, files: dict[str, bytes]) -> FileTap:
    store.create_run("run-1", "base/model")
    store.add_checkpoint("run-1", "external_weights/final", files)
    return FileTap(create_app(store, sweep_interval=None, url_signer=UrlSigner(600)))


@pytest.fixture
def url(tap: FileTap) -> Iterator[str]:
    with run_server(tap) as base:
        yield base


@pytest.fixture
async def client(url: str) -> AsyncIterator[CheckpointClient]:
    async with CheckpointClient(Endpoint.remote(url)) as opened:
        yield opened


def held(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


async def test_downloads_exactly_the_checkpoint(
    client: CheckpointClient, tmp_path: Path, files: dict[str, bytes], clock: FixedClock
) -> None:
    seen: list[int] = []
    result = await download(
        client, PATH, tmp_path / "out", clock=clock, on_progress=lambda p: seen.append(p.done)
    )
    assert held(tmp_path / "out") == files  # no .part, no state file, nothing extra
    assert result.bytes == result.fetched_bytes == sum(map(len, files.values()))
    assert seen[-1] == result.bytes


async def test_a_cut_connection_is_resumed_not_restarted(
    client: CheckpointClient,
    tap: FileTap,
    tmp_path: Path,
    files: dict[str, bytes],
    clock: FixedClock,
) -> None:
    tap.cut_after = 100_000
    out = tmp_path / "out"
    result = await download(client, PATH, out, clock=clock, in_flight=1, segment_bytes=1 << 30)
    assert held(tmp_path / "out") == files
    assert tap.statuses.count(206) > len(files)  # big.bin came in several ranges
    assert tap.sent == sum(map(len, files.values()))  # every byte sent once
    assert result.fetched_bytes == tap.sent


async def test_a_rerun_fetches_only_the_rest(
    client: CheckpointClient,
    tap: FileTap,
    tmp_path: Path,
    files: dict[str, bytes],
    clock: FixedClock,
) -> None:
    out = tmp_path / "out"
    tap.cut_after, tap.refuse_after_cut = 120_000, True
    with pytest.raises(DownloadError, match="503"):
        await download(client, PATH, out, clock=clock, in_flight=1, segment_bytes=1 << 30)
    assert not (out / "big.bin").exists()  # nothing renamed
    # The failure started no other file: none asks the server for anything once it has failed.
    assert [part.name for part in out.rglob("*.part")] == ["big.bin.part"]
    kept = (out / "big.bin.part").stat().st_size
    assert kept > 0
    tap.reset()
    result = await download(client, PATH, out, clock=clock)
    assert held(out) == files
    total = sum(map(len, files.values()))
    assert result.fetched_bytes == tap.sent == total - kept


async def test_a_changed_file_starts_over(
    client: CheckpointClient, tap: FileTap, store: Store, tmp_path: Path, clock: FixedClock
) -> None:
    out = tmp_path / "out"
    tap.cut_after, tap.refuse_after_cut = 120_000, True
    with pytest.raises(DownloadError):
        await download(client, PATH, out, clock=clock, in_flight=1, segment_bytes=1 << 30)
    changed = bytes(reversed(BIG))
    folder = store.checkpoint_dir("run-1", "external_weights/final")
    (folder / "big.bin").write_bytes(changed)
    store.refresh_checkpoint("run-1", "external_weights/final")
    tap.reset()
    await download(client, PATH, out, clock=clock)
    assert (out / "big.bin").read_bytes() == changed


async def test_urls_are_signed_again_before_they_expire(
    client: CheckpointClient,
    tap: FileTap,
    tmp_path: Path,
    files: dict[str, bytes],
    clock: FixedClock,
) -> None:
    def later(progress: Progress) -> None:
        clock.advance(timedelta(seconds=200))  # a 600 s URL is stale after two chunks

    # One file at a time: the clock then moves only between requests, as each one's progress
    # arrives. With several in flight, other files' reports could move it 600 s between a
    # request taking its URL and the server checking it (seen on a busy machine), which no
    # real clock does.
    await download(
        client,
        PATH,
        tmp_path / "out",
        clock=clock,
        on_progress=later,
        segment_bytes=64_000,
        in_flight=1,
    )
    assert held(tmp_path / "out") == files
    assert tap.url_asks > 2
    assert 403 not in tap.statuses  # renewed before expiry, never after a refusal


async def test_a_complete_folder_needs_force_an_other_one_is_refused(
    client: CheckpointClient, tmp_path: Path, files: dict[str, bytes], clock: FixedClock
) -> None:
    out = tmp_path / "out"
    await download(client, PATH, out, clock=clock)
    with pytest.raises(FolderRefused, match="--force"):
        await download(client, PATH, out, clock=clock)
    await download(client, PATH, out, clock=clock, force=True)
    assert held(out) == files
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "mine.txt").write_text("keep")
    with pytest.raises(FolderRefused, match="other files"):
        await download(client, PATH, tmp_path / "other", clock=clock, force=True)
    assert held(tmp_path / "other") == {"mine.txt": b"keep"}


async def test_a_bad_safetensors_file_keeps_its_part(
    store: Store, tmp_path: Path, clock: FixedClock
) -> None:
    store.create_run("run-2", "base/model")
    store.add_checkpoint("run-2", "weights/0001", {"adapter.safetensors": b"\xff" * 64})
    with run_server(create_app(store, sweep_interval=None)) as base:
        async with CheckpointClient(Endpoint.remote(base)) as client:
            path = TinkerPath.parse("tinker://run-2/weights/0001")
            with pytest.raises(VerifyError, match="is kept"):
                await download(client, path, tmp_path / "out", clock=clock)
    assert (tmp_path / "out" / "adapter.safetensors.part").exists()
    assert not (tmp_path / "out" / "adapter.safetensors").exists()


async def test_a_server_that_cannot_sign_says_what_works(
    store: Store, tmp_path: Path, clock: FixedClock
) -> None:
    store.create_run("run-2", "base/model")
    store.add_checkpoint("run-2", "weights/0001", {"adapter.bin": b"w"})
    app = create_app(store, sweep_interval=None, signed_types=("external",))
    with run_server(app) as base:
        async with CheckpointClient(Endpoint.remote(base)) as client:
            path = TinkerPath.parse("tinker://run-2/weights/0001")
            with pytest.raises(DownloadError, match="save_weights_external"):
                await download(client, path, tmp_path / "out", clock=clock)
    assert not (tmp_path / "out").exists()


async def test_a_full_disk_is_a_clear_error_and_nothing_is_renamed(
    client: CheckpointClient, tmp_path: Path, clock: FixedClock
) -> None:
    small = tmp_path / "small"
    small.mkdir()
    with small_tmpfs(small, "64k"):
        with pytest.raises(DownloadError, match="No space left"):
            await download(client, PATH, small / "out", clock=clock)
        names = {p.name for p in (small / "out").rglob("*") if p.is_file()}
        assert "big.bin" not in names and "model.safetensors" not in names


async def test_a_refused_write_is_a_clear_error(
    client: CheckpointClient, tmp_path: Path, clock: FixedClock
) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    with small_tmpfs(locked, "1m"):
        subprocess.run(["mount", "-o", "remount,ro", str(locked)], check=True, timeout=60)
        with pytest.raises(DownloadError, match="Read-only file system"):
            await download(client, PATH, locked / "out", clock=clock)
        assert list(locked.iterdir()) == []


async def test_progress_goes_file_by_file_and_a_cancelled_download_resumes(
    client: CheckpointClient,
    tap: FileTap,
    tmp_path: Path,
    files: dict[str, bytes],
    clock: FixedClock,
) -> None:
    """Each report says every file's own bytes; cancelling (the TUI's stop) leaves the
    `.part` files, and the next run fetches only what is missing."""
    out, reports = tmp_path / "out", []
    tap.stall_after = 100_000

    def seen(progress: Progress) -> None:
        reports.append({name: f.done for name, f in progress.by_file.items()})

    run = asyncio.ensure_future(
        download(client, PATH, out, clock=clock, in_flight=1, on_progress=seen)
    )
    try:
        part = out / "big.bin.part"
        for _ in range(2000):  # until the stalled file's first bytes are on disk
            if part.is_file() and part.stat().st_size > 0:
                break
            await asyncio.sleep(0.01)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
    finally:
        tap.release.set()
    assert not (out / "big.bin").exists()  # nothing renamed
    assert set(reports[-1]) == set(files)  # every file's size was known before bytes came
    tap.reset()
    finals: list[Progress] = []
    result = await download(client, PATH, out, clock=clock, on_progress=finals.append)
    assert held(out) == files
    assert result.fetched_bytes == tap.sent < sum(map(len, files.values()))
    last = finals[-1].by_file
    assert {name: (f.size, f.done, f.whole) for name, f in last.items()} == {
        name: (len(data), len(data), True) for name, data in files.items()
    }


@pytest.mark.parametrize("seconds", [1e9, 0.0])
async def test_worker_threads_report_every_few_mebibytes_or_when_a_report_is_overdue(
    store: Store, tmp_path: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch, seconds: float
) -> None:
    """Each report wakes the event loop: a fast download reports every `REPORT_BYTES`, and a
    slow one (here: every report overdue at once) reports each chunk as it comes."""
    size = 6 * engine.REPORT_BYTES
    monkeypatch.setattr(engine, "REPORT_SECONDS", seconds)
    store.create_run("run-1", "base/model")
    store.add_checkpoint("run-1", "external_weights/final", {"big.bin": bytes(size)})
    reports: list[int] = []
    app = create_app(store, sweep_interval=None, url_signer=UrlSigner(600))
    with run_server(app) as base:
        async with CheckpointClient(Endpoint.remote(base)) as client:
            await download(
                client,
                PATH,
                tmp_path / "out",
                clock=clock,
                on_progress=lambda p: reports.append(p.done),
            )
    assert reports[-1] == size
    from_bytes = [done for done in reports if 0 < done < size]
    if seconds:
        assert len(from_bytes) <= size // engine.REPORT_BYTES  # the start, and whole: 2 more
    else:
        assert len(from_bytes) > size // engine.REPORT_BYTES


async def test_cuts_after_a_mebibyte_or_more_each_are_no_failure(
    store: Store, tmp_path: Path, clock: FixedClock
) -> None:
    """A server that cuts every answer after 1.5 MiB (a bucket's `serve` to a slow client):
    more cuts than MAX_ATTEMPTS, each after bytes arrived, and the file still comes whole."""
    large = os.urandom(12 << 20)
    store.create_run("run-1", "base/model")
    store.add_checkpoint("run-1", "external_weights/final", {"large.bin": large})
    tap = FileTap(create_app(store, sweep_interval=None, url_signer=UrlSigner(600)))
    tap.cut_after = 3 << 19  # 1.5 MiB
    with run_server(tap) as base:
        async with CheckpointClient(Endpoint.remote(base)) as client:
            out = tmp_path / "out"
            await download(client, PATH, out, clock=clock, in_flight=1, segment_bytes=1 << 30)
    assert (out / "large.bin").read_bytes() == large
    assert tap.statuses.count(206) > engine.MAX_ATTEMPTS


class OneByteRanges:
    """The real server, except that every ranged answer for a file is cut down to its first
    byte, well formed (206, `Content-Range: bytes a-a/N`): a hostile server that sends as
    little as it may."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.ranged = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not str(scope["path"]).startswith(SIGNED_PREFIX):
            await self.app(scope, receive, send)
            return
        self.ranged += 1
        first: list[bytes] = []

        async def shortened(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 206:
                headers = dict(message["headers"])
                start = headers[b"content-range"].split(b" ")[1].split(b"-")[0]
                total = headers[b"content-range"].split(b"/")[1]
                headers[b"content-range"] = b"bytes %s-%s/%s" % (start, start, total)
                headers[b"content-length"] = b"1"
                await send({**message, "headers": list(headers.items())})
            elif message["type"] == "http.response.body" and not first:
                first.append(message.get("body", b"")[:1])
                await send({"type": "http.response.body", "body": first[0]})
            elif message["type"] != "http.response.body":
                await send(message)

        await self.app(scope, receive, shortened)


async def test_answers_short_of_the_range_count_as_cuts(
    store: Store, tap: FileTap, tmp_path: Path, clock: FixedClock
) -> None:
    """A server that answers each range with one byte ends the download after MAX_ATTEMPTS
    requests for a file, not one request per byte."""
    server = OneByteRanges(create_app(store, sweep_interval=None, url_signer=UrlSigner(600)))
    with run_server(server) as base:
        async with CheckpointClient(Endpoint.remote(base)) as client:
            with pytest.raises(DownloadError, match="less of the range"):
                await download(client, PATH, tmp_path / "out", clock=clock, in_flight=1)
    assert server.ranged <= engine.MAX_ATTEMPTS * 4  # at most a few files begun
