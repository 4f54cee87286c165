"""Join the server's runs and checkpoints with the training logs that name them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ckpt_tui.api_types import Checkpoint, TinkerPath, TrainingRun, WeightsInfo
from ckpt_tui.catalog.rows import CheckpointRow, RowState, RunSummary
from ckpt_tui.catalog.sizing import RunSizer
from ckpt_tui.logdirs import LogDir
from ckpt_tui.records import CheckpointRecord, last_checkpoint, record_paths


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
    """The numeric values of a record's extra keys or a checkpoint's string metadata."""
    found: dict[str, float] = {}
    for key, value in values.items():
        if isinstance(value, bool):
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


def haystack_of(
    run_name: str, path: str, ckpt: Checkpoint | None, rec: CheckpointRecord | None
) -> str:
    parts = [run_name, path]
    if ckpt is not None and ckpt.user_metadata:
        parts.extend(f"{k}={v}" for k, v in ckpt.user_metadata.items())
    if rec is not None:
        parts.extend(f"{k}={v}" for k, v in rec.extra.items())
    return "\n".join(parts).lower()


def make_row(
    run_name: str,
    path: TinkerPath,
    ckpt: Checkpoint | None,
    ref: RecordRef | None,
    sizer: RunSizer,
) -> CheckpointRow:
    record = None if ref is None else ref.record
    metadata: Mapping[str, object] = (ckpt.user_metadata or {}) if ckpt else {}
    source: Mapping[str, object] = record.to_dict() if record else metadata
    if ckpt is None:
        state, size = RowState.MISSING, sizer.unknown_missing()
    else:
        state = RowState.TRACKED if record else RowState.UNTRACKED
        size = sizer.size_of(ckpt)
    metrics = numbers_of(record.extra if record else metadata)
    return CheckpointRow(
        run_id=path.run_id,
        run_name=run_name,
        checkpoint_id=path.checkpoint_id,
        tinker_path=str(path),
        checkpoint_type=path.checkpoint_type,
        state=state,
        server=ckpt,
        record=record,
        step=int_or_none(source.get("batch", source.get("step"))),
        epoch=int_or_none(source.get("epoch")),
        metrics={k: v for k, v in metrics.items() if k not in ("step", "batch", "epoch")},
        size=size,
        final=bool(record and record.final),
        resume_point=bool(ref and ref.resume_point),
        rolling=bool(record and record.is_rolling),
        haystack=haystack_of(run_name, str(path), ckpt, record),
    )


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


def summarize_run(
    run_id: str,
    run: TrainingRun | None,
    checkpoints: list[Checkpoint],
    index: LogIndex,
    info: WeightsInfo | None,
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
        path = TinkerPath.parse(ckpt.tinker_path)
        ref = index.by_path.get(ckpt.tinker_path)
        summary.rows.append(make_row(summary.display_name, path, ckpt, ref, sizer))
    for text in index.paths_of_run.get(run_id, []):
        if text not in on_server:
            path, ref = TinkerPath.parse(text), index.by_path[text]
            summary.rows.append(make_row(summary.display_name, path, None, ref, sizer))
    summary.metric_keys = metric_keys(summary.rows)
    return summary


def metric_keys(rows: Sequence[CheckpointRow]) -> list[str]:
    """Numeric keys in order of first appearance; record keys before metadata keys."""
    keys: dict[str, None] = {}
    for tracked_first in (True, False):
        for row in rows:
            if (row.record is not None) == tracked_first:
                keys.update(dict.fromkeys(row.metrics))
    return list(keys)


def build_catalog(
    runs: Sequence[TrainingRun],
    checkpoints: Sequence[Checkpoint],
    log_dirs: Sequence[LogDir],
    weights_info: Mapping[str, WeightsInfo] | None = None,
) -> Catalog:
    """Join server runs and checkpoints with the log dirs whose records name them."""
    index = index_log_dirs(log_dirs)
    by_run: dict[str, list[Checkpoint]] = {}
    for ckpt in checkpoints:
        by_run.setdefault(TinkerPath.parse(ckpt.tinker_path).run_id, []).append(ckpt)
    server_runs = {run.training_run_id: run for run in runs}
    infos = weights_info or {}
    summaries = [
        summarize_run(
            run_id, server_runs.get(run_id), by_run.get(run_id, []), index, infos.get(run_id)
        )
        for run_id in ordered_run_ids(runs, by_run, index)
    ]
    return Catalog(summaries, list(index.problems))
