"""The demo builder: deterministic, safe with folders, and holding every case, seen through the API.

Contents are checked through the real server app (the client over HTTP, joined with the log
dirs); only sparseness and the safetensors headers are checked on disk, where they live.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest

from ckpt_tui.catalog import Catalog, CheckpointRow, RowState, RunSummary
from ckpt_tui.catalog.snapshot import LogDirSettings, load_snapshot
from ckpt_tui.cli import main as cli_main
from ckpt_tui.client import CheckpointClient, Endpoint
from ckpt_tui.demo import DemoError, build_demo
from ckpt_tui.server import create_app
from ckpt_tui.sizes import read_safetensors_header
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from ckpt_tui.training.logdirs import METRICS_FILE_NAME, read_metrics
from tests.support.demo_fixture import ServedDemo, served_demo

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)
GIB = 1024**3
MIB = 1024**2
REAL_BASE_MODELS = {
    "meta-llama/Llama-3.1-8B",
    "meta-llama/Llama-3.1-70B",
    "meta-llama/Llama-3.2-1B",
    "meta-llama/Llama-3.2-3B",
    "Qwen/Qwen3-8B",
    "Qwen/Qwen3-4B-Instruct-2507",
}


def api_state(store_root: Path) -> tuple[Any, Any]:
    """The JSON the real server answers for every checkpoint and every run of a store."""

    async def fetch() -> tuple[Any, Any]:
        store = Store.open(store_root, FixedClock(NOW))
        try:
            transport = httpx.ASGITransport(app=create_app(store, sweep_interval=None))
            async with httpx.AsyncClient(transport=transport, base_url="http://demo") as http:
                ckpts = await http.get("/api/v1/checkpoints", params={"limit": 1000})
                runs = await http.get("/api/v1/training_runs", params={"limit": 1000})
        finally:
            store.close()
        assert ckpts.status_code == 200 and runs.status_code == 200
        return ckpts.json(), runs.json()

    return asyncio.run(fetch())


# --- determinism and folder safety -----------------------------------------------------------
def test_the_same_seed_gives_the_same_api_state(tmp_path: Path) -> None:
    first = build_demo(tmp_path / "a", 7, FixedClock(NOW))
    second = build_demo(tmp_path / "b", 7, FixedClock(NOW))
    checkpoints, runs = api_state(first.store)
    assert len(checkpoints["checkpoints"]) > 30 and len(runs["training_runs"]) == 6
    assert api_state(second.store) == (checkpoints, runs)


def test_a_different_seed_gives_different_runs(tmp_path: Path) -> None:
    seven = api_state(build_demo(tmp_path / "a", 7, FixedClock(NOW)).store)[1]
    eight = api_state(build_demo(tmp_path / "b", 8, FixedClock(NOW)).store)[1]
    ids = {run["training_run_id"] for run in seven["training_runs"]}
    assert ids.isdisjoint(run["training_run_id"] for run in eight["training_runs"])


def test_building_again_in_the_same_folder_gives_the_same_state(tmp_path: Path) -> None:
    paths = build_demo(tmp_path / "demo", 7, FixedClock(NOW))
    before = api_state(paths.store)
    (paths.logs / "stray.txt").write_text("left over from an earlier demo\n")
    again = build_demo(tmp_path / "demo", 7, FixedClock(NOW))
    assert again == paths
    assert api_state(paths.store) == before
    assert not (paths.logs / "stray.txt").exists()  # the demo's own folders are rewritten


def test_a_non_empty_folder_without_a_demo_is_refused_untouched(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    (folder / "store").mkdir(parents=True)
    (folder / "notes.txt").write_text("mine\n")
    (folder / "store" / "precious.bin").write_bytes(b"\x00" * 10)
    with pytest.raises(DemoError, match="choose an empty or new folder"):
        build_demo(folder, 7, FixedClock(NOW))
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) == [
        "notes.txt",
        "store",
        "store/precious.bin",
    ]


def test_nothing_outside_the_folder_is_touched(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep\n")
    (tmp_path / "sibling.txt").write_text("sibling\n")
    paths = build_demo(tmp_path / "demo", 7, FixedClock(NOW))
    # A demo whose store and logs became links to someone else's folder: rebuilding must
    # replace the links, never empty what they point to.
    for folder in (paths.store, paths.logs):
        shutil.rmtree(folder)
        folder.symlink_to(outside, target_is_directory=True)
    build_demo(tmp_path / "demo", 7, FixedClock(NOW))
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]
    assert (outside / "keep.txt").read_text() == "keep\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo", "outside", "sibling.txt"]
    assert not paths.store.is_symlink() and (paths.store / "runs").is_dir()


# --- every case, through the API -------------------------------------------------------------
@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedDemo]:
    with served_demo(tmp_path_factory.mktemp("demo") / "demo", FixedClock(NOW)) as demo:
        yield demo


@pytest.fixture(scope="module")
def catalog(served: ServedDemo) -> Catalog:
    async def load() -> Catalog:
        async with CheckpointClient(Endpoint.remote(served.url)) as client:
            settings = LogDirSettings((served.paths.logs,), runs_root=None)
            return (await load_snapshot(client, settings, own_logs_only=False)).catalog

    return asyncio.run(load())


def run_named(catalog: Catalog, name: str) -> RunSummary:
    return next(run for run in catalog.runs if run.display_name == name)


def stored(catalog: Catalog) -> list[CheckpointRow]:
    return [row for run in catalog.runs for row in run.stored_rows]


def ttl_of(row: CheckpointRow) -> timedelta | None:
    assert row.server is not None
    expires = row.server.expires_at
    return None if expires is None else expires - row.server.time


def test_half_a_dozen_runs_on_real_models_with_lora_ranks(catalog: Catalog) -> None:
    assert len(catalog.runs) == 6
    assert {run.base_model for run in catalog.runs} <= REAL_BASE_MODELS
    lora = [run for run in catalog.runs if run.is_lora]
    assert len(lora) == 5 and all(run.lora_rank in (8, 16, 32, 64) for run in lora)
    assert len({run.lora_rank for run in lora}) >= 3


def test_periodic_saves_keep_seven_days_and_some_expire_within_hours(catalog: Catalog) -> None:
    weekly = [row for row in stored(catalog) if ttl_of(row) == timedelta(days=7)]
    assert len(weekly) >= 20
    soon = [row for row in weekly if row.expires_at and row.expires_at - NOW < timedelta(hours=12)]
    assert soon and all(row.expires_at and row.expires_at > NOW for row in soon)


def test_one_save_has_expired_and_shows_as_missing(catalog: Catalog) -> None:
    sweep = run_named(catalog, "sl/llama-1b-sweep/lr-3e-4")
    missing = [row for row in sweep.rows if row.state is RowState.MISSING]
    assert {row.name for row in missing} == {"000100"}
    assert missing[0].record is not None and missing[0].server is None
    # Its successor was saved 100 steps (33 h) later with the same 7-day TTL and expires
    # within a day, so the missing one's expiry has passed.
    successor = next(row for row in sweep.stored_rows if row.name == "000200")
    assert ttl_of(successor) == timedelta(days=7)
    assert successor.expires_at is not None and successor.expires_at - NOW < timedelta(hours=33)


def test_rolling_resume_only_saves(catalog: Catalog) -> None:
    run = run_named(catalog, "rl/qwen3-8b-math")
    rolling = [row for row in run.rows if row.rolling]
    assert rolling and all(row.kind == "state" for row in rolling)
    kept = [row for row in rolling if not row.is_missing]
    assert len(kept) == 1 and kept[0].resume_point
    assert ttl_of(kept[0]) == timedelta(hours=2)
    assert sum(row.is_missing for row in rolling) >= 3  # each rolling save deleted the previous


def test_finals_never_expire_and_one_sampler_is_published(catalog: Catalog) -> None:
    finals = [row for row in stored(catalog) if row.final]
    assert len(finals) >= 4 and all(row.expires_at is None for row in finals)
    public = [row for row in stored(catalog) if row.public]
    assert [(row.run_name, row.kind) for row in public] == [("sl/qwen3-4b-chat", "sampler")]


def test_an_untracked_run_and_a_log_naming_deleted_checkpoints(catalog: Catalog) -> None:
    untracked = [run for run in catalog.runs if run.log_dir is None]
    assert len(untracked) == 1
    assert {row.state for row in untracked[0].rows} == {RowState.UNTRACKED}
    chat = run_named(catalog, "sl/qwen3-4b-chat")
    missing = {(row.name, row.kind) for row in chat.rows if row.state is RowState.MISSING}
    assert {("000200", "state"), ("000400", "sampler")} <= missing


def test_records_carry_eval_metrics_and_logs_carry_loss_curves(catalog: Catalog) -> None:
    with_eval = [row for row in stored(catalog) if "eval_loss" in row.metrics]
    assert len(with_eval) >= 20
    tracked = [run for run in catalog.runs if run.log_dir is not None]
    assert len(tracked) == 5
    for run in tracked:
        assert run.log_dir is not None
        curve = read_metrics(run.log_dir.path / METRICS_FILE_NAME).series["train_loss"]
        assert len(curve) > 10 and curve[-1][1] < curve[0][1]  # it goes down


def test_the_full_fine_tune_has_large_checkpoints(catalog: Catalog) -> None:
    run = run_named(catalog, "full/llama-3b-ft")
    assert not run.is_lora and run.lora_rank is None
    sizes = {(row.name, row.kind): row.size.bytes for row in run.stored_rows}
    assert len(sizes) == 6
    for (name, kind), size in sizes.items():
        assert size is not None
        # A training state holds fp32 weights and Adam moments; sampler weights are bf16.
        assert size > (10 * GIB if kind == "state" else 5 * GIB), (name, kind, size)


def test_the_demo_uses_little_disk_and_its_files_are_real_safetensors(
    served: ServedDemo,
) -> None:
    files = [path for path in served.paths.root.rglob("*") if path.is_file()]
    apparent = sum(path.stat().st_size for path in files)
    used = sum(path.stat().st_blocks * 512 for path in files)
    assert apparent > 100 * GIB and used < 100 * MIB  # sparse files
    tensors = [path for path in files if path.suffix == ".safetensors"]
    assert len(tensors) >= 50
    for path in tensors:
        with path.open("rb") as handle:
            header_length = int.from_bytes(handle.read(8), "little")
        summary = read_safetensors_header(path)
        assert summary.tensor_bytes > 0
        assert 8 + header_length + summary.tensor_bytes == path.stat().st_size == summary.file_bytes


def test_api_sizes_match_the_files(served: ServedDemo, catalog: Catalog) -> None:
    for row in stored(catalog):
        assert row.server is not None and row.server.size_bytes is not None
        folder = served.store.checkpoint_dir(row.run_id, row.checkpoint_id)
        on_disk = sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())
        assert row.server.size_bytes == on_disk


# --- the command ------------------------------------------------------------------------------
def test_demo_command_writes_and_prints_how_to_open_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "demo"
    assert cli_main(["demo", "--no-tui", "--dir", str(folder)]) == 0
    out = capsys.readouterr().out
    backends = (
        f"--local tinker-demo={folder / 'store'} --local gpu-box={folder / 'gpu-box'} "
        f"--local team-bucket=file://{folder / 'bucket'}"
    )
    assert f"ckpt-tui {backends} --log-dir {folder / 'logs'}" in out
    assert f"ckpt-tui serve {folder / 'store'}" in out
    assert json.loads((folder / ".ckpt-tui-demo.json").read_text()) == {"seed": 7}


def test_the_demo_bucket_is_read_through_the_object_store_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "demo"
    assert cli_main(["demo", "--no-tui", "--dir", str(folder)]) == 0
    capsys.readouterr()
    bucket = f"team-bucket=file://{folder / 'bucket'}"
    assert cli_main(["ls", "--json", "--local", bucket]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["complete"] is True
    assert document["backends"][0]["path"] == f"file://{folder / 'bucket'}"
    runs = {run["run_id"]: run for run in document["runs"]}
    assert sorted(runs) == ["llama-8b-cpt", "qwen3-8b-sft"]
    sizes = [c["size_bytes"] for c in runs["qwen3-8b-sft"]["checkpoints"]]
    assert len(sizes) == 3 and all(size > 70 * 2**30 for size in sizes)  # the objects' sizes


def test_demo_command_defaults_to_the_cache_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert cli_main(["demo", "--no-tui"]) == 0
    expected = tmp_path / "cache" / "ckpt-tui" / "demo"
    assert f"Demo written to {expected}" in capsys.readouterr().out
    assert (expected / "store").is_dir() and (expected / "logs").is_dir()


def test_demo_command_refuses_a_foreign_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "thesis.tex").write_text("\\section{}\n")
    assert cli_main(["demo", "--no-tui", "--dir", str(tmp_path)]) == 2
    assert "choose an empty or new folder" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["thesis.tex"]


def test_the_printed_commands_work_as_shown_without_an_activated_venv(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "demo"
    assert cli_main(["demo", "--no-tui", "--dir", str(folder)]) == 0
    lines = capsys.readouterr().out.splitlines()
    listing = next(line for line in lines if "list it:" in line).split("list it:", 1)[1]
    assert listing.strip().startswith("/")  # a full path, not a bare name PATH must resolve
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "CKPT_TUI_NOW": "2026-11-30T12:00Z"}
    done = subprocess.run(
        listing, shell=True, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "llama-3b-ft" in done.stdout
