"""What discovery finds: checkpoints (a folder or a file) grouped into runs (their folder)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ckpt_tui.store.runinfo import RunInfo
from ckpt_tui.store.settle import FilesLook
from ckpt_tui.store.unread import failed_read

RESERVED_FACTS = frozenset(
    {"format", "incomplete", "incomplete_reason", "best", "resume_point", "has_optimizer"}
)


@dataclass
class WeightFacts:
    """Parameters and bytes per dtype of a checkpoint's tensors, and why they may be missing."""

    params: int | None = None
    bytes_by_dtype: dict[str, int] = field(default_factory=dict)
    truncated: str | None = None
    problem: str | None = None
    unread: str | None = None
    """The first weight file that could not be read (not gone), and why (see `FoundCheckpoint`)."""

    def failed(self, name: str, exc: OSError) -> None:
        """`name` could not be read: a problem on the checkpoint, and unread unless gone."""
        self.problem = f"{name} cannot be read: {exc.strerror or exc}"
        self.unread = self.unread or failed_read(name, exc)

    def add(self, params: int | None, bytes_by_dtype: dict[str, int]) -> None:
        if params is not None:
            self.params = (self.params or 0) + params
        for dtype, n in bytes_by_dtype.items():
            self.bytes_by_dtype[dtype] = self.bytes_by_dtype.get(dtype, 0) + n

    def into(self, facts: dict[str, str]) -> None:
        if self.params is not None:
            facts["params"] = str(self.params)
        if self.bytes_by_dtype:
            facts["bytes_per_dtype"] = json.dumps(self.bytes_by_dtype, separators=(",", ":"))
        if self.problem:
            facts.setdefault("unreadable", self.problem)


@dataclass
class FoundCheckpoint:
    """One checkpoint: `name` is its file or folder inside the run folder."""

    name: str
    format: str
    training: bool
    facts: dict[str, str] = field(default_factory=dict)
    incomplete: str | None = None
    step: int | None = None
    best_name: str | None = None
    """HF Trainer: the folder name trainer_state.json calls the best checkpoint."""
    location: str = ""
    size: int = 0
    mtime_ns: int = 0
    look: FilesLook = field(default_factory=lambda: FilesLook(0, "", 0))
    """Its files as discovery saw them (size, fingerprint; see `ckpt_tui.store.settle`)."""
    single_file: bool = False
    """One file (`torch.save`, a lone `.safetensors`), not a folder that fills file by file."""
    unread: str | None = None
    """The first file its kind, flags or facts depend on that could not be read (not gone),
    and why: the walk records it as unread, so the list is incomplete and nothing is planned."""

    def failed(self, name: str, exc: OSError) -> None:
        """`name` (a file of this checkpoint) could not be read; a file gone is no failure."""
        self.unread = self.unread or failed_read(name, exc)

    def all_facts(self) -> dict[str, str]:
        """The strings that go into the checkpoint's user_metadata."""
        facts = dict(self.facts)
        facts["format"] = self.format
        facts["has_optimizer"] = "true" if self.training else "false"
        if self.step is not None:
            facts.setdefault("step", str(self.step))
        if self.incomplete is not None:
            facts["incomplete"] = "true"
            facts["incomplete_reason"] = self.incomplete
        return facts


@dataclass
class FoundRun:
    """A folder holding checkpoints; `rel` is its path under the store root ("" for the root)."""

    run_id: str
    rel: str
    path: str
    info: RunInfo
    checkpoints: list[tuple[str, FoundCheckpoint, dict[str, str]]]
    """(checkpoint_id, checkpoint, user_metadata facts) per checkpoint."""
    watch: tuple[str, ...]
    signature: tuple[int | None, ...]


def number_text(value: object) -> str | None:
    """A JSON number as a short string ("2" for 2.0), None for anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)
