"""A small live training run, written step by step by the test (never by wall-clock timing).

It behaves like tinker-cookbook's checkpoint manager on a training box: saves whose files
appear one after the other and grow (`begin` writes the start of a safetensors file, `grow`
more of it, `finish` the rest and the side files), rolling saves the trainer deletes, a
`checkpoints.jsonl` line per finished save and `metrics.jsonl` lines as steps go by. An HF
Trainer run writes `checkpoint-<step>/` folders the way the Trainer does: the model first,
then `optimizer.pt`, `trainer_state.json` last.

Nothing here sleeps: the test decides when a write happens and when time passes (it advances
the store's clock by the settle time).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ckpt_tui.demo.safetensors_writer import TensorSpec, build_header

TENSORS = [
    TensorSpec("base_model.model.layers.0.self_attn.q_proj.lora_A.weight", "F32", (8, 64)),
    TensorSpec("base_model.model.layers.0.self_attn.q_proj.lora_B.weight", "F32", (64, 8)),
]


def safetensors_bytes() -> bytes:
    """A whole safetensors file (header and zeroed data)."""
    header, data_length = build_header(TENSORS, {"format": "pt"})
    return header + b"\0" * data_length


@dataclass
class Save:
    """One checkpoint folder being written: the file bytes still to come."""

    folder: Path
    pending: bytes
    written: int = 0


@dataclass
class LiveRun:
    """A tinker-layout run in `store/runs/<run_id>` and its log dir."""

    store_root: Path
    run_id: str
    log_dir: Path
    saves: dict[str, Save] = field(default_factory=dict)
    step: int = 0

    def __post_init__(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        (self.log_dir / "checkpoints.jsonl").touch()
        (self.log_dir / "metrics.jsonl").touch()

    @property
    def run_dir(self) -> Path:
        return self.store_root / "runs" / self.run_id

    def folder(self, name: str, kind: str = "weights") -> Path:
        return self.run_dir / kind / name

    def tinker_path(self, name: str, kind: str = "weights") -> str:
        return f"tinker://{self.run_id}/{kind}/{name}"

    # --- saves ------------------------------------------------------------------------------
    def begin(self, name: str, kind: str = "weights", first: int = 100) -> Path:
        """A save starts: its folder and the first `first` bytes of its weights file."""
        folder = self.folder(name, kind)
        folder.mkdir(parents=True)
        save = self.saves[name] = Save(folder, safetensors_bytes())
        self._write(save, first)
        return folder

    def grow(self, name: str, count: int = 100) -> None:
        """More bytes of the weights file."""
        self._write(self.saves[name], count)

    def finish(self, name: str, record: dict[str, object] | None = None) -> None:
        """The rest of the weights file and the config; then the log line, as the cookbook
        appends it once the save is done (`record` adds keys such as `rolling`)."""
        save = self.saves.pop(name)
        self._write(save, len(save.pending))
        (save.folder / "adapter_config.json").write_text('{"r": 8, "lora_alpha": 16}\n')
        line = {"name": name, "batch": self.step, "state_path": self.tinker_path(name)}
        self._append(self.log_dir / "checkpoints.jsonl", {**line, **(record or {})})

    def delete(self, name: str, kind: str = "weights") -> None:
        """The trainer deletes a save (a rolling one, superseded)."""
        shutil.rmtree(self.folder(name, kind))

    def _write(self, save: Save, count: int) -> None:
        chunk = save.pending[save.written : save.written + count]
        with (save.folder / "adapter_model.safetensors").open("ab") as handle:
            handle.write(chunk)
        save.written += len(chunk)

    def size_on_disk(self, name: str, kind: str = "weights") -> int:
        return sum(p.stat().st_size for p in self.folder(name, kind).rglob("*") if p.is_file())

    # --- the log ----------------------------------------------------------------------------
    def train(self, steps: int) -> None:
        """`steps` more lines in metrics.jsonl (one per step, as the cookbook logs them)."""
        for _ in range(steps):
            self.step += 1
            self._append(
                self.log_dir / "metrics.jsonl", {"step": self.step, "loss": 2.0 / self.step}
            )

    @staticmethod
    def _append(path: Path, line: dict[str, object]) -> None:
        with path.open("a") as handle:
            handle.write(json.dumps(line) + "\n")


@dataclass
class TrainerRun:
    """An HF Trainer output folder under the store root (a discovered run)."""

    folder: Path

    def model(self, step: int) -> Path:
        """The model files of checkpoint-<step> (config, safetensors): the first part."""
        path = self.folder / f"checkpoint-{step}"
        path.mkdir(parents=True)
        (path / "config.json").write_text('{"_name_or_path": "Qwen/Qwen3-0.6B"}\n')
        (path / "model.safetensors").write_bytes(safetensors_bytes())
        return path

    def optimizer(self, step: int) -> None:
        (self.folder / f"checkpoint-{step}" / "optimizer.pt").write_bytes(b"\0" * 64)

    def trainer_state(self, step: int, eval_loss: float) -> None:
        """Written last: the save is done."""
        state = {
            "global_step": step,
            "epoch": 1.0,
            "log_history": [{"step": step, "eval_loss": eval_loss}],
        }
        (self.folder / f"checkpoint-{step}" / "trainer_state.json").write_text(json.dumps(state))
