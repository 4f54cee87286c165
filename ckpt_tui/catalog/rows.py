"""The joined view's types: a checkpoint row (server + training log) and a run summary."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from itertools import compress, repeat
from operator import attrgetter, is_not

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


@dataclass(frozen=True)
class RecordRef:
    """A record of a log dir and which of its paths names a checkpoint."""

    log_dir: LogDir
    record: CheckpointRecord
    resume_point: bool


@dataclass(slots=True, init=False, eq=False)
class CheckpointRow:
    """One checkpoint as the user sees it: the server's facts joined with its record.

    Treat it as read-only. Rows compare by identity: a table finds its cursor's row among
    100,000 by identity at C speed, and a join hands unchanged rows over again. A join builds
    100,000 of these, so a row stores only what every view needs at once; step, epoch, the
    name's sort key and the filter's search text are worked out when first asked for. Sort keys
    (`created`, `expires_at`, `name_key`) are attributes, for fast 100,000-row sorts.
    """

    run_id: str
    run_name: str
    checkpoint_id: str
    tinker_path: str
    checkpoint_type: CheckpointType
    state: RowState
    server: Checkpoint | None
    ref: RecordRef | None
    metrics: Mapping[str, float]
    size: Size
    final: bool
    resume_point: bool
    rolling: bool
    created: datetime | None
    """When the server stored it (None for a missing row); also the created sort's key."""
    expires_at: datetime | None
    _name_key: str | None = field(repr=False, compare=False)
    _haystack: str | None = field(repr=False, compare=False)

    def __init__(
        self,
        path: tuple[str, str, str, CheckpointType],
        run_name: str,
        server: Checkpoint | None,
        ref: RecordRef | None,
        metrics: Mapping[str, float],
        size: Size,
        flags: tuple[bool, bool, bool],
    ) -> None:
        """`path` is (run id, checkpoint id, tinker path, type); `flags` (final, resume,
        rolling)."""
        self.run_id, self.checkpoint_id, self.tinker_path, self.checkpoint_type = path
        self.run_name = run_name
        self.server = server
        self.ref = ref
        if server is None:
            self.state = RowState.MISSING
            self.created = self.expires_at = None
        else:
            self.state = RowState.UNTRACKED if ref is None else RowState.TRACKED
            self.created, self.expires_at = server.time, server.expires_at
        self.metrics = metrics
        self.size = size
        self.final, self.resume_point, self.rolling = flags
        self._name_key = self._haystack = None

    @property
    def record(self) -> CheckpointRecord | None:
        """The training-log record that names this checkpoint, if any."""
        return None if self.ref is None else self.ref.record

    @property
    def step(self) -> int | None:
        """The record's batch (else its `step` key), else the checkpoint's metadata."""
        record = self.record
        if record is not None:
            batch = record.batch
            return int_or_none(batch if batch is not None else record.extra.get("step"))
        metadata = self.metadata
        return int_or_none(metadata.get("batch", metadata.get("step")))

    @property
    def epoch(self) -> float | None:
        """As recorded: a whole number (an int) or a fraction (HF Trainer's 1.25)."""
        if self.record is not None:
            return number_or_none(self.record.epoch)
        return number_or_none(self.metadata.get("epoch"))

    @property
    def best(self) -> bool:
        """The training framework's own best checkpoint (HF Trainer's best_model_checkpoint)."""
        return self.metadata.get("best") == "true"

    @property
    def metadata(self) -> Mapping[str, str]:
        """The server's user metadata (empty when there is none)."""
        server = self.server
        return (server.user_metadata or {}) if server is not None else {}

    @property
    def name_key(self) -> str:
        """Sort key for the name sort: run name, then checkpoint name, ignoring case."""
        if self._name_key is None:
            self._name_key = f"{self.run_name.lower()}\x00{self.name.lower()}"
        return self._name_key

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
    def public(self) -> bool:
        return self.server is not None and self.server.public

    @property
    def is_missing(self) -> bool:
        return self.state is RowState.MISSING

    @property
    def incomplete(self) -> bool:
        """Stored but still being written (the server says so in its metadata)."""
        return self.server is not None and is_incomplete(self.server)

    def flags(self) -> list[str]:
        """Short words for what is special about this checkpoint."""
        words = [
            word
            for word, present in (
                ("final", self.final),
                ("best", self.best),
                ("resume", self.resume_point),
                ("rolling", self.rolling),
                ("public", self.public),
            )
            if present
        ]
        if self.incomplete:
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

    def __repr__(self) -> str:
        return (
            f"<RunSummary {self.run_id!r}: {len(self.rows)} rows>"  # short: a run may hold 10,000
        )

    @property
    def stored_rows(self) -> list[CheckpointRow]:
        return stored_only(self.rows)

    @property
    def size(self) -> SizeTotal:
        return total(row.size for row in self.stored_rows)

    @property
    def soonest_expiry(self) -> datetime | None:
        return soonest_expiry(self.stored_rows)

    @property
    def missing_count(self) -> int:
        return sum(row.is_missing for row in self.rows)


def is_incomplete(ckpt: Checkpoint) -> bool:
    """Whether the server flags a checkpoint as still being written (`ckpt-tui serve` does)."""
    metadata = ckpt.user_metadata
    return metadata is not None and metadata.get("incomplete") == "true"


def int_or_none(value: object) -> int | None:
    """An int from a record or metadata value ("12" counts; True and "1.5" do not)."""
    if type(value) is int:  # the common case, first
        return value
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def number_or_none(value: object) -> float | None:
    """An int as `int_or_none` gives it, else a finite float ("1.25" counts; True does not)."""
    whole = int_or_none(value)
    if whole is not None or value is None or isinstance(value, bool):
        return whole
    if isinstance(value, (float, str)):
        try:
            number = float(value)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def soonest_expiry(rows: Sequence[CheckpointRow]) -> datetime | None:
    """The earliest expiry among rows that have one."""
    times = list(map(attrgetter("expires_at"), rows))
    return min(compress(times, map(is_not, times, repeat(None))), default=None)


def stored_only(rows: Sequence[CheckpointRow]) -> list[CheckpointRow]:
    """Rows the server still has (not the missing ones)."""
    return list(compress(rows, map(is_not, map(attrgetter("server"), rows), repeat(None))))
