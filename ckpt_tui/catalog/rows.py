"""The joined view's types: a checkpoint row (server + training log) and a run summary."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum

from ckpt_tui.api_types import Checkpoint, CheckpointType, TrainingRun
from ckpt_tui.logdirs import LogDir
from ckpt_tui.records import CheckpointRecord
from ckpt_tui.sizes import Size, SizeTotal, total


class RowState(str, Enum):
    """Where a checkpoint is known from."""

    TRACKED = "tracked"  # on the server and named by a training log
    UNTRACKED = "untracked"  # on the server only
    MISSING = "missing"  # named by a training log, gone from the server (deleted or expired)


KIND_LABELS: dict[CheckpointType, str] = {
    "training": "state",
    "sampler": "sampler",
    "external": "external",
}


@dataclass(slots=True)
class CheckpointRow:
    """One checkpoint as the user sees it: the server's facts joined with its record.

    Treat it as read-only. The `*_key` fields are precomputed sort keys: a view sorts 100,000
    of these on a key press, and plain attributes keep that fast.
    """

    run_id: str
    run_name: str
    checkpoint_id: str
    tinker_path: str
    checkpoint_type: CheckpointType
    state: RowState
    server: Checkpoint | None
    record: CheckpointRecord | None
    step: int | None
    epoch: int | None
    metrics: Mapping[str, float]
    size: Size
    final: bool = False
    resume_point: bool = False
    rolling: bool = False
    _haystack: str | None = field(default=None, init=False, repr=False, compare=False)
    created_key: float | None = field(init=False, repr=False, compare=False)
    expires_key: float | None = field(init=False, repr=False, compare=False)
    name_key: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        server = self.server
        self.created_key = None if server is None else server.time.timestamp()
        expires = None if server is None else server.expires_at
        self.expires_key = None if expires is None else expires.timestamp()
        self.name_key = f"{self.run_name.lower()}\x00{self.name.lower()}"

    @property
    def haystack(self) -> str:
        """Lowercased text a filter searches: run, path, user metadata and record extras.

        Built on first use: most rows are never filtered, and 100,000 joins add up.
        """
        if self._haystack is None:
            parts = [self.run_name, self.tinker_path]
            metadata = self.server.user_metadata if self.server else None
            if metadata:
                parts.extend(f"{k}={v}" for k, v in metadata.items())
            if self.record is not None:
                parts.extend(f"{k}={v}" for k, v in self.record.extra.items())
            self._haystack = "\n".join(parts).lower()
        return self._haystack

    @property
    def name(self) -> str:
        return self.checkpoint_id.split("/", 1)[-1]

    @property
    def kind(self) -> str:
        """'state', 'sampler' or 'external'."""
        return KIND_LABELS[self.checkpoint_type]

    @property
    def created(self) -> datetime | None:
        return None if self.server is None else self.server.time

    @property
    def expires_at(self) -> datetime | None:
        return None if self.server is None else self.server.expires_at

    @property
    def public(self) -> bool:
        return self.server is not None and self.server.public

    @property
    def is_missing(self) -> bool:
        return self.state is RowState.MISSING

    def flags(self) -> list[str]:
        """Short words for what is special about this checkpoint."""
        words = [
            word
            for word, present in (
                ("final", self.final),
                ("resume", self.resume_point),
                ("rolling", self.rolling),
                ("public", self.public),
            )
            if present
        ]
        metadata = self.server.user_metadata if self.server else None
        if metadata and metadata.get("incomplete") == "true":
            words.append("incomplete")  # a training-box checkpoint still being written
        if self.state is not RowState.TRACKED:
            words.append(self.state.value)
        return words


@dataclass
class RunSummary:
    """A training run with its checkpoint rows, from the server and/or a log dir."""

    run_id: str
    display_name: str
    base_model: str
    lora_rank: int | None
    is_lora: bool
    server: TrainingRun | None
    log_dir: LogDir | None
    rows: list[CheckpointRow] = field(default_factory=list)
    metric_keys: list[str] = field(default_factory=list)

    @property
    def stored_rows(self) -> list[CheckpointRow]:
        return [row for row in self.rows if not row.is_missing]

    @property
    def size(self) -> SizeTotal:
        return total(row.size for row in self.stored_rows)

    @property
    def soonest_expiry(self) -> datetime | None:
        return soonest_expiry(self.stored_rows)

    @property
    def missing_count(self) -> int:
        return sum(row.is_missing for row in self.rows)


def soonest_expiry(rows: Sequence[CheckpointRow]) -> datetime | None:
    """The earliest expiry among rows that have one."""
    times = [row.expires_at for row in rows if row.expires_at is not None]
    return min(times) if times else None
