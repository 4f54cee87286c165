"""Join the server's runs and checkpoints with the training logs that name them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from operator import attrgetter

import msgspec

from ckpt_tui.api_types import (
    TINKER_SCHEME,
    Checkpoint,
    TinkerPath,
    TrainingRun,
    WeightsInfo,
)
from ckpt_tui.catalog.row_cache import RowCache
from ckpt_tui.catalog.rows import CheckpointRow, PathIndex, RunSummary
from ckpt_tui.catalog.sizing import RunSizer
from ckpt_tui.catalog.sources import JoinSources
from ckpt_tui.sizes import SizeTotal, sum_totals
from ckpt_tui.training.logdirs import LogDir


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
    paths: PathIndex
    """`rows` by tinker path (`row_by_path`), made on first use."""
    stored_rows: list[CheckpointRow]
    """Rows the server still has (not the missing ones)."""
    stored_size: SizeTotal
    soonest_expiry: datetime | None
    run_by_id: dict[str, RunSummary]

    @classmethod
    def of(cls, runs: list[RunSummary], problems: list[str]) -> Catalog:
        # Worked out here, in the joining thread: the header needs the totals on every frame.
        rows = [row for run in runs for row in run.rows]
        expiries = [run.soonest_expiry for run in runs if run.soonest_expiry is not None]
        return cls(
            runs,
            problems,
            rows,
            PathIndex(rows),
            [row for run in runs for row in run.stored_rows],
            sum_totals([run.size for run in runs]),
            min(expiries, default=None),
            {run.run_id: run for run in runs},
        )

    @property
    def row_by_path(self) -> Mapping[str, CheckpointRow]:
        return self.paths.mapping()

    def run(self, run_id: str) -> RunSummary | None:
        return self.run_by_id.get(run_id)


def ordered_run_ids(
    runs: Sequence[TrainingRun], by_run: Mapping[str, list[Checkpoint]], sources: JoinSources
) -> list[str]:
    """Server order first, then runs known only from checkpoints or only from logs."""
    ids = dict.fromkeys(run.training_run_id for run in runs)
    ids.update(dict.fromkeys(by_run))
    ids.update(dict.fromkeys(sources.index.log_dir_of_run))
    return list(ids)


def info_for(run: TrainingRun | None, log_dir: LogDir | None) -> WeightsInfo | None:
    if run is not None:
        return WeightsInfo(run.base_model, run.is_lora, run.lora_rank)
    if log_dir is not None and log_dir.config.model_name:
        rank = log_dir.config.lora_rank
        return WeightsInfo(log_dir.config.model_name, rank is not None, rank)
    return None


BY_TIME = attrgetter("time", "checkpoint_id")


def summarize_run(
    run_id: str,
    checkpoints: list[Checkpoint],
    sources: JoinSources,
    info: WeightsInfo | None,
    cache: RowCache,
    complete: bool = True,
) -> RunSummary:
    run = sources.server_runs.get(run_id)
    log_dir = sources.index.log_dir_of_run.get(run_id)
    info = info or info_for(run, log_dir)
    name = sources.run_name(run_id)
    sizer = RunSizer(info, checkpoints)
    refs = sources.index.by_path
    rows = cache.stored(name, run_id, sorted(checkpoints, key=BY_TIME), refs, sizer)
    logged = sources.index.paths_of_run.get(run_id) if complete else None
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


def metric_choices(key_lists: Iterable[Sequence[str]]) -> list[str]:
    """The metric keys to choose from, in one order for every choice (the browse screen's
    metric column, the keep policy's ranking): the keys the most lists (runs) put first,
    then the rest in order of first appearance."""
    lists = [keys for keys in key_lists if keys]
    ordered = [key for key, _ in Counter(keys[0] for keys in lists).most_common()]
    for keys in lists:
        ordered += [key for key in keys if key not in ordered]
    return ordered


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
    cache = cache or RowCache(reused=False)
    sources = JoinSources.of(runs, log_dirs)
    by_run = group_by_run(checkpoints)
    infos = weights_info or {}
    summaries = [
        summarize_run(run_id, by_run.get(run_id, []), sources, infos.get(run_id), cache, complete)
        for run_id in ordered_run_ids(runs, by_run, sources)
    ]
    summaries.sort(key=newest_first)
    catalog = Catalog.of(summaries, list(sources.index.problems))
    cache.keep(catalog.paths)
    return catalog


def newest_first(run: RunSummary) -> tuple[float, str]:
    """Runs with the newest checkpoint first; runs with none stored last; then by name."""
    stored = run.stored_rows  # oldest first (`summarize_run`): the newest is the last
    newest = stored[-1].created if stored else None
    return (float("inf") if newest is None else -newest.timestamp(), run.display_name)
