"""Join the server's runs and checkpoints with the training logs that name them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property

from ckpt_tui.api_types import Checkpoint, TinkerPath, TrainingRun, WeightsInfo
from ckpt_tui.catalog.rows import CheckpointRow, RowState, RunSummary, soonest_expiry
from ckpt_tui.catalog.sizing import RunSizer
from ckpt_tui.logdirs import LogDir
from ckpt_tui.records import CheckpointRecord, last_checkpoint, record_paths
from ckpt_tui.sizes import SizeTotal, total

NOT_METRICS = frozenset(
    {"step", "batch", "epoch", "global_step", "params", "lora_rank", "lora_alpha", "shards",
     "checkpoint_index"}
)  # fmt: skip
"""Numeric keys that are positions or facts (store discovery metadata), not metrics."""


@dataclass(frozen=True)
class RecordRef:
    """A record of a log dir and which of its paths names a checkpoint."""

    log_dir: LogDir
    record: CheckpointRecord
    resume_point: bool


@dataclass
class LogIndex:
    """Every tinker path the log dirs name, and the log dir that names each run first."""

    by_path: dict[str, RecordRef] = field(default_factory=dict)
    log_dir_of_run: dict[str, LogDir] = field(default_factory=dict)
    paths_of_run: dict[str, list[str]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def index_log_dirs(log_dirs: Sequence[LogDir]) -> LogIndex:
    index = LogIndex()
    for log_dir in log_dirs:
        records = log_dir.records_file.records if log_dir.records_file else []
        resume = last_checkpoint(records, required_key="state_path")
        for record in records:
            paths = record_paths(record)
            index.problems.extend(f"{log_dir.path}: {p}" for p in paths.problems)
            for path in (paths.state, paths.sampler):
                if path is None:
                    continue
                is_resume = record is resume and path is paths.state
                if str(path) in index.by_path:
                    continue  # the first log dir to name a checkpoint owns it
                index.by_path[str(path)] = RecordRef(log_dir, record, is_resume)
                index.paths_of_run.setdefault(path.run_id, []).append(str(path))
                index.log_dir_of_run.setdefault(path.run_id, log_dir)
    return index


def numbers_of(values: Mapping[str, object]) -> dict[str, float]:
    """The numeric values of a record's extra keys or a checkpoint's string metadata.

    Keys in NOT_METRICS (steps, counts) are left out.
    """
    found: dict[str, float] = {}
    for key, value in values.items():
        if isinstance(value, bool) or key in NOT_METRICS:
            continue
        if isinstance(value, (int, float)):
            found[key] = float(value)
        elif isinstance(value, str):
            try:
                found[key] = float(value)
            except ValueError:
                continue
    return found


def int_or_none(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def make_row(
    run_name: str,
    path: TinkerPath,
    ckpt: Checkpoint | None,
    ref: RecordRef | None,
    sizer: RunSizer,
) -> CheckpointRow:
    record = None if ref is None else ref.record
    metadata: Mapping[str, object] = (ckpt.user_metadata or {}) if ckpt else {}
    if ckpt is None:
        state, size = RowState.MISSING, sizer.unknown_missing()
    else:
        state = RowState.TRACKED if record else RowState.UNTRACKED
        size = sizer.size_of(ckpt)
    if record is not None:
        step: object = record.batch if record.batch is not None else record.extra.get("step")
        epoch: object = record.epoch
    else:
        step, epoch = metadata.get("batch", metadata.get("step")), metadata.get("epoch")
    metrics = numbers_of(record.extra if record else metadata) if (record or metadata) else {}
    text = ckpt.tinker_path if ckpt is not None else str(path)
    return CheckpointRow(
        run_id=path.run_id,
        run_name=run_name,
        checkpoint_id=path.checkpoint_id,
        tinker_path=text,
        checkpoint_type=path.checkpoint_type,
        state=state,
        server=ckpt,
        record=record,
        step=int_or_none(step),
        epoch=int_or_none(epoch),
        metrics=metrics,
        size=size,
        final=bool(record and record.final) or metadata.get("best") == "true",
        resume_point=bool(ref and ref.resume_point) or metadata.get("resume_point") == "true",
        rolling=bool(record and record.is_rolling),
    )


def path_of(run_id: str, ckpt: Checkpoint) -> TinkerPath:
    """The checkpoint's tinker path, without re-parsing it when it is the expected one."""
    if ckpt.tinker_path == f"tinker://{run_id}/{ckpt.checkpoint_id}":
        return TinkerPath(run_id, ckpt.checkpoint_type, ckpt.checkpoint_id)
    return TinkerPath.parse(ckpt.tinker_path)


def run_id_of(ckpt: Checkpoint) -> str:
    """The run a checkpoint belongs to, read from its tinker path."""
    text = ckpt.tinker_path
    if text.startswith("tinker://"):
        return text[len("tinker://") :].split("/", 1)[0]
    return TinkerPath.parse(text).run_id  # raises with the reason


@dataclass
class Catalog:
    """Everything the UI shows: runs with their rows, and what went wrong reading the logs."""

    runs: list[RunSummary]
    problems: list[str]
    rows: list[CheckpointRow] = field(init=False)
    row_by_path: dict[str, CheckpointRow] = field(init=False, repr=False)
    _by_id: dict[str, RunSummary] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.rows = [row for run in self.runs for row in run.rows]
        self.row_by_path = {row.tinker_path: row for row in self.rows}
        self._by_id = {run.run_id: run for run in self.runs}

    def run(self, run_id: str) -> RunSummary | None:
        return self._by_id.get(run_id)

    @cached_property
    def stored_rows(self) -> list[CheckpointRow]:
        """Rows the server still has (not the missing ones)."""
        return [row for row in self.rows if not row.is_missing]

    @cached_property
    def stored_size(self) -> SizeTotal:
        return total(row.size for row in self.stored_rows)

    @cached_property
    def soonest_expiry(self) -> datetime | None:
        return soonest_expiry(self.stored_rows)


