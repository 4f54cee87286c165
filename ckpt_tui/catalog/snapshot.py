"""Loading a whole snapshot: a backend's runs and checkpoints joined with the training logs."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from operator import attrgetter
from pathlib import Path

import msgspec

from ckpt_tui.api_types import Checkpoint, TrainingRun, WeightsInfo
from ckpt_tui.catalog import Catalog, build_catalog
from ckpt_tui.catalog.actions_log import read_deleted_paths, state_log_file
from ckpt_tui.catalog.partial_views import PartialSpacing, PartialViews
from ckpt_tui.catalog.row_cache import RowCache
from ckpt_tui.client import CheckpointClient, ClientError
from ckpt_tui.client.paging import Page, unique_by
from ckpt_tui.training.logdirs import LogDir, LogDirDiscovery, default_runs_root, discover_log_dirs
from ckpt_tui.training.records import record_paths

Progress = Callable[[int, int], None]
WEIGHTS_INFO_CONCURRENCY = 8
UNREADABLE = "unreadable"
"""The user_metadata key in which `ckpt-tui serve` says why a checkpoint cannot be read."""


class LogDirSettings(msgspec.Struct, frozen=True, gc=False):
    """Where to look for training logs: `--log-dir` folders, plus the cookbook's runs root;
    and the actions log, whose deletions a training log's checkpoint is not "missing" for."""

    explicit: tuple[Path, ...] = ()
    runs_root: Path | None = None
    actions_log: Path | None = None
    """The app's actions log (`state_log_file`); None: no deletion is known from before."""

    @classmethod
    def from_args(
        cls, log_dirs: Sequence[str | Path], environ: Mapping[str, str] | None = None
    ) -> LogDirSettings:
        env = os.environ if environ is None else environ
        return cls(tuple(Path(p) for p in log_dirs), default_runs_root(env), state_log_file(env))

    def deleted_on(self, place: str) -> set[str]:
        """The tinker paths the actions log says were deleted on the backend at `place`
        (blocking file I/O: run it in a thread from async code)."""
        return read_deleted_paths(self.actions_log, place)

    def nothing_found(self) -> str:
        """What to say when no log dir was found: where it looked and how to add one."""
        looked = [*self.explicit, *([self.runs_root] if self.runs_root else [])]
        where = f"looked in {', '.join(map(str, looked))}" if looked else "no log dir given"
        return (
            f"no training logs found ({where}): add --log-dir DIR or set "
            "TINKER_COOKBOOK_RUNS_DIR to join checkpoints with their checkpoints.jsonl"
        )

    def discover(self) -> LogDirDiscovery:
        """Scan for log dirs (blocking file I/O: run it in a thread from async code)."""
        return discover_log_dirs(list(self.explicit), self.runs_root)


class Snapshot(msgspec.Struct, frozen=True, weakref=True):
    """What the server and the logs said at one moment, joined.

    Immutable: a refresh, a change in the training logs or a finished action makes a new
    snapshot (`Snapshot.join`), which shares the rows that did not change.
    """

    runs: list[TrainingRun]
    discovery: LogDirDiscovery
    weights_info: dict[str, WeightsInfo]
    catalog: Catalog
    incomplete: str = ""
    """Why the server's lists could not be read whole; "" when they were. An incomplete
    snapshot marks nothing missing, and no keep policy may plan deletions on it."""
    backend_problems: list[str] = msgspec.field(default_factory=list)
    """What the backend could not read (see `backend_problems`), found once when joined."""

    @classmethod
    def join(
        cls,
        runs: list[TrainingRun],
        checkpoints: list[Checkpoint],
        discovery: LogDirDiscovery,
        weights_info: dict[str, WeightsInfo] | None = None,
        cache: RowCache | None = None,
        incomplete: str = "",
        server_problems: Sequence[str] = (),
    ) -> Snapshot:
        """Join runs, checkpoints and log dirs (pass the last join's `cache` to reuse rows);
        `server_problems` are what the server said it could not read, or will not."""
        infos = weights_info or {}
        catalog = build_catalog(
            runs, checkpoints, discovery.log_dirs, infos, cache, complete=not incomplete
        )
        # In the order they were decoded, which is the order they lie in memory: one look at
        # each of 100,000 took 1.2 ms, against 5.2 in the catalog's order.
        found = [*server_problems, *backend_problems(runs, checkpoints)]
        return cls(runs, discovery, infos, catalog, incomplete, found)

    @property
    def checkpoints(self) -> list[Checkpoint]:
        """The server's checkpoints, from the rows (made when asked: only a re-join or a
        patch after an action needs the list). Rows reused from the last join keep the
        equal checkpoint objects they were built with, so no checkpoint is held twice."""
        return [row.server for row in self.catalog.stored_rows if row.server is not None]

    @property
    def complete(self) -> bool:
        return not self.incomplete

    @property
    def problems(self) -> list[str]:
        found = [f"{problem.path}: {problem.message}" for problem in self.discovery.problems]
        return found + self.catalog.problems + self.backend_problems


