"""Join the server's runs and checkpoints with the training logs that name them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from operator import attrgetter

import msgspec

from ckpt_tui.api_types import (
    TINKER_SCHEME,
    Checkpoint,
    CheckpointType,
    TinkerPath,
    TrainingRun,
    WeightsInfo,
)
from ckpt_tui.catalog.rows import (
    CheckpointRow,
    RecordRef,
    RowState,
    RunSummary,
    int_or_none,
    is_incomplete,
    number_or_none,
    search_text,
    soonest_expiry,
    stored_only,
)
from ckpt_tui.catalog.sizing import RunSizer
from ckpt_tui.sizes import Size, SizeTotal, total
from ckpt_tui.training.logdirs import LogDir
from ckpt_tui.training.records import last_checkpoint, record_paths

NOT_METRICS = frozenset(
    {"step", "batch", "epoch", "global_step", "params", "lora_rank", "lora_alpha", "shards",
     "checkpoint_index"}
)  # fmt: skip
"""Numeric keys that are positions or facts (store discovery metadata), not metrics."""


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
        if key in NOT_METRICS:
            continue
        kind = type(value)
        if kind is str:  # server metadata: always strings
            first = value[:1]  # type: ignore[index]
            if first.isalpha() and first not in "nNiI":  # not "nan", "inf" or "infinity"
                continue  # "hf-trainer", "true": float() would refuse; skip its ~1 µs exception
            try:
                found[key] = float(value)  # type: ignore[arg-type]
            except ValueError:
                continue
        elif kind is float or kind is int:
            found[key] = float(value)  # type: ignore[arg-type]
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            found[key] = float(value)
    return found


NO_METRICS: Mapping[str, float] = {}
"""Shared by every row without metrics (most of them): read-only through `Mapping`."""
TRACKED, UNTRACKED, MISSING = RowState.TRACKED, RowState.UNTRACKED, RowState.MISSING


def make_row(
    run_name: str,
    path: tuple[str, str, str, CheckpointType],
    ckpt: Checkpoint | None,
    ref: RecordRef | None,
    size: Size,
    backend: str = "",
) -> CheckpointRow:
    """One checkpoint's row: the server's facts, its training-log record, and its size.

    `path` is (run id, checkpoint id, tinker path, type); `backend` names where it is stored.
    Runs 100,000 times a join.
    """
    run_id, checkpoint_id, tinker_path, checkpoint_type = path
    metadata = ckpt.user_metadata if ckpt is not None else None
    record = None
    metrics = NO_METRICS
    step = epoch = None
    final = resume = rolling = False
    if ref is not None:
        record = ref.record
        if record.extra:
            metrics = numbers_of(record.extra)
        final, resume, rolling = bool(record.final), ref.resume_point, record.is_rolling
        batch = record.batch
        step = int_or_none(batch if batch is not None else record.extra.get("step"))
        epoch = number_or_none(record.epoch)
    if metadata:
        resume = resume or metadata.get("resume_point") == "true"
        if record is None:
            metrics = numbers_of(metadata)
            step = int_or_none(metadata.get("batch", metadata.get("step")))
            epoch = number_or_none(metadata.get("epoch"))
    if ckpt is None:
        state, created, expires_at = MISSING, None, None
    else:
        state = UNTRACKED if ref is None else TRACKED
        created, expires_at = ckpt.time, ckpt.expires_at
    name = checkpoint_id.split("/", 1)[-1]
    return CheckpointRow(
        run_id,
        run_name,
        checkpoint_id,
        name,
        tinker_path,
        checkpoint_type,
        state,
        ckpt,
        ref,
        metrics or NO_METRICS,
        step,
        epoch,
        size,
        final,
        resume,
        rolling,
        created,
        expires_at,
        f"{run_name}\x00{name}".lower(),
        search_text(run_name, tinker_path, metadata, record),
        backend,
    )


def parts_of(path: TinkerPath) -> tuple[str, str, str, CheckpointType]:
    return (path.run_id, path.checkpoint_id, str(path), path.checkpoint_type)


def group_by_run(checkpoints: Sequence[Checkpoint]) -> dict[str, list[Checkpoint]]:
    """Checkpoints per run id, in their order; run ids in order of first appearance."""
    if all([ckpt.tinker_path.startswith(TINKER_SCHEME) for ckpt in checkpoints]):
        # "tinker://RUN/..." splits into ["tinker:", "", RUN, ...]
        run_ids = [ckpt.tinker_path.split("/", 3)[2] for ckpt in checkpoints]
    else:
        run_ids = [run_id_of(ckpt) for ckpt in checkpoints]  # raises with the reason
    by_run: dict[str, list[Checkpoint]] = {}
    for run_id, ckpt in zip(run_ids, checkpoints, strict=True):
        group = by_run.get(run_id)
        if group is None:
            by_run[run_id] = [ckpt]
        else:
            group.append(ckpt)
    return by_run


def run_id_of(ckpt: Checkpoint) -> str:
    """The run a checkpoint belongs to, read from its tinker path."""
    text = ckpt.tinker_path
    if text.startswith("tinker://"):
        return text[len("tinker://") :].split("/", 1)[0]
    return TinkerPath.parse(text).run_id  # raises with the reason


class Catalog(msgspec.Struct, frozen=True, gc=False):
    """Everything the UI shows: runs with their rows, and what went wrong reading the logs.

    Immutable: a refresh or a change in the training logs makes a new catalog (`Catalog.of`),
    which shares the rows that did not change.
    """

    runs: list[RunSummary]
    problems: list[str]
    rows: list[CheckpointRow]
    row_by_path: dict[str, CheckpointRow]
    stored_rows: list[CheckpointRow]
    """Rows the server still has (not the missing ones)."""
    stored_size: SizeTotal
    soonest_expiry: datetime | None
    run_by_id: dict[str, RunSummary]

    @classmethod
    def of(cls, runs: list[RunSummary], problems: list[str]) -> Catalog:
        # Worked out here, in the joining thread: the header needs the totals on every frame.
        rows = [row for run in runs for row in run.rows]
        stored = stored_only(rows)
        return cls(
            runs,
            problems,
            rows,
            {row.tinker_path: row for row in rows},
            stored,
            total([row.size for row in stored]),
            soonest_expiry(stored),
            {run.run_id: run for run in runs},
        )

    def run(self, run_id: str) -> RunSummary | None:
        return self.run_by_id.get(run_id)


def ordered_run_ids(
    runs: Sequence[TrainingRun], by_run: Mapping[str, list[Checkpoint]], index: LogIndex
) -> list[str]:
    """Server order first, then runs known only from checkpoints or only from logs."""
    ids = dict.fromkeys(run.training_run_id for run in runs)
    ids.update(dict.fromkeys(by_run))
    ids.update(dict.fromkeys(index.log_dir_of_run))
    return list(ids)


def info_for(run: TrainingRun | None, log_dir: LogDir | None) -> WeightsInfo | None:
    if run is not None:
        return WeightsInfo(run.base_model, run.is_lora, run.lora_rank)
    if log_dir is not None and log_dir.config.model_name:
        rank = log_dir.config.lora_rank
        return WeightsInfo(log_dir.config.model_name, rank is not None, rank)
    return None


class RowCache:
    """Rows of the previous join, reused when their inputs are equal.

    While pages arrive the view is re-joined a few times a second, and a poll re-joins it all
    again; reusing unchanged rows makes that a dictionary lookup per row instead of a new row.
    An estimated size is part of the inputs, since calibration depends on the rest of the run.

    One cache serves one backend: `backend` is the name its rows and runs carry.
    """

    def __init__(self, backend: str = "") -> None:
        self.backend = backend
        self._old: Mapping[str, CheckpointRow] = {}
        self.deleted_here: set[str] = set()
        """Paths this client deleted: a training log naming one does not make it "missing"
        (the user knows where it went), in this join or any later one."""

    def stored(
        self, run_name: str, run_id: str, ckpt: Checkpoint, ref: RecordRef | None, sizer: RunSizer
    ) -> CheckpointRow:
        """The row of a checkpoint the server has."""
        key = ckpt.tinker_path
        row = self._old.get(key)
        if (
            row is None
            or row.run_name != run_name
            or row.ref != ref
            or (row.server is not ckpt and row.server != ckpt)
            or (ckpt.size_bytes is None and row.size != sizer.size_of(ckpt))
        ):
            if key == f"tinker://{run_id}/{ckpt.checkpoint_id}":  # as expected: no parsing
                path = (run_id, ckpt.checkpoint_id, key, ckpt.checkpoint_type)
            else:
                path = parts_of(TinkerPath.parse(key))
            size_bytes = ckpt.size_bytes  # exact sizes inline: one call less per row
            if size_bytes is None:
                size = sizer.size_of(ckpt)
            elif ckpt.user_metadata and is_incomplete(ckpt):
                size = Size.partial(size_bytes)
            else:
                size = Size.exact(size_bytes)
            row = make_row(run_name, path, ckpt, ref, size, self.backend)
        return row

    def missing(self, run_name: str, text: str, ref: RecordRef) -> CheckpointRow:
        """The row of a checkpoint a training log names but the server no longer has."""
        row = self._old.get(text)
        if row is None or row.run_name != run_name or row.server is not None or row.ref != ref:
            path = parts_of(TinkerPath.parse(text))
            row = make_row(run_name, path, None, ref, RunSizer.unknown_missing(), self.backend)
        return row

    def keep(self, catalog: Catalog) -> None:
        """Remember this join's rows for the next one (the catalog indexes them by path)."""
        self._old = catalog.row_by_path

    def known(self, items: list[Checkpoint]) -> list[Checkpoint]:
        """`items`, each one that equals the checkpoint of the last join's row replaced by it.

        Applied to each page as it arrives, a refresh holds one copy of every unchanged
        checkpoint and frees the page's copies at once, instead of holding 100,000 copies
        until the join drops them (which left that much memory fragmented after a refresh);
        the join then finds them by identity.
        """
        old = self._old
        if not old:
            return items
        get = old.get
        return [
            kept if (row := get(ckpt.tinker_path)) is not None and (kept := row.server) == ckpt
            else ckpt
            for ckpt in items
        ]  # fmt: skip


