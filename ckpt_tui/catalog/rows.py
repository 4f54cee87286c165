"""The joined view's types: a checkpoint row (server + training log) and a run summary."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from enum import Enum

import msgspec
from msgspec.structs import force_setattr

from ckpt_tui.api_types import Checkpoint, CheckpointType, TrainingRun
from ckpt_tui.sizes import Size, SizeTotal, total
from ckpt_tui.training.logdirs import LogDir
from ckpt_tui.training.records import CheckpointRecord

NO_SIZE = SizeTotal(0, 0, 0, 0)
"""The total of no sizes."""


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


class RecordRef(msgspec.Struct, frozen=True, gc=False):
    """A record of a log dir and which of its paths names a checkpoint."""

    log_dir: LogDir
    record: CheckpointRecord
    resume_point: bool


class CheckpointRow(msgspec.Struct, frozen=True, gc=False, eq=False):
    """One checkpoint as the user sees it: the server's facts joined with its record.

    Immutable, and not tracked by the garbage collector: a row refers only to things that never
    refer back to it, so it can be part of no reference cycle. Rows compare by identity: a table
    finds its cursor's row among 100,000 by identity at C speed, and a join hands unchanged rows
    over again. Sort keys (`created`, `expires_at`) and the filter's `haystack`
    are attributes, for fast 100,000-row sorts and filters. Built by `catalog.row_maker.make_row`.
    """

    run_id: str
    run_name: str
    checkpoint_id: str
    name: str
    """The checkpoint id without its segment."""
    tinker_path: str
    checkpoint_type: CheckpointType
    state: RowState
    server: Checkpoint | None
    ref: RecordRef | None
    metrics: Mapping[str, float]
    step: int | None
    """The record's batch (else its `step` key), else the checkpoint's metadata."""
    epoch: float | None
    """As recorded: a whole number (an int) or a fraction (HF Trainer's 1.25)."""
    size: Size
    final: bool
    resume_point: bool
    rolling: bool
    created: datetime | None
    """When the server stored it (None for a missing row); also the created sort's key."""
    expires_at: datetime | None
    haystack: str
    """Lowercased text a filter searches: run, path, user metadata and record extras."""
    backend: str = ""
    """The name of the backend that holds it ("" when only one is open and it has no name).
    A row's identity across backends is `key`: (backend, tinker path)."""

    @property
    def key(self) -> tuple[str, str]:
        """(backend name, tinker path): what names this row among every backend's rows."""
        return (self.backend, self.tinker_path)

    @property
    def record(self) -> CheckpointRecord | None:
        """The training-log record that names this checkpoint, if any."""
        return None if self.ref is None else self.ref.record

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


def search_text(
    run_name: str,
    tinker_path: str,
    metadata: Mapping[str, str] | None,
    record: CheckpointRecord | None,
) -> str:
    """A row's `haystack`: what the filter matches, lowercased once."""
    if not metadata and (record is None or not record.extra):
        return f"{run_name}\n{tinker_path}".lower()  # most rows: no list to build
    parts = [run_name, tinker_path]
    if metadata:
        parts.extend(f"{k}={v}" for k, v in metadata.items())
    if record is not None and record.extra:
        parts.extend(f"{k}={v}" for k, v in record.extra.items())
    return "\n".join(parts).lower()


class RunSummary(msgspec.Struct, frozen=True, gc=False):
    """A training run with its checkpoint rows, from the server and/or a log dir.

    `stored_rows`, `size` and `soonest_expiry` are worked out from `rows` once, when the
    summary is made (any value passed for them is replaced): the runs pane, its sorts and
    `ls` read them for every run, and 100,000 rows took 30 ms to total each time.
    """

    run_id: str
    display_name: str
    base_model: str
    lora_rank: int | None
    is_lora: bool
    server: TrainingRun | None
    log_dir: LogDir | None
    rows: list[CheckpointRow] = msgspec.field(default_factory=list)
    metric_keys: list[str] = msgspec.field(default_factory=list)
    backend: str = ""
    """The name of the backend that holds the run (see `CheckpointRow.backend`)."""
    stored_rows: list[CheckpointRow] = msgspec.field(default_factory=list)
    """Rows the server still has (not the missing ones)."""
    size: SizeTotal = NO_SIZE
    """The total size of `stored_rows`."""
    soonest_expiry: datetime | None = None
    """The earliest expiry among `stored_rows`."""

    def __post_init__(self) -> None:
        stored = stored_only(self.rows)
        force_setattr(self, "stored_rows", stored)
        force_setattr(self, "size", total([row.size for row in stored]))
        force_setattr(self, "soonest_expiry", soonest_expiry(stored))

    @property
    def key(self) -> tuple[str, str]:
        """(backend name, run id): what names this run among every backend's runs."""
        return (self.backend, self.run_id)

    @property
    def missing_count(self) -> int:
        return len(self.rows) - len(self.stored_rows)


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
    return min([row.expires_at for row in rows if row.expires_at is not None], default=None)


def stored_only(rows: Sequence[CheckpointRow]) -> list[CheckpointRow]:
    """Rows the server still has (not the missing ones)."""
    return [row for row in rows if row.server is not None]


class PathIndex:
    """Rows by tinker path, made on first use (from any thread; two threads may both make
    it, alike). `ls` never looks a row up by path, and 100,000 rows took 25 ms to index; the
    app's joins index theirs at once (`RowCache.keep`), for the next join to reuse rows."""

    __slots__ = ("_by_path", "_rows")

    def __init__(self, rows: Sequence[CheckpointRow]) -> None:
        self._rows = rows
        self._by_path: dict[str, CheckpointRow] | None = None

    def mapping(self) -> Mapping[str, CheckpointRow]:
        found = self._by_path
        if found is None:
            found = self._by_path = {row.tinker_path: row for row in self._rows}
        return found


NO_ROWS = PathIndex(())
"""The index of no rows."""