def ordered_run_ids(
    runs: Sequence[TrainingRun], by_run: Mapping[str, list[Checkpoint]], index: LogIndex
) -> list[str]:
    """Server order first, then runs known only from checkpoints or only from logs."""
    ids = [run.training_run_id for run in runs]
    for run_id in [*by_run, *index.log_dir_of_run]:
        if run_id not in ids:
            ids.append(run_id)
    return ids


def info_for(run: TrainingRun | None, log_dir: LogDir | None) -> WeightsInfo | None:
    if run is not None:
        return WeightsInfo(run.base_model, run.is_lora, run.lora_rank)
    if log_dir is not None and log_dir.config.model_name:
        rank = log_dir.config.lora_rank
        return WeightsInfo(log_dir.config.model_name, rank is not None, rank)
    return None


class RowCache:
    """Rows of the previous join, reused when their inputs are equal.

    While pages arrive the view is re-joined every half second, and a poll re-joins it all
    again; reusing unchanged rows makes that a dictionary lookup per row instead of a new row.
    Rows with estimated sizes are always rebuilt, since calibration depends on their run.
    """

    def __init__(self) -> None:
        self._old: dict[str, tuple[object, CheckpointRow]] = {}
        self._new: dict[str, tuple[object, CheckpointRow]] = {}

    def row(
        self,
        run_name: str,
        path: TinkerPath,
        ckpt: Checkpoint | None,
        ref: RecordRef | None,
        sizer: RunSizer,
    ) -> CheckpointRow:
        key = ckpt.tinker_path if ckpt is not None else str(path)
        inputs = (run_name, ckpt, ref)
        hit = self._old.get(key)
        if hit is not None and hit[0] == inputs and (ckpt is None or ckpt.size_bytes is not None):
            self._new[key] = hit
            return hit[1]
        row = make_row(run_name, path, ckpt, ref, sizer)
        self._new[key] = (inputs, row)
        return row

    def finish(self) -> None:
        """Forget rows this join did not use."""
        self._old, self._new = self._new, {}


def summarize_run(
    run_id: str,
    run: TrainingRun | None,
    checkpoints: list[Checkpoint],
    index: LogIndex,
    info: WeightsInfo | None,
    cache: RowCache,
) -> RunSummary:
    log_dir = index.log_dir_of_run.get(run_id)
    info = info or info_for(run, log_dir)
    summary = RunSummary(
        run_id=run_id,
        display_name=log_dir.display_name if log_dir else run_id,
        base_model=info.base_model if info else "?",
        lora_rank=info.lora_rank if info else None,
        is_lora=info.is_lora if info else False,
        server=run,
        log_dir=log_dir,
    )
    sizer = RunSizer(info, checkpoints)
    on_server = {ckpt.tinker_path for ckpt in checkpoints}
    for ckpt in sorted(checkpoints, key=lambda c: (c.time, c.checkpoint_id)):
        path = path_of(run_id, ckpt)
        ref = index.by_path.get(ckpt.tinker_path)
        summary.rows.append(cache.row(summary.display_name, path, ckpt, ref, sizer))
    for text in index.paths_of_run.get(run_id, []):
        if text not in on_server:
            path, ref = TinkerPath.parse(text), index.by_path[text]
            summary.rows.append(cache.row(summary.display_name, path, None, ref, sizer))
    summary.metric_keys = metric_keys(summary.rows)
    return summary


def metric_keys(rows: Sequence[CheckpointRow]) -> list[str]:
    """Numeric keys in order of first appearance; record keys before metadata keys."""
    keys: dict[str, None] = {}
    for tracked_first in (True, False):
        for row in rows:
            if (row.record is not None) == tracked_first:
                for key in row.metrics:
                    keys.setdefault(key)
    return list(keys)


def build_catalog(
    runs: Sequence[TrainingRun],
    checkpoints: Sequence[Checkpoint],
    log_dirs: Sequence[LogDir],
    weights_info: Mapping[str, WeightsInfo] | None = None,
    cache: RowCache | None = None,
) -> Catalog:
    """Join server runs and checkpoints with the log dirs whose records name them.

    Pass the same `cache` to successive joins of a growing or refreshed list to reuse rows.
    """
    cache = cache or RowCache()
    index = index_log_dirs(log_dirs)
    by_run: dict[str, list[Checkpoint]] = {}
    for ckpt in checkpoints:
        by_run.setdefault(run_id_of(ckpt), []).append(ckpt)
    server_runs = {run.training_run_id: run for run in runs}
    infos = weights_info or {}
    summaries = [
        summarize_run(
            run_id,
            server_runs.get(run_id),
            by_run.get(run_id, []),
            index,
            infos.get(run_id),
            cache,
        )
        for run_id in ordered_run_ids(runs, by_run, index)
    ]
    cache.finish()
    summaries.sort(key=newest_first)
    return Catalog(summaries, list(index.problems))


def newest_first(run: RunSummary) -> tuple[float, str]:
    """Runs with the newest checkpoint first; runs with none stored last; then by name."""
    times = [row.created_key for row in run.rows if row.created_key is not None]
    return (-max(times) if times else float("inf"), run.display_name)