BY_TIME = attrgetter("time", "checkpoint_id")


def summarize_run(
    run_id: str,
    run: TrainingRun | None,
    checkpoints: list[Checkpoint],
    index: LogIndex,
    info: WeightsInfo | None,
    cache: RowCache,
    complete: bool = True,
) -> RunSummary:
    log_dir = index.log_dir_of_run.get(run_id)
    info = info or info_for(run, log_dir)
    name = log_dir.display_name if log_dir else (name_in_metadata(run) or run_id)
    sizer = RunSizer(info, checkpoints)
    refs = index.by_path
    rows = [
        cache.stored(name, run_id, ckpt, refs.get(ckpt.tinker_path), sizer)
        for ckpt in sorted(checkpoints, key=BY_TIME)
    ]
    logged = index.paths_of_run.get(run_id) if complete else None
    if logged:
        on_server = {ckpt.tinker_path for ckpt in checkpoints}
        deleted_here = cache.deleted_here
        rows += [
            cache.missing(name, text, refs[text])
            for text in logged
            if text not in on_server and text not in deleted_here
        ]
    return RunSummary(
        run_id=run_id,
        display_name=name,
        base_model=info.base_model if info else "?",
        lora_rank=info.lora_rank if info else None,
        is_lora=info.is_lora if info else False,
        server=run,
        log_dir=log_dir,
        rows=rows,
        metric_keys=metric_keys(rows),
        backend=cache.backend,
    )