def backend_problems(runs: Sequence[TrainingRun], checkpoints: Sequence[Checkpoint]) -> list[str]:
    """What the backend could not read: a run's run.json, a checkpoint's files (`unreadable`)."""
    found = [
        f"training run {run.training_run_id}: run.json is missing or unreadable"
        for run in runs
        if run.corrupted
    ]
    with_metadata = [ckpt for ckpt in checkpoints if ckpt.user_metadata]  # most have none
    found += [
        f"{ckpt.tinker_path}: {reason}"
        for ckpt in with_metadata
        if (reason := (ckpt.user_metadata or {}).get(UNREADABLE))
    ]
    return found


async def fetch_weights_info(
    client: CheckpointClient, checkpoints: Sequence[Checkpoint]
) -> dict[str, WeightsInfo]:
    """One `weights_info` per run that has checkpoints of unknown size (for estimates).

    A failure leaves that run to the facts in its TrainingRun; estimates are best effort.
    """
    first_unsized: dict[str, Checkpoint] = {}
    for ckpt in [ckpt for ckpt in checkpoints if ckpt.size_bytes is None]:  # most have one
        first_unsized.setdefault(ckpt.run_id, ckpt)
    gate = asyncio.Semaphore(WEIGHTS_INFO_CONCURRENCY)

    async def one(ckpt: Checkpoint) -> tuple[str, WeightsInfo | None]:
        async with gate:
            try:
                return ckpt.run_id, await client.weights_info(ckpt)
            except ClientError:
                return ckpt.run_id, None

    found = await asyncio.gather(*(one(ckpt) for ckpt in first_unsized.values()))
    return {run_id: info for run_id, info in found if info is not None}


def unique_checkpoints(items: list[Checkpoint]) -> list[Checkpoint]:
    """One per tinker path: pages may overlap if the list shifted while they were fetched.

    The join orders rows itself, so the list keeps the order the pages came in.
    """
    return unique_by(items, attrgetter("tinker_path"))


