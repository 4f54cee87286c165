"""No answer is a 500, and an error answer means nothing changed: names that are not UTF-8 are
a 400; a full disk, a failing disk and a locked metadata file are a 507 or a 503 saying why,
with the store exactly as before (also after it is opened again), while reads keep working.

The full disk is a real 2 MiB tmpfs; other faults are injected into the os calls of a delete,
one call at a time, until the delete goes through."""

from __future__ import annotations

import errno
import os
import socket
import sqlite3
from collections.abc import AsyncIterator, Iterator, MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from ckpt_tui.client import CheckpointClient, Endpoint, InsufficientStorageError, RetryPolicy
from ckpt_tui.server import create_app
from ckpt_tui.store import Store, meta
from ckpt_tui.store.errors import StorageFullError
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support import layouts as L
from tests.support.faulty_app import RecordedSleeps
from tests.support.live_server import run_server
from tests.support.seed import seed_store
from tests.support.small_disk import FailingOs, fill, small_tmpfs

API = "/api/v1"
RUN = f"{API}/training_runs/run-000"
GONE = "weights/0001"
"""The checkpoint the tests try to delete."""

State = tuple[list[tuple[str, bool, str | None]], list[str], list[str]]


def seeded(root: Path, clock: FixedClock) -> Store:
    """Three checkpoints: 0000 private, 0001 with a TTL, 0002 public."""
    store = Store.open(root, clock)
    seed_store(store, runs=1, per_run=3)
    store.set_ttl("run-000", GONE, 7200)
    store.set_public("run-000", "weights/0002", True)
    return store


def state(store: Store) -> State:
    """What the store lists (id, public, expiry), the files under runs/, and what the trash
    holds once the deletes answered have removed their files (an emptied slot kept for the
    next delete holds nothing: `trash.SpareSlots`)."""
    store.wait_for_purges()
    listed = [
        (c.checkpoint_id, c.public, None if c.expires_at is None else c.expires_at.isoformat())
        for c in store.list_run_checkpoints("run-000")
    ]
    files = sorted(str(p.relative_to(store.root)) for p in (store.root / "runs").rglob("*"))
    trash_dir = store.root / ".ckpt-tui" / "trash"
    trash = sorted(str(p.relative_to(trash_dir)) for p in trash_dir.rglob("*") if not p.is_dir())
    return listed, files, trash


def reopened_state(root: Path, clock: FixedClock) -> State:
    with Store.open(root, clock) as store:
        return state(store)


def assert_storage_error(answer: httpx.Response, status: int, cause: str) -> None:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/json"
    detail = answer.json()["detail"]
    assert cause in detail and "nothing was changed" in detail, detail
    assert answer.headers.get("x-should-retry") == "false"  # only a person can fix it
    assert "retry-after" not in answer.headers


# --- names that are not UTF-8 ------------------------------------------------------------
@pytest.fixture
def seeded_url(tmp_path: Path, clock: FixedClock) -> Iterator[tuple[str, Store]]:
    store = seeded(tmp_path / "store", clock)
    with run_server(create_app(store, sweep_interval=None)) as url:
        yield url, store
    store.close()


def assert_bad_name(answer: httpx.Response, words: str) -> None:
    assert answer.status_code == 400, answer.text
    assert words in answer.json()["detail"]
    assert answer.headers["x-should-retry"] == "false"


@pytest.mark.parametrize(
    "path",
    [
        "tinker://run-000/weights/a\\ud800",
        "tinker://run\\ud800/weights/0000",
        "tinker://run-000/weights/\\udcff",
    ],
)
def test_a_lone_surrogate_in_a_tinker_path_is_400(seeded_url: tuple[str, Store], path: str) -> None:
    url, _store = seeded_url
    body = ('{"tinker_path": "' + path + '"}').encode()
    answer = httpx.post(f"{url}{API}/weights_info", content=body)
    assert_bad_name(answer, "not valid Unicode text")


PATH_ROUTES = [
    ("GET", "/api/v1/training_runs/{run}"),
    ("GET", "/api/v1/training_runs/{run}/checkpoints"),
    ("DELETE", "/api/v1/training_runs/{run}/checkpoints/weights/{name}"),
    ("POST", "/api/v1/training_runs/{run}/checkpoints/weights/{name}/publish"),
    ("DELETE", "/api/v1/training_runs/{run}/checkpoints/weights/{name}/publish"),
    ("PUT", "/api/v1/training_runs/{run}/checkpoints/weights/{name}/ttl"),
]


SURROGATE_PLACES = [
    (method, route, where)
    for method, route in PATH_ROUTES
    for where in ("run", "name")
    if "{" + where + "}" in route
]


