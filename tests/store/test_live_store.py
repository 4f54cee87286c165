"""Checkpoints written while the store watches: incomplete until their files settle, sizes that
follow the files, TTL/publish refused, the sweep and every keep policy keeping them (issue 18)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from ckpt_tui.cli import main
from ckpt_tui.server import create_app
from ckpt_tui.store import Store
from ckpt_tui.store.settle import SETTLE_SECONDS
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support.live_run import LiveRun, TrainerRun, safetensors_bytes
from tests.support.live_server import run_server

SETTLE = timedelta(seconds=SETTLE_SECONDS)
WHOLE = len(safetensors_bytes())


@pytest.fixture
def live_store(tmp_path: Path, clock: FixedClock) -> Iterator[Store]:
    store = Store.open(tmp_path / "store", clock)
    store.recheck_interval = 0  # every list looks at the folders: the test decides when
    store.create_run("sim", "Qwen/Qwen3-8B", lora_rank=8)
    yield store
    store.close()


@pytest.fixture
def run(tmp_path: Path, live_store: Store) -> LiveRun:
    return LiveRun(tmp_path / "store", "sim", tmp_path / "logs" / "sim")


pytestmark = pytest.mark.usefixtures("quiet_environment")


def facts(store: Store, checkpoint_id: str, run_id: str = "sim") -> dict[str, str]:
    return store.get_checkpoint(run_id, checkpoint_id).user_metadata or {}


def test_a_save_is_incomplete_until_its_files_stay_the_same(
    live_store: Store, run: LiveRun, clock: FixedClock
) -> None:
    run.begin("000010")
    first = live_store.get_checkpoint("sim", "weights/000010")
    assert (first.user_metadata or {})["incomplete"] == "true"
    assert "truncated" in (first.user_metadata or {})["incomplete_reason"]
    assert first.size_bytes == 100
    run.grow("000010")
    assert live_store.get_checkpoint("sim", "weights/000010").size_bytes == 200  # re-measured
    run.finish("000010")
    done = facts(live_store, "weights/000010")
    assert "files changed less than" in done["incomplete_reason"]  # whole, but just written
    clock.advance(SETTLE)
    settled = live_store.get_checkpoint("sim", "weights/000010")
    assert "incomplete" not in (settled.user_metadata or {})
    assert settled.size_bytes == run.size_on_disk("000010") > WHOLE


def test_a_temporary_name_keeps_a_save_incomplete(
    live_store: Store, run: LiveRun, clock: FixedClock
) -> None:
    run.begin("000020")
    run.finish("000020")
    (run.folder("000020") / "optimizer.safetensors.tmp").write_bytes(b"x" * 10)
    clock.advance(SETTLE * 3)
    reason = facts(live_store, "weights/000020")["incomplete_reason"]
    assert "optimizer.safetensors.tmp is still being written" in reason


def test_cached_size_is_only_valid_for_the_files_it_measured(
    tmp_path: Path, clock: FixedClock, run: LiveRun, live_store: Store
) -> None:
    run.begin("000030")
    run.finish("000030")
    clock.advance(SETTLE)
    assert live_store.get_checkpoint("sim", "weights/000030").size_bytes == run.size_on_disk(
        "000030"
    )
    live_store.close()
    (run.folder("000030") / "optimizer.safetensors").write_bytes(safetensors_bytes())
    with Store.open(tmp_path / "store", clock) as reopened:
        grown = reopened.get_checkpoint("sim", "weights/000030")
        assert grown.size_bytes == run.size_on_disk("000030") == 2 * WHOLE + 27
        assert (grown.user_metadata or {})["incomplete"] == "true"  # its files just changed


def test_checkpoints_the_store_wrote_are_complete_at_once(live_store: Store) -> None:
    live_store.add_checkpoint("sim", "weights/own", {"a.bin": b"xyz"})
    own = live_store.get_checkpoint("sim", "weights/own")
    assert own.size_bytes == 3 and "incomplete" not in (own.user_metadata or {})


def test_ttl_and_publish_are_refused_and_the_sweep_keeps_it(
    live_store: Store, run: LiveRun, clock: FixedClock
) -> None:
    run.begin("000040")
    run.finish("000040")
    run.begin("000050")
    with run_server(create_app(live_store, sweep_interval=None)) as url:
        base = f"{url}/api/v1/training_runs/sim/checkpoints"
        ttl = httpx.put(f"{base}/weights/000050/ttl", json={"ttl_seconds": 7200})
        publish = httpx.post(f"{base}/weights/000050/publish")
        assert (ttl.status_code, publish.status_code) == (409, 409)
        assert "incomplete" in ttl.json()["detail"] and "incomplete" in publish.json()["detail"]
        clock.advance(SETTLE)
        assert httpx.put(f"{base}/weights/000040/ttl", json={"ttl_seconds": 3600}).is_success
    (run.folder("000040") / "extra.safetensors").write_bytes(safetensors_bytes()[:50])
    clock.advance(timedelta(hours=2))  # past its expiry, while a file is being added again
    assert live_store.sweep_expired() == []
    assert run.folder("000040").is_dir() and run.folder("000050").is_dir()
    (run.folder("000040") / "extra.safetensors").write_bytes(safetensors_bytes())
    live_store.rescan()
    clock.advance(SETTLE)
    assert live_store.sweep_expired() == ["tinker://sim/weights/000040"]  # complete: it goes
    assert not run.folder("000040").exists() and run.folder("000050").is_dir()


def prune_plan(url: str, logs: Path, capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    code = main(["prune", "--url", url, "--log-dir", str(logs), "--json", "--dry-run", *args])
    assert code == 0
    return json.loads(capsys.readouterr().out)


def decisions(document: Any) -> dict[str, tuple[bool, list[str]]]:
    found = [d for run in document["runs"] for d in run["decisions"]]
    return {d["tinker_path"]: (d["keep"], d["reasons"]) for d in found}


def test_prune_never_plans_to_delete_a_save_in_progress(
    tmp_path: Path,
    live_store: Store,
    run: LiveRun,
    clock: FixedClock,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in ("000010", "000020", "000030"):
        run.train(10)
        run.begin(name)
        run.finish(name)
    clock.advance(SETTLE)
    run.begin("000040")
    trainer = TrainerRun(tmp_path / "store" / "hf")
    for step, loss in ((100, 0.5), (200, 0.9), (250, 0.8)):
        trainer.model(step)
        trainer.optimizer(step)
        trainer.trainer_state(step, loss)
    live_store.rescan()
    clock.advance(SETTLE)
    trainer.model(300)  # no trainer_state.json yet
    with run_server(create_app(live_store, sweep_interval=None)) as url:
        plan = decisions(prune_plan(url, run.log_dir, capsys, "--keep-last", "1"))
        hf = decisions(
            prune_plan(url, run.log_dir, capsys, "--keep-best", "1", "--metric", "eval_loss")
        )
    assert plan[run.tinker_path("000040")] == (True, ["incomplete (still being written)"])
    assert plan[run.tinker_path("000030")][0] and not plan[run.tinker_path("000020")][0]
    assert hf["tinker://hf/weights/checkpoint-300"] == (True, ["incomplete (still being written)"])
    assert hf["tinker://hf/weights/checkpoint-100"][0]  # best complete one
    assert hf["tinker://hf/weights/checkpoint-250"] == (True, ["resume point"])
    assert not hf["tinker://hf/weights/checkpoint-200"][0]
