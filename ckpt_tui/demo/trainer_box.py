"""The demo's second backend: a GPU box's folder where Hugging Face `Trainer` saved
`checkpoint-<step>/` folders, as `Trainer(output_dir=...)` leaves them.

Each save holds the model (`model.safetensors`, written sparse: the size is real, the disk
use is not), `optimizer.pt` the size of Adam's two fp32 moments (sparse too), `config.json` and
`trainer_state.json` (written last by the Trainer, with the eval history and the best
checkpoint so far). Every file is dated before the demo's "now", as a save finished long
ago is.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from ckpt_tui.demo.models import MODELS, adam_moments, full_tensors
from ckpt_tui.demo.safetensors_writer import write_sparse_safetensors


@dataclass(frozen=True)
class TrainerRun:
    """One `output_dir`: a model fine-tuned in full, saving every `every` steps."""

    folder: str
    base_model: str
    every: int
    saves: int
    days_ago: float
    """When the last save was written, before the demo's "now"."""
    best_index: int
    """Which save the eval loss likes best (0-based)."""


TRAINER_RUNS = (
    TrainerRun("llama-1b-sft", "meta-llama/Llama-3.2-1B", 500, 4, 2.5, 1),
    TrainerRun("llama-3b-dpo", "meta-llama/Llama-3.2-3B", 200, 3, 9.0, 2),
)


def write_trainer_runs(root: Path, runs: Iterable[TrainerRun], now: datetime) -> Path:
    """Write each run's output under `root` (a fresh folder), as Trainer saves it; return
    `root`. The training box and the bucket (where such runs were synced) both hold these."""
    for run in runs:
        write_trainer_run(root / run.folder, run, now)
    return root


def eval_loss(run: TrainerRun, index: int) -> float:
    """A loss curve that bottoms out at the run's best save, then creeps up (overfitting)."""
    return round(1.1 + 0.08 * abs(index - run.best_index) + 0.01 * index, 4)


def write_trainer_run(folder: Path, run: TrainerRun, now: datetime) -> None:
    model = MODELS[run.base_model]
    weights = list(full_tensors(model, "BF16"))
    moments = list(adam_moments(list(full_tensors(model, "F32"))))
    optimizer_bytes = sum(tensor.nbytes for tensor in moments)
    history: list[dict[str, object]] = []
    best = folder / f"checkpoint-{run.every * (run.best_index + 1)}"
    for index in range(run.saves):
        step = run.every * (index + 1)
        epoch = round(step / (run.every * 2), 2)
        history.append({"loss": round(1.9 - 0.15 * index, 4), "step": step, "epoch": epoch})
        history.append({"eval_loss": eval_loss(run, index), "step": step, "epoch": epoch})
        save = folder / f"checkpoint-{step}"
        save.mkdir(parents=True)
        write_sparse_safetensors(save / "model.safetensors", weights)
        with (save / "optimizer.pt").open("wb") as optimizer:
            optimizer.truncate(optimizer_bytes)
        config = {
            "_name_or_path": run.base_model,
            "model_type": "llama",
            "architectures": ["LlamaForCausalLM"],
        }
        (save / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        state = {
            "global_step": step,
            "epoch": epoch,
            "log_history": list(history),
            "best_model_checkpoint": str(best) if index >= run.best_index else None,
            "best_metric": eval_loss(run, min(index, run.best_index)),
        }
        (save / "trainer_state.json").write_text(json.dumps(state, indent=2) + "\n")
        written = now - timedelta(days=run.days_ago) - timedelta(hours=6 * (run.saves - index))
        date_tree(save, written)
    date_tree(folder, now - timedelta(days=run.days_ago))


def date_tree(root: Path, when: datetime) -> None:
    """Date `root` and everything in it at `when` (a finished save is not being written)."""
    stamp = when.timestamp()
    for path in [*root.rglob("*"), root]:
        os.utime(path, (stamp, stamp), follow_symlinks=False)