async def load_snapshot(
    client: CheckpointClient,
    settings: LogDirSettings,
    on_progress: Progress | None = None,
    on_partial: Callable[[Snapshot], None] | None = None,
    cache: RowCache | None = None,
    *,
    own_logs_only: bool,
    spacing: PartialSpacing | None = None,
) -> Snapshot:
    """Runs, checkpoint pages as they arrive (fetched concurrently), and log dirs, joined.

    With `on_partial`, a joined snapshot of what has arrived so far is handed over after the
    first page, and after that as `PartialViews` decides (`spacing`, which loads of several
    backends share, keeps them PARTIAL_EVERY seconds apart), so a screen can fill in. Every
    snapshot shares `cache`, so each re-join only builds rows for what is new.
    `own_logs_only` (one of several backends open): only the log dirs that name one of this
    backend's runs join it; another backend's runs are not "missing" here. It has no
    default, so that no loader of several backends (the app's, `ls`'s, `prune`'s) forgets it.
    """
    cache = cache or RowCache(reused=False)
    discovery_task = asyncio.ensure_future(asyncio.to_thread(settings.discover))
    # What the user deleted through ckpt-tui before is gone on purpose, not "missing".
    deletions_task = asyncio.ensure_future(
        asyncio.to_thread(settings.deleted_on, client.endpoint.display_url)
    )
    # Runs and checkpoint pages are read side by side: each list waits on the network.
    runs_task = asyncio.ensure_future(
        client.read_all_training_runs(project_id=client.endpoint.project)
    )
    in_project: InProject | None = None
    checkpoints: list[Checkpoint] = []
    reading = 1
    views = PartialViews(spacing or PartialSpacing())

    async def project_filter() -> InProject | None:
        """With --project, the filter its runs make (waiting for them once)."""
        nonlocal in_project
        if in_project is None and client.endpoint.project is not None:
            in_project = InProject((await runs_task).items)
        return in_project

    async def arrived(page: Page[Checkpoint]) -> None:
        nonlocal reading
        if page.read != reading:  # the list changed: it is being read again
            reading = page.read
            views.read_again()
            checkpoints.clear()
        views.arrived(len(page.items))
        only = await project_filter()
        checkpoints.extend(page.items if only is None else only.checkpoints(page.items))
        if on_progress is not None:
            on_progress(len(checkpoints), max(page.total, len(checkpoints)))
        if not runs_task.done():
            return  # a first look waits for the runs (whose error would end the load)
        runs = runs_task.result().items
        if deletions_task.done():
            cache.deleted_here.update(deletions_task.result())
        if on_partial is not None and views.due(len(checkpoints), page.total):
            discovery = (
                discovery_task.result() if discovery_task.done() else LogDirDiscovery([], [])
            )
            discovery = logs_of(discovery, runs, only, own_logs_only)
            on_partial(await joined(runs, checkpoints, discovery, {}, cache))

    try:
        listing = await client.read_all_checkpoints(on_page=arrived, known=cache.known)
        run_listing = await runs_task
        only = await project_filter()
        infos = await fetch_weights_info(client, checkpoints)
        discovery = await discovery_task
        discovery = logs_of(discovery, run_listing.items, only, own_logs_only)
        cache.deleted_here.update(await deletions_task)
    except BaseException:
        discovery_task.cancel()
        deletions_task.cancel()
        runs_task.cancel()
        await asyncio.gather(runs_task, return_exceptions=True)
        raise
    incomplete = "; ".join(
        f"{what} is incomplete: {part.problem}"
        for what, part in (("the list of runs", run_listing), ("the list of checkpoints", listing))
        if not part.complete
    )
    kept = listing.items if only is None else only.checkpoints(listing.items)  # one of each
    said = list(dict.fromkeys([*run_listing.server_problems, *listing.server_problems]))
    return await asyncio.to_thread(
        Snapshot.join, run_listing.items, kept, discovery, infos, cache, incomplete, said
    )


def logs_of(
    found: LogDirDiscovery, runs: Sequence[TrainingRun], only: InProject | None, own_logs_only: bool
) -> LogDirDiscovery:
    """The log dirs that join a backend: its project's (`only`), or with `own_logs_only` the
    ones that name one of its `runs`; else every one found."""
    if only is not None:
        return only.discovery(found)
    return InProject(runs).discovery(found) if own_logs_only else found


class InProject:
    """With `--project`: only the project's runs, their checkpoints, and the log dirs that name
    them (`/checkpoints` lists every project's; a log dir names no project, only runs)."""

    def __init__(self, runs: Sequence[TrainingRun]) -> None:
        self.run_ids = frozenset(run.training_run_id for run in runs)

    def checkpoints(self, items: Sequence[Checkpoint]) -> list[Checkpoint]:
        return [checkpoint for checkpoint in items if checkpoint.run_id in self.run_ids]

    def discovery(self, found: LogDirDiscovery) -> LogDirDiscovery:
        kept = [log_dir for log_dir in found.log_dirs if self.names_a_run(log_dir)]
        return LogDirDiscovery(kept, found.problems)

    def names_a_run(self, log_dir: LogDir) -> bool:
        records = log_dir.records_file.records if log_dir.records_file else []
        for record in records:
            paths = record_paths(record)
            for path in (paths.state, paths.sampler):
                if path is not None and path.run_id in self.run_ids:
                    return True
        return False


async def joined(
    runs: list[TrainingRun],
    checkpoints: list[Checkpoint],
    discovery: LogDirDiscovery,
    infos: dict[str, WeightsInfo],
    cache: RowCache,
) -> Snapshot:
    """A snapshot of the pages that have arrived (they may overlap if the list shifted),
    joined in a thread so the event loop keeps going."""
    return await asyncio.to_thread(
        Snapshot.join, runs, unique_checkpoints(checkpoints), discovery, infos, cache
    )
