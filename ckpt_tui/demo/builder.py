"""Write the demo: a store (through the Store API) and cookbook-style log dirs beside it."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ckpt_tui.demo.bucket import BUCKET_RUNS
from ckpt_tui.demo.models import MODELS, adam_moments, full_tensors, lora_tensors
from ckpt_tui.demo.safetensors_writer import TensorSpec, write_sparse_safetensors
from ckpt_tui.demo.scenario import PlannedCheckpoint, PlannedRun, plan_demo
from ckpt_tui.demo.trainer_box import TRAINER_RUNS, write_trainer_runs
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import SYSTEM_CLOCK, Clock

MARKER = ".ckpt-tui-demo.json"
LORA_TARGETS = [
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "gate_proj",
    "up_proj",
    "down_proj",
    "lm_head",
]
DEFAULT_SEED = 7


class DemoError(Exception):
    """The demo cannot be written where asked; the message says why and what to do."""


@dataclass(frozen=True)
class DemoPaths:
    """Where a demo was written."""

    root: Path
    store: Path
    logs: Path
    box: Path
    """A GPU box's folder of Hugging Face Trainer saves: the demo's second backend."""
    bucket: Path
    """A team bucket's objects (read through obstore's LocalStore): the third backend."""


def prepare_folder(root: Path, seed: int) -> DemoPaths:
    """Make `root` ready for a fresh demo, refusing to touch a folder the demo did not write."""
    paths = DemoPaths(root, root / "store", root / "logs", root / "gpu-box", root / "bucket")
    if root.exists() and not root.is_dir():
        raise DemoError(f"{root} exists and is not a folder; choose another --dir")
    if root.is_dir() and any(root.iterdir()) and not (root / MARKER).is_file():
        raise DemoError(
            f"{root} is not empty and holds no demo; choose an empty or new folder with --dir"
        )
    for folder in (paths.store, paths.logs, paths.box, paths.bucket):
        if folder.is_symlink() or folder.is_file():
            folder.unlink()
        elif folder.exists():
            shutil.rmtree(folder)
    root.mkdir(parents=True, exist_ok=True)
    (root / MARKER).write_text(json.dumps({"seed": seed}) + "\n")
    return paths


def build_demo(root: Path, seed: int = DEFAULT_SEED, clock: Clock = SYSTEM_CLOCK) -> DemoPaths:
    """Write (or rewrite) the demo for `seed` under `root`; nothing outside it is touched."""
    paths = prepare_folder(root, seed)
    plan = plan_demo(seed, clock.now())
    store = Store.open(paths.store, clock)
    try:
        for run in plan:
            write_run(store, run)
    finally:
        store.close()
    for run in plan:
        if run.log_name is not None:
            write_log_dir(paths.logs / run.log_name, run)
    write_trainer_runs(paths.box, TRAINER_RUNS, clock.now())
    write_trainer_runs(paths.bucket, BUCKET_RUNS, clock.now())
    return paths


def write_run(store: Store, run: PlannedRun) -> None:
    store.create_run(
        run.run_id,
        run.base_model,
        is_lora=run.is_lora,
        lora_rank=run.lora_rank,
        model_owner="demo",
        user_metadata=run.user_metadata or None,
        created=run.created,
        extra={"train_mlp": True, "train_attn": True, "train_unembed": True},
    )
    for planned in run.checkpoints:
        if not planned.on_server:
            continue
        for kind in planned.kinds:
            write_checkpoint(store, run, planned, kind)


def checkpoint_id(planned: PlannedCheckpoint, kind: str) -> str:
    segment = "weights" if kind == "state" else "sampler_weights"
    return f"{segment}/{planned.name}"


def write_checkpoint(store: Store, run: PlannedRun, planned: PlannedCheckpoint, kind: str) -> None:
    ckpt_id = checkpoint_id(planned, kind)
    metadata = None if planned.in_log else {"step": str(planned.step), "note": "notebook probe"}
    store.add_checkpoint(
        run.run_id,
        ckpt_id,
        {"adapter_config.json": adapter_config(run)} if run.is_lora else None,
        created=planned.created,
        expires_at=planned.expires_at,
        public=planned.public_sampler and kind == "sampler",
        user_metadata=metadata,
    )
    folder = store.checkpoint_dir(run.run_id, ckpt_id)
    for file_name, tensors in checkpoint_files(run, kind).items():
        write_sparse_safetensors(folder / file_name, tensors)
    store.refresh_checkpoint(run.run_id, ckpt_id)


def checkpoint_files(run: PlannedRun, kind: str) -> dict[str, list[TensorSpec]]:
    """The safetensors files of one save: weights, plus Adam moments for a training state."""
    model = MODELS[run.base_model]
    if run.lora_rank is not None:
        weights = list(lora_tensors(model, run.lora_rank))
        name = "adapter_model.safetensors" if kind == "sampler" else "model.safetensors"
    else:
        weights = list(full_tensors(model, "BF16" if kind == "sampler" else "F32"))
        name = "model.safetensors"
    if kind == "sampler":
        return {name: weights}
    return {name: weights, "optimizer.safetensors": list(adam_moments(weights))}


def adapter_config(run: PlannedRun) -> bytes:
    rank = run.lora_rank or 0
    config = {
        "base_model_name_or_path": run.base_model,
        "peft_type": "LORA",
        "r": rank,
        "lora_alpha": 2 * rank,
        "target_modules": LORA_TARGETS,
    }
    return json.dumps(config, indent=2).encode()


def record_for(run: PlannedRun, planned: PlannedCheckpoint) -> dict[str, Any]:
    """The line `checkpoint_utils.save_checkpoint_async` appends for this save."""
    record: dict[str, Any] = {"name": planned.name, "batch": planned.step, "epoch": planned.epoch}
    if planned.final:
        record["final"] = True
    for kind, key in (("state", "state_path"), ("sampler", "sampler_path")):
        if kind in planned.kinds:
            record[key] = f"tinker://{run.run_id}/{checkpoint_id(planned, kind)}"
    if planned.eval_loss is not None:
        record["eval_loss"] = planned.eval_loss
    if planned.rolling:
        record["rolling"] = True
    return record


def write_log_dir(folder: Path, run: PlannedRun) -> None:
    """checkpoints.jsonl, config.json and metrics.jsonl, as a cookbook script leaves them."""
    folder.mkdir(parents=True, exist_ok=True)
    records = [record_for(run, planned) for planned in run.checkpoints if planned.in_log]
    write_jsonl(folder / "checkpoints.jsonl", records)
    config = {
        "model_name": run.base_model,
        "lora_rank": run.lora_rank,
        "log_path": str(folder),
        "learning_rate": 3e-4,
    }
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    metrics = [
        {"step": step, "train_loss": loss, "progress": step / run.losses[-1][0]}
        for step, loss in run.losses
    ]
    write_jsonl(folder / "metrics.jsonl", metrics)


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
