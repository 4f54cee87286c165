"""The joined view over the demo, fetched from a real server: states, flags and sizes."""

from __future__ import annotations

from ckpt_tui.catalog import Catalog, RowState
from ckpt_tui.catalog.snapshot import LogDirSettings, load_snapshot
from ckpt_tui.client import CheckpointClient, Endpoint
from tests.support.demo_fixture import ServedDemo


async def load(demo: ServedDemo) -> Catalog:
    settings = LogDirSettings((demo.paths.logs,), runs_root=None)
    async with CheckpointClient(Endpoint.remote(demo.url)) as client:
        snapshot = await load_snapshot(client, settings, own_logs_only=False)
    assert snapshot.problems == []
    return snapshot.catalog


async def test_runs_are_named_by_their_log_dirs(demo: ServedDemo) -> None:
    catalog = await load(demo)
    names = sorted(run.display_name for run in catalog.runs)
    untracked = [run for run in catalog.runs if run.log_dir is None]
    assert len(untracked) == 1
    assert untracked[0].display_name == untracked[0].run_id  # no log dir: named by its id
    assert "sl/llama-1b-sweep/lr-3e-4" in names and "rl/qwen3-8b-math" in names
    assert len(names) == 6


async def test_missing_rows_are_records_the_server_no_longer_has(demo: ServedDemo) -> None:
    catalog = await load(demo)
    chat = next(run for run in catalog.runs if run.display_name == "sl/qwen3-4b-chat")
    missing = [row for row in chat.rows if row.state is RowState.MISSING]
    assert sorted(row.checkpoint_id for row in missing) == [
        "sampler_weights/000200",
        "sampler_weights/000400",
        "weights/000200",
        "weights/000400",
    ]
    assert all(row.server is None and not row.size.is_known for row in missing)
    assert chat.missing_count == 4 and len(chat.stored_rows) == 2


async def test_flags_final_resume_rolling_public(demo: ServedDemo) -> None:
    catalog = await load(demo)
    rl = next(run for run in catalog.runs if run.display_name == "rl/qwen3-8b-math")
    resume = [row for row in rl.rows if row.resume_point]
    assert [row.checkpoint_id for row in resume] == ["weights/rolling_000260"]
    assert resume[0].rolling and resume[0].state is RowState.TRACKED
    rolling_missing = [r for r in rl.rows if r.rolling and r.state is RowState.MISSING]
    assert len(rolling_missing) == 5
    chat = next(run for run in catalog.runs if run.display_name == "sl/qwen3-4b-chat")
    public = [row.checkpoint_id for row in chat.rows if row.public]
    assert public == ["sampler_weights/final"]
    finals = [row for row in catalog.rows if row.final]
    assert all(row.name == "final" for row in finals) and len(finals) == 6


async def test_untracked_rows_take_step_from_user_metadata(demo: ServedDemo) -> None:
    catalog = await load(demo)
    untracked = [row for row in catalog.rows if row.state is RowState.UNTRACKED]
    assert len(untracked) == 2
    assert all(row.step is not None and row.record is None for row in untracked)


async def test_sizes_are_exact_and_totals_add_up(demo: ServedDemo) -> None:
    catalog = await load(demo)
    stored = [row for row in catalog.rows if not row.is_missing]
    assert stored and all(row.size.is_exact for row in stored)
    full = next(run for run in catalog.runs if run.display_name == "full/llama-3b-ft")
    state = next(row for row in full.rows if row.checkpoint_id == "weights/final")
    assert state.size.bytes is not None and state.size.bytes > 30 * 2**30  # fp32 + 2 moments
    assert sum(run.size.bytes for run in catalog.runs) == sum(row.size.bytes or 0 for row in stored)


async def test_metric_column_defaults_to_the_first_numeric_record_key(demo: ServedDemo) -> None:
    catalog = await load(demo)
    sft = next(run for run in catalog.runs if run.display_name == "sl/llama-8b-tulu3")
    assert sft.metric_keys[0] == "eval_loss"
    assert all("eval_loss" in row.metrics for row in sft.rows)
