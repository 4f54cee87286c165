"""Runs as keep-policy tests describe them: saves on a server and the lines of their logs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from ckpt_tui.api_types import Checkpoint, TrainingRun
from ckpt_tui.training.logdirs import LogDir

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
UNKNOWN_MODEL = "nobody/unheard-of"  # so a checkpoint without a server size has an unknown size
SEGMENTS = {"state": "weights", "sampler": "sampler_weights"}


@dataclass(frozen=True)
class Save:
    """One save of a run: what the server holds and what the run's log records."""

    name: str
    step: int | None = None
    kinds: tuple[str, ...] = ("state", "sampler")
    loss: float | None = None
    final: bool = False
    logged: bool = True  # named by the run's checkpoints.jsonl
    stored: bool = True  # still on the server
    public: bool = False
    size: int | None = 1000
    expires_in_h: float | None = None
    hour: float = 0.0  # created this many hours after the run started
    run: str = "run-a"

    def path(self, kind: str) -> str:
        return f"tinker://{self.run}/{SEGMENTS[kind]}/{self.name}"

    def checkpoints(self) -> list[Checkpoint]:
        created = NOW - timedelta(days=30) + timedelta(hours=self.hour)
        expires = None if self.expires_in_h is None else NOW + timedelta(hours=self.expires_in_h)
        metadata = {} if self.logged else self.numbers()
        return [
            Checkpoint(
                checkpoint_id=f"{SEGMENTS[kind]}/{self.name}",
                checkpoint_type="training" if kind == "state" else "sampler",
                time=created,
                tinker_path=self.path(kind),
                size_bytes=self.size,
                public=self.public,
                user_metadata={k: str(v) for k, v in metadata.items()} or None,
                expires_at=expires,
            )
            for kind in self.kinds
        ]

    def numbers(self) -> dict[str, float | int]:
        found: dict[str, float | int] = {}
        if self.step is not None:
            found["step"] = self.step
        if self.loss is not None:
            found["eval_loss"] = self.loss
        return found

    def record(self) -> dict[str, object]:
        data: dict[str, object] = {"name": self.name, "batch": self.step, "final": self.final}
        if "state" in self.kinds:
            data["state_path"] = self.path("state")
        if "sampler" in self.kinds:
            data["sampler_path"] = self.path("sampler")
        if self.loss is not None:
            data["eval_loss"] = self.loss
        return {k: v for k, v in data.items() if v is not None}


def write_log_dir(root: Path, run: str, saves: Sequence[Save]) -> LogDir:
    folder = root / run
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(save.record()) for save in saves if save.logged]
    (folder / "checkpoints.jsonl").write_text("".join(f"{line}\n" for line in lines))
    return LogDir(folder, f"logs/{run}")


ServerAndLogs = tuple[list[TrainingRun], list[Checkpoint], list[LogDir]]


def server_and_logs(saves: Sequence[Save], log_root: Path) -> ServerAndLogs:
    """What the server lists for `saves`, and their runs' log dirs (written under log_root)."""
    run_ids = list(dict.fromkeys(save.run for save in saves))
    runs = [TrainingRun(run, UNKNOWN_MODEL, "me", True, NOW, lora_rank=8) for run in run_ids]
    checkpoints = [ckpt for save in saves if save.stored for ckpt in save.checkpoints()]
    log_dirs = [
        write_log_dir(log_root, run, [save for save in saves if save.run == run]) for run in run_ids
    ]
    return runs, checkpoints, log_dirs
