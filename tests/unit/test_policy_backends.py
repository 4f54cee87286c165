"""A keep policy over rows of several backends: each backend's copy of a run is its own run,
and the keep-policy dialog's totals say what each backend frees and saves at its own rate."""

from __future__ import annotations

from datetime import timedelta

from ckpt_tui.api_types import Checkpoint, TrainingRun
from ckpt_tui.catalog import CheckpointRow, build_catalog
from ckpt_tui.catalog.row_cache import RowCache
from ckpt_tui.policy import KeepPolicy, plan
from ckpt_tui.policy.totals import total_summary
from tests.support.dialogs import NOW, GiB

RUN = "run-a"


def saves(backend: str, steps: range) -> list[CheckpointRow]:
    """`run-a` on `backend`: one 1 GiB save per step, newer with each step."""
    checkpoints = [
        Checkpoint(
            checkpoint_id=f"weights/{step:06d}",
            checkpoint_type="training",
            time=NOW - timedelta(days=10) + timedelta(hours=step),
            tinker_path=f"tinker://{RUN}/weights/{step:06d}",
            size_bytes=GiB,
        )
        for step in steps
    ]
    runs = [TrainingRun(RUN, "Qwen/Qwen3-8B", "me", True, NOW)]
    return build_catalog(runs, checkpoints, [], cache=RowCache(backend)).rows


def test_each_backends_copy_of_a_run_keeps_its_own_last() -> None:
    """The same run id and tinker paths on two boxes (a copied store): keep-last-1 keeps the
    newest of each, not only the newest of both together."""
    rows = saves("box1", range(1, 4)) + saves("box2", range(1, 3))
    the_plan = plan(rows, KeepPolicy(keep_last=1), NOW)
    kept = sorted((d.row.backend, d.row.name) for d in the_plan.decisions if d.keep)
    assert kept == [("box1", "000003"), ("box2", "000002")]
    assert [len(run.decisions) for run in the_plan.runs] == [3, 2]  # two runs, not one


def test_the_totals_say_what_each_backend_frees_at_its_own_rate() -> None:
    rows = saves("box1", range(1, 4)) + saves("box2", range(1, 3))
    the_plan = plan(rows, KeepPolicy(keep_last=1), NOW)
    text = total_summary(the_plan, {"box1": 0.1, "box2": None})
    total, box1, box2 = text.splitlines()
    # box2 has no rate: what it frees is not priced, so the sum is "at least".
    assert total.startswith("Total: delete 3 of 5 in 2 runs · frees 3.0 GiB · saves at least")
    assert box1 == "  box1: delete 2 of 3 in 1 run · frees 2.0 GiB · saves $0.20/mo"
    assert box2 == "  box2: delete 1 of 2 in 1 run · frees 1.0 GiB"