RUN_NAME_KEYS = ("name", "run_name", "display_name")
"""user_metadata keys that may name a run the training logs do not know (first one wins)."""


def name_in_metadata(run: TrainingRun | None) -> str | None:
    metadata = (run.user_metadata if run else None) or {}
    return next((metadata[key] for key in RUN_NAME_KEYS if metadata.get(key)), None)


def metric_keys(rows: Sequence[CheckpointRow]) -> list[str]:
    """Numeric keys in order of first appearance; record keys before metadata keys."""
    keys: dict[str, object] = {}
    # dict.update keeps each key where it first appeared
    for row in rows:
        if row.ref is not None and row.metrics:
            keys.update(row.metrics)
    for row in rows:
        if row.ref is None and row.metrics:
            keys.update(row.metrics)
    return list(keys)


def build_catalog(
    runs: Sequence[TrainingRun],
    checkpoints: Sequence[Checkpoint],
    log_dirs: Sequence[LogDir],
    weights_info: Mapping[str, WeightsInfo] | None = None,
    cache: RowCache | None = None,
    *,
    complete: bool = True,
) -> Catalog:
    """Join server runs and checkpoints with the log dirs whose records name them.

    Pass the same `cache` to successive joins of a growing or refreshed list to reuse rows.
    With `complete` False (the server's list could not be read whole), a logged checkpoint
    the list lacks is left out rather than marked missing: it may well exist.
    """
    cache = cache or RowCache()
    index = index_log_dirs(log_dirs)
    by_run = group_by_run(checkpoints)
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
            complete,
        )
        for run_id in ordered_run_ids(runs, by_run, index)
    ]
    summaries.sort(key=newest_first)
    catalog = Catalog.of(summaries, list(index.problems))
    cache.keep(catalog)
    return catalog


def newest_first(run: RunSummary) -> tuple[float, str]:
    """Runs with the newest checkpoint first; runs with none stored last; then by name."""
    newest = max([row.created for row in run.rows if row.created is not None], default=None)
    return (float("inf") if newest is None else -newest.timestamp(), run.display_name)
