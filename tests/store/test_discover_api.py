"""Discovered checkpoints through a real server: lists, sizes, metadata, publish, TTL, deletes,
the sweep, read-only refusals, and the joined view's flags."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from ckpt_tui.api_types import Checkpoint, TrainingRun
from ckpt_tui.catalog.join import build_catalog
from ckpt_tui.server import create_app
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support import layouts as L
from tests.support.live_server import run_server

API = "/api/v1"


def build_tree(root: Path, marker: Path) -> None:
    L.hf_trainer_output(root / "out", steps=(100, 200, 300), best=200)
    (root / "out/checkpoint-300/trainer_state.json").unlink()
    L.full_torch_checkpoint(root / "exp/a.pt")
    L.full_torch_checkpoint(root / "exp/b.pt")
    L.write(root / "exp/evil.pt", L.code_running_pickle(marker))
    L.peft_adapter(root / "adapters/lora")


@pytest.fixture
def served(tmp_path: Path, clock: FixedClock) -> Iterator[tuple[httpx.Client, Store, Path]]:
    root = tmp_path / "store"
    build_tree(root, tmp_path / "PWNED")
    with (
        Store.open(root, clock, settle_seconds=0) as store,
        run_server(create_app(store, sweep_interval=None)) as url,
        httpx.Client(base_url=url) as client,
    ):
        yield client, store, root
    assert not (tmp_path / "PWNED").exists()


def checkpoints(api: httpx.Client, run_id: str) -> dict[str, dict[str, object]]:
    body = api.get(f"{API}/training_runs/{run_id}/checkpoints").json()
    return {c["checkpoint_id"]: c for c in body["checkpoints"]}


def test_lists_sizes_and_metadata(served: tuple[httpx.Client, Store, Path]) -> None:
    api, _, root = served
    runs = {
        r["training_run_id"]: r for r in api.get(f"{API}/training_runs").json()["training_runs"]
    }
    assert set(runs) == {"out", "exp", "adapters"}
    assert (runs["adapters"]["is_lora"], runs["adapters"]["lora_rank"]) == (True, 16)
    assert runs["out"]["last_checkpoint"]["checkpoint_id"] == "weights/checkpoint-300"
    out = checkpoints(api, "out")
    second = out["weights/checkpoint-200"]
    meta = second["user_metadata"]
    assert isinstance(meta, dict)
    assert (meta["step"], meta["best"], meta["resume_point"]) == ("200", "true", "true")
    assert out["weights/checkpoint-300"]["user_metadata"]["incomplete"] == "true"  # type: ignore[index]
    files = (root / "out/checkpoint-200").rglob("*")
    assert second["size_bytes"] == sum(p.stat().st_size for p in files if p.is_file())
    every = api.get(f"{API}/checkpoints", params={"limit": 100}).json()
    assert every["cursor"]["total_count"] == 7


def test_publish_ttl_delete_folder_and_file(served: tuple[httpx.Client, Store, Path]) -> None:
    api, _store, root = served
    base = f"{API}/training_runs"
    assert api.post(f"{base}/exp/checkpoints/weights/a.pt/publish").status_code == 204
    ttl = api.put(f"{base}/out/checkpoints/weights/checkpoint-100/ttl", json={"ttl_seconds": 7200})
    assert ttl.status_code == 204
    exp, out = checkpoints(api, "exp"), checkpoints(api, "out")
    assert exp["weights/a.pt"]["public"] is True
    assert out["weights/checkpoint-100"]["expires_at"] == "2025-01-01T14:00:00Z"
    assert api.delete(f"{base}/out/checkpoints/weights/checkpoint-100").status_code == 204
    assert api.delete(f"{base}/exp/checkpoints/weights/a.pt").status_code == 204
    assert not (root / "out/checkpoint-100").exists() and (root / "out/checkpoint-200").is_dir()
    assert not (root / "exp/a.pt").exists() and (root / "exp/b.pt").is_file()
    assert sorted(checkpoints(api, "exp")) == ["sampler_weights/evil.pt", "weights/b.pt"]


def test_ttl_on_incomplete_is_refused_and_sweep_skips_it(
    served: tuple[httpx.Client, Store, Path], clock: FixedClock
) -> None:
    api, store, root = served
    path = f"{API}/training_runs/out/checkpoints/weights/checkpoint-300/ttl"
    refused = api.put(path, json={"ttl_seconds": 7200})
    assert refused.status_code == 409 and "incomplete" in refused.json()["detail"]
    api.put(path.replace("300", "200"), json={"ttl_seconds": 3600})
    clock.advance(timedelta(hours=2))
    assert store.sweep_expired() == ["tinker://out/weights/checkpoint-200"]
    assert sorted(checkpoints(api, "out")) == ["weights/checkpoint-100", "weights/checkpoint-300"]
    assert (root / "out/checkpoint-300").is_dir()


def test_readonly_server_browses_and_refuses(tmp_path: Path, clock: FixedClock) -> None:
    root = tmp_path / "store"
    build_tree(root, tmp_path / "PWNED")
    with (
        Store.open(root, clock, readonly=True, settle_seconds=0) as store,
        run_server(create_app(store, sweep_interval=None)) as url,
    ):
        listed = httpx.get(f"{url}{API}/training_runs/exp/checkpoints").json()
        answer = httpx.delete(f"{url}{API}/training_runs/exp/checkpoints/weights/a.pt")
    assert len(listed["checkpoints"]) == 3
    assert answer.status_code == 403 and "read-only" in answer.json()["detail"]
    assert (root / "exp/a.pt").is_file() and not (tmp_path / "PWNED").exists()


def test_joined_view_reads_discovery_metadata(tmp_path: Path, clock: FixedClock) -> None:
    root = tmp_path / "store"
    build_tree(root, tmp_path / "PWNED")
    with Store.open(root, clock, settle_seconds=0) as store:
        runs: list[TrainingRun] = store.list_runs()[0]
        ckpts: list[Checkpoint] = store.list_checkpoints(limit=100)[0]
    rows = {row.tinker_path: row for row in build_catalog(runs, ckpts, []).rows}
    best = rows["tinker://out/weights/checkpoint-200"]
    assert (best.step, best.epoch, best.best, best.final, best.resume_point) == (
        200,
        2,
        True,
        False,  # the Trainer's best is not the end of the run
        True,
    )
    assert best.metrics == {"eval_loss": 1.0}
    full = rows["tinker://exp/weights/b.pt"]
    assert (full.step, full.epoch, full.metrics) == (500, 5, {"best_val_loss": 0.25})
