"""What a join reads besides the checkpoints: the server's runs and the training logs."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ckpt_tui.api_types import TrainingRun
from ckpt_tui.catalog.rows import RecordRef
from ckpt_tui.training.logdirs import LogDir
from ckpt_tui.training.records import last_checkpoint, record_paths


class LogIndex(msgspec.Struct):
    """Every tinker path the log dirs name, and the log dir that names each run first."""

    by_path: dict[str, RecordRef] = msgspec.field(default_factory=dict)
    log_dir_of_run: dict[str, LogDir] = msgspec.field(default_factory=dict)
    paths_of_run: dict[str, list[str]] = msgspec.field(default_factory=dict)
    problems: list[str] = msgspec.field(default_factory=list)


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


RUN_NAME_KEYS = ("name", "run_name", "display_name")
"""user_metadata keys that may name a run the training logs do not know (first one wins)."""


def name_in_metadata(run: TrainingRun | None) -> str | None:
    metadata = (run.user_metadata if run else None) or {}
    return next((metadata[key] for key in RUN_NAME_KEYS if metadata.get(key)), None)


class JoinSources(msgspec.Struct, frozen=True):
    """The server's runs by id and the index of the log dirs, worked out once per join."""

    server_runs: dict[str, TrainingRun]
    index: LogIndex

    @classmethod
    def of(cls, runs: Sequence[TrainingRun], log_dirs: Sequence[LogDir]) -> JoinSources:
        return cls({run.training_run_id: run for run in runs}, index_log_dirs(log_dirs))

    def run_name(self, run_id: str) -> str:
        """What a run is called: its log dir's name, else its metadata's, else its id."""
        log_dir = self.index.log_dir_of_run.get(run_id)
        if log_dir is not None:
            return log_dir.display_name
        return name_in_metadata(self.server_runs.get(run_id)) or run_id
