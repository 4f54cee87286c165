"""The TUI on a bucket: opened in-process as `--local s3://…` is (the server app over a
BucketStore), beside a folder, with no change to the TUI. Against a real S3 server (moto)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ckpt_tui.client import Endpoint
from ckpt_tui.store.bucket.watcher import BucketWatcher
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support import layouts as L
from tests.support.live_server import run_server
from tests.support.s3_faults import S3Faults
from tests.support.s3_server import S3Server
from tests.support.tui import (
    app_on,
    backend_error,
    connection,
    screen_of,
    screen_text,
    settle,
    shown,
)
from tests.support.waiting import until

BOTH = {"team-bucket", "gpu-box"}


async def test_the_tui_lists_a_bucket_beside_a_folder(
    tmp_path: Path, clock: FixedClock, s3: S3Server, s3_bucket: str
) -> None:
    L.hf_trainer_output(tmp_path / "synced/qwen-sft", steps=(100, 200, 300))
    s3.upload(s3_bucket, "cluster", tmp_path / "synced")
    L.peft_adapter(tmp_path / "box/adapters/lora-a")
    bucket = Endpoint.bucket(f"s3://{s3_bucket}/cluster")
    connections = [
        connection(bucket, "team-bucket"),
        connection(Endpoint.local(tmp_path / "box"), "gpu-box"),
    ]
    app = app_on(connections, None, clock)
    async with app.run_test(size=(140, 36)) as pilot:
        for _ in range(200):  # both backends' rows: each loads on its own
            await settle(pilot)
            catalog = screen_of(app).catalog
            if catalog is not None and {r.backend for r in catalog.rows} >= {
                "team-bucket",
                "gpu-box",
            }:
                break
            await pilot.pause(0.05)
        await pilot.press("2")  # every checkpoint
        await settle(pilot)
        on_bucket = sorted(row.name for row in shown(app) if row.backend == "team-bucket")
        text = screen_text(app)
    assert on_bucket == ["checkpoint-100", "checkpoint-200", "checkpoint-300"]
    assert "team-bucket" in text and "gpu-box" in text and "lora-a" in text


async def test_one_bucket_at_two_endpoints_is_shown_once(
    tmp_path: Path,
    clock: FixedClock,
    s3: S3Server,
    s3_bucket: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bucket no ckpt-tui has changed (it keeps no store id), reached directly and through
    a proxy: both list the same objects, so the app shows it once and the other backend is an
    error entry naming both, with no rows, also after a save changed what the listing finds
    first and the view was refreshed. Nothing is written to the bucket."""
    monkeypatch.setattr(BucketWatcher, "recheck_interval", 0.0)  # each refresh looks again
    L.hf_trainer_output(tmp_path / "synced/qwen-sft", steps=(100, 200))
    s3.upload(s3_bucket, "cluster", tmp_path / "synced")
    location = f"s3://{s3_bucket}/cluster"
    seen: list[tuple[dict[str, str | None], set[str]]] = []
    with run_server(S3Faults(s3.endpoint)) as proxy:
        connections = [
            connection(Endpoint.bucket(location, endpoint=s3.endpoint), "direct"),
            connection(Endpoint.bucket(location, endpoint=proxy), "proxied"),
        ]
        app = app_on(connections, None, clock)
        async with app.run_test(size=(160, 36)) as pilot:
            await settle(pilot)
            await pilot.press("2")  # every checkpoint
            await settle(pilot)
            for step in range(3):
                errors = {name: backend_error(app, name) for name in ("direct", "proxied")}
                seen.append((errors, {row.backend for row in shown(app)}))
                if step == 0:  # training goes on: a new run whose key sorts first
                    s3.put(s3_bucket, "cluster/a-new-run/notes.txt", b"x")
                await pilot.press("r")
                await settle(pilot)
    keys = s3.keys(s3_bucket, "cluster")
    first_errors = seen[0][0]
    failed = [name for name, error in first_errors.items() if error is not None]
    assert len(failed) == 1, seen
    for errors, backends in seen:
        assert errors == first_errors and backends == {"direct", "proxied"} - set(failed), seen
    error = first_errors[failed[0]]
    assert error is not None and "are one store" in error and "direct" in error
    assert "proxied" in error
    assert not any("/.ckpt-tui/" in key for key in keys)


async def test_D_downloads_a_checkpoint_from_a_bucket(
    tmp_path: Path,
    clock: FixedClock,
    s3: S3Server,
    s3_bucket: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Keys as a person types them: the checkpoint's row, D, the folder typed, enter; its
    objects arrive as the training box wrote them."""
    monkeypatch.chdir(tmp_path)
    L.hf_trainer_output(tmp_path / "synced/qwen-sft", steps=(100,), best=100)
    s3.upload(s3_bucket, "cluster", tmp_path / "synced")
    bucket = Endpoint.bucket(f"s3://{s3_bucket}/cluster")
    app = app_on([connection(bucket, "team-bucket")], None, clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        assert [row.name for row in shown(app)] == ["checkpoint-100"]
        await pilot.press("D")
        await settle(pilot)
        assert "→ ./qwen-sft_weights_checkpoint-100/" in screen_text(app)
        await pilot.press("backspace", *"got", "enter")
        await settle(pilot)
        await until(
            lambda: (tmp_path / "got/qwen-sft_weights_checkpoint-100").is_dir(), pilot.pause
        )
    wrote = tmp_path / "synced/qwen-sft/checkpoint-100"
    got = tmp_path / "got/qwen-sft_weights_checkpoint-100"
    assert {p.name: p.read_bytes() for p in got.iterdir()} == {
        p.name: p.read_bytes() for p in wrote.iterdir()
    }
