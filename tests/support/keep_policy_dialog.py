"""The keep-policy dialog over two runs at a fixed time, hosted alone (tests and snapshots)."""

from __future__ import annotations

from datetime import timedelta

from msgspec.structs import replace

from ckpt_tui.api_types import Checkpoint, TrainingRun
from ckpt_tui.catalog import RunSummary, build_catalog
from ckpt_tui.tui.screens.keep_policy_dialog import KeepPolicyDialog, PolicyOutcome
from tests.support.dialogs import NOW, DialogApp, changed

GiB = 1024**3
MiB = 1024**2


def save(run: str, step: int, kind: str, loss: float, *, public: bool = False) -> Checkpoint:
    """One save of `run` at `step`: a 1 GiB training state or a 256 MiB sampler."""
    folder = "weights" if kind == "training" else "sampler_weights"
    return Checkpoint(
        checkpoint_id=f"{folder}/{step:06d}",
        checkpoint_type=kind,  # type: ignore[arg-type]
        time=NOW - timedelta(days=10) + timedelta(hours=step),
        tinker_path=f"tinker://{run}/{folder}/{step:06d}",
        size_bytes=GiB if kind == "training" else 256 * MiB,
        public=public,
        expires_at=NOW + timedelta(days=step),
        user_metadata={"step": str(step), "eval_loss": str(loss), "reward": str(-loss)},
    )


def policy_runs() -> list[RunSummary]:
    """run-a: 6 saves (state + sampler), the last one final; run-b: 3 states, one public."""
    losses = [2.0, 1.5, 1.2, 0.9, 1.1, 1.0]
    saves = [
        save("run-a", 100 * (i + 1), kind, loss)
        for i, loss in enumerate(losses)
        for kind in ("training", "sampler")
    ]
    saves += [save("run-b", 10 * (i + 1), "training", 3.0 - i, public=i == 0) for i in range(3)]
    runs = [
        TrainingRun(name, "Qwen/Qwen3-8B", "me", True, NOW, lora_rank=32)
        for name in ("run-a", "run-b")
    ]
    first, *others = build_catalog(runs, saves, []).runs
    rows = [changed(row, final=row.step == 600) for row in first.rows]
    return [replace(first, rows=rows), *others]


def dialog_app(rate: float | None = None, *, widen: bool = True) -> DialogApp[PolicyOutcome | None]:
    runs = policy_runs()
    return DialogApp(
        lambda: KeepPolicyDialog(
            runs[:1], "run-a", NOW, {"": rate}, all_runs=runs if widen else None
        )
    )