@pytest.mark.parametrize(("method", "route", "where"), SURROGATE_PLACES)
def test_a_percent_encoded_surrogate_in_a_url_is_400_and_changes_nothing(
    seeded_url: tuple[str, Store], method: str, route: str, where: str
) -> None:
    url, store = seeded_url
    before = state(store)
    names = {"run": "run-000", "name": "0001", where: "a%ED%A0%80"}
    answer = httpx.request(method, f"{url}{route.format(**names)}", json={"ttl_seconds": 3600})
    assert_bad_name(answer, "not UTF-8")
    assert state(store) == before


def raw_request(url: str, target: bytes) -> bytes:
    """Send a request line with raw bytes in its path (no client library allows it)."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(b"DELETE " + target + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def test_raw_surrogate_bytes_in_a_url_are_400_and_change_nothing(
    seeded_url: tuple[str, Store],
) -> None:
    url, store = seeded_url
    before = state(store)
    for target in (
        b"/api/v1/training_runs/run-000/checkpoints/weights/a\xed\xa0\x80",
        b"/api/v1/training_runs/r\xed\xa0\x80/checkpoints/weights/0001",
    ):
        status_line = raw_request(url, target).split(b"\r\n", 1)[0]
        assert status_line.split()[1] == b"400", status_line
    assert state(store) == before


async def test_a_surrogate_that_an_asgi_server_passes_on_is_400(
    tmp_path: Path, clock: FixedClock
) -> None:
    """An ASGI server may decode a path with lone surrogates in it (no `raw_path`)."""
    store = seeded(tmp_path / "store", clock)
    app = create_app(store, sweep_interval=None)
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    for path in (f"{RUN}/checkpoints/weights/a\ud800", f"{API}/training_runs/r\udcff"):
        sent.clear()
        method = "DELETE" if "checkpoints" in path else "GET"
        scope = {
            "type": "http",
            "method": method,
            "path": path,
            "headers": [],
            "query_string": b"",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "scheme": "http",
            "server": ("127.0.0.1", 80),
            "root_path": "",
        }
        await app(scope, receive, send)
        assert sent[0]["status"] == 400, sent
        assert b"not valid Unicode text" in sent[1]["body"]
    assert [c.checkpoint_id for c in store.list_run_checkpoints("run-000")] == [
        "weights/0000",
        GONE,
        "weights/0002",
    ]
    store.close()


def test_a_folder_name_that_is_not_utf8_is_listed_and_deleted(
    tmp_path: Path, clock: FixedClock
) -> None:
    """A byte of a folder name that is not UTF-8 stopped the store from opening at all."""
    root = tmp_path / "store"
    folder = Path(os.fsdecode(os.path.join(os.fsencode(root), b"exp-\xff")))
    L.safetensors_file(folder / "model.safetensors", L.MODEL_ST)
    L.peft_adapter(root / "adapters/lora", base="org/\ud800model")  # a lone surrogate escape
    with (
        Store.open(root, clock, settle_seconds=0) as store,
        run_server(create_app(store, sweep_interval=None)) as url,
    ):
        runs = httpx.get(f"{url}{API}/training_runs")
        assert runs.status_code == 200, runs.text
        by_id = {r["training_run_id"]: r for r in runs.json()["training_runs"]}
        assert by_id["adapters"]["base_model"] == "org/\ufffdmodel"
        (run_id,) = [i for i in by_id if i.startswith("exp-")]
        assert run_id.startswith("exp-\ufffd-")
        route = f"{url}{API}/training_runs/{quote(run_id)}/checkpoints"
        assert [c["checkpoint_id"] for c in httpx.get(route).json()["checkpoints"]] == [
            "sampler_weights/model.safetensors"
        ]
        assert httpx.delete(f"{route}/sampler_weights/model.safetensors").status_code == 204
    assert not (folder / "model.safetensors").exists()


# --- a real full disk ----------------------------------------------------------------------
@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    with small_tmpfs(tmp_path / "disk") as mounted:
        yield mounted


def test_a_full_disk_refuses_every_change_with_507_and_keeps_serving(
    disk: Path, clock: FixedClock
) -> None:
    root = disk / "store"
    store = seeded(root, clock)
    before = state(store)
    filler = fill(disk)
    try:
        with run_server(create_app(store, sweep_interval=None)) as url:
            changes = [
                ("POST", "weights/0000/publish", None),
                ("DELETE", "weights/0002/publish", None),
                ("PUT", "weights/0000/ttl", {"ttl_seconds": 3600}),
                ("PUT", f"{GONE}/ttl", {"ttl_seconds": None}),
                ("DELETE", GONE, None),
                ("DELETE", "weights/0000", None),
            ]
            for method, tail, body in changes:
                answer = httpx.request(method, f"{url}{RUN}/checkpoints/{tail}", json=body)
                assert_storage_error(answer, 507, "the disk holding the store is full")
            for read in ("/checkpoints", "/training_runs", "/training_runs/run-000/checkpoints"):
                assert httpx.get(f"{url}{API}{read}").status_code == 200
            listed = httpx.get(f"{url}{RUN}/checkpoints").json()["checkpoints"]
            assert [c["checkpoint_id"] for c in listed] == ["weights/0000", GONE, "weights/0002"]
            assert state(store) == before
    finally:
        filler.unlink()
    store.close()
    assert reopened_state(root, clock) == before


def test_reads_keep_working_on_a_full_disk_with_changes_to_take_in(
    disk: Path, clock: FixedClock
) -> None:
    """A checkpoint written outside the store needs a metadata row the disk has no room for:
    it is listed all the same (its row is written when there is room), also by a new open."""
    root = disk / "store"
    store = seeded(root, clock)
    (root / "runs/run-000/weights/0003").mkdir()
    (root / "runs/run-000/weights/0003/adapter.bin").write_bytes(b"y" * 16)
    filler = fill(disk)
    ids = ["weights/0000", GONE, "weights/0002", "weights/0003"]
    try:
        with run_server(create_app(store, sweep_interval=None)) as url:
            answer = httpx.get(f"{url}{RUN}/checkpoints")
            assert answer.status_code == 200, answer.text
            assert [c["checkpoint_id"] for c in answer.json()["checkpoints"]] == ids
            assert httpx.get(f"{url}{API}/checkpoints").json()["cursor"]["total_count"] == 4
        store.close()
        with Store.open(root, clock) as again:
            assert [c[0] for c in state(again)[0]] == ids
    finally:
        filler.unlink()


def test_a_delete_whose_metadata_cannot_be_written_puts_the_files_back(
    disk: Path, clock: FixedClock
) -> None:
    """The disk fills up after the files moved to the trash: the commit fails, they go back."""
    root = disk / "store"
    store = seeded(root, clock)
    before = state(store)
    fillers: list[Path] = []

    def fill_after_the_move(step: str) -> None:
        if step == "move":
            fillers.append(fill(disk))

    store.delete_step_hook = fill_after_the_move
    try:
        with run_server(create_app(store, sweep_interval=None)) as url:
            answer = httpx.delete(f"{url}{RUN}/checkpoints/{GONE}")
            assert fillers, "the delete never reached its move"
            assert_storage_error(answer, 507, "full")
            assert state(store) == before
            assert httpx.get(f"{url}{RUN}/checkpoints").status_code == 200
    finally:
        for filler in fillers:
            filler.unlink()
    store.close()
    assert reopened_state(root, clock) == before


def test_a_delete_answers_success_once_the_disk_has_room_again(
    disk: Path, clock: FixedClock
) -> None:
    root = disk / "store"
    store = seeded(root, clock)
    filler = fill(disk)
    with run_server(create_app(store, sweep_interval=None)) as url:
        assert httpx.delete(f"{url}{RUN}/checkpoints/{GONE}").status_code == 507
        filler.unlink()
        assert httpx.delete(f"{url}{RUN}/checkpoints/{GONE}").status_code == 204
        listed, files, trash = state(store)
    store.close()
    assert [c[0] for c in listed] == ["weights/0000", "weights/0002"] and trash == []
    assert not any(GONE in name for name in files)
    assert reopened_state(root, clock) == (listed, files, trash)


# --- a locked metadata file ----------------------------------------------------------------
def test_a_locked_metadata_file_is_503_with_retry_after_and_changes_nothing(
    tmp_path: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another program holds the metadata file's write lock (SQLite waits `LOCK_WAIT_SECONDS`,
    5 s, then gives up: shortened here, the same code path)."""
    monkeypatch.setattr(meta, "LOCK_WAIT_SECONDS", 0.25)
    root = tmp_path / "store"
    store = seeded(root, clock)
    before = state(store)
    other = sqlite3.connect(root / ".ckpt-tui" / "meta.sqlite3", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with run_server(create_app(store, sweep_interval=None)) as url:
            for method, tail in (("POST", "weights/0000/publish"), ("DELETE", GONE)):
                answer = httpx.request(method, f"{url}{RUN}/checkpoints/{tail}", timeout=60)
                assert answer.status_code == 503, answer.text
                assert "locked by another program" in answer.json()["detail"]
                assert float(answer.headers["retry-after"]) >= 1
                assert answer.headers.get("x-should-retry") != "false"
                assert state(store) == before
    finally:
        other.execute("ROLLBACK")
        other.close()
    store.close()
    assert reopened_state(root, clock) == before


# --- a fault at every step of a delete -----------------------------------------------------
@pytest.mark.parametrize(
    ("code", "status", "cause"),
    [
        (errno.ENOSPC, 507, "the disk holding the store is full"),
        (errno.EIO, 503, "I/O error"),
    ],
)
async def test_a_fault_at_any_step_of_a_delete_changes_nothing_or_deletes_it(
    tmp_path: Path,
    clock: FixedClock,
    monkeypatch: pytest.MonkeyPatch,
    code: int,
    status: int,
    cause: str,
) -> None:
    outcomes: list[tuple[str | None, int]] = []
    for at in range(1, 50):
        root = tmp_path / f"store-{at}"
        store = seeded(root, clock)
        before = state(store)
        transport = httpx.ASGITransport(create_app(store, sweep_interval=None))
        async with httpx.AsyncClient(transport=transport, base_url="http://local") as api:
            with monkeypatch.context() as patch:
                faults = FailingOs(patch, at, code)
                answer = await api.delete(f"{RUN}/checkpoints/{GONE}")
            outcomes.append((faults.failed, answer.status_code))
            if answer.status_code == 204:  # it happened: gone now, and after a reopen
                listed, files, _trash = state(store)
                store.close()
                assert [c[0] for c in listed] == ["weights/0000", "weights/0002"]
                assert not any(GONE in name for name in files)
                assert reopened_state(root, clock)[:2] == (listed, files)
            else:  # it did not: everything as before, and after a reopen
                assert_storage_error(answer, status, cause)
                assert state(store) == before, faults.failed
                store.close()
                assert reopened_state(root, clock) == before, faults.failed
        if faults.failed is None:
            break
    failed_steps = [name for name, answer in outcomes if name is not None]
    assert len(failed_steps) >= 5, outcomes  # the slot, origin.json, the move, the purge...
    assert any(answer != 204 for _name, answer in outcomes)
    assert outcomes[-1] == (None, 204)


# --- ckpt-tui's own client -----------------------------------------------------------------
@pytest.fixture
async def full_disk_client(
    disk: Path, clock: FixedClock
) -> AsyncIterator[tuple[CheckpointClient, RecordedSleeps]]:
    store = seeded(disk / "store", clock)
    filler = fill(disk)
    sleeps = RecordedSleeps()
    with run_server(create_app(store, sweep_interval=None)) as url:
        policy = RetryPolicy(sleep=sleeps, jitter=lambda: 1.0)
        async with CheckpointClient(Endpoint.remote(url), retry=policy) as opened:
            yield opened, sleeps
    filler.unlink()
    store.close()


async def test_the_client_reports_a_full_disk_at_once(
    full_disk_client: tuple[CheckpointClient, RecordedSleeps],
) -> None:
    client, sleeps = full_disk_client
    with pytest.raises(InsufficientStorageError) as caught:
        await client.publish("tinker://run-000/weights/0000")
    assert caught.value.status == 507
    assert "no room on its disk" in caught.value.message
    assert "free some space" in caught.value.message
    assert sleeps.delays == []  # a retry cannot help, so none was made
    page = await client.list_checkpoints()
    assert page.total == 3 and not page.items[-1].public


def test_adding_a_run_or_checkpoint_on_a_full_disk_leaves_nothing_behind(
    disk: Path, clock: FixedClock
) -> None:
    root = disk / "store"
    store = seeded(root, clock)
    before = state(store)
    filler = fill(disk)
    try:
        with pytest.raises(StorageFullError, match="nothing was changed"):
            store.add_checkpoint("run-000", "weights/0003", {"a.bin": b"z" * 64 * 1024})
        with pytest.raises(StorageFullError, match="nothing was changed"):
            store.create_run("run-new", "base")
        assert state(store) == before
        assert sorted(p.name for p in (root / "runs").iterdir()) == ["run-000"]
    finally:
        filler.unlink()
    store.close()
    assert reopened_state(root, clock) == before


def test_the_first_change_to_a_lazily_opened_store_on_a_full_disk_is_507(
    disk: Path, clock: FixedClock
) -> None:
    """Browsing writes nothing; the first change makes the metadata file, which needs room."""
    root = disk / "box"
    L.write(root / "exp/model.pt", L.torch_zip(L.model_state(1)))
    filler = fill(disk)
    with Store.open(root, clock, lazy=True, settle_seconds=0) as store:
        with pytest.raises(StorageFullError, match="the disk holding the store is full"):
            store.set_ttl("exp", "sampler_weights/model.pt", 7200)
        filler.unlink()
        store.set_ttl("exp", "sampler_weights/model.pt", 7200)
    with Store.open(root, clock) as store:
        assert store.get_checkpoint("exp", "sampler_weights/model.pt").expires_at is not None
