"""Finding and reading tinker-cookbook log directories.

A log directory is a folder that holds `checkpoints.jsonl`; it usually also holds `config.json`
(the run's config: `model_name`, `lora_rank`, `log_path`, ...) and `metrics.jsonl`, which the
cookbook's `JsonLogger.log_metrics` writes as `{"step": step, **metrics}` per line
(`tinker_cookbook/utils/ml_log.py`). Log directories live under `$TINKER_COOKBOOK_RUNS_DIR`, else
`~/tinker-runs`, or wherever `--log-dir` points.

Nothing here raises on bad files: problems are collected so a UI can show them.
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import msgspec

from ckpt_tui.bounded_json import parse_json, read_json_file
from ckpt_tui.regular_files import open_regular
from ckpt_tui.training.records import (
    CHECKPOINTS_FILE_NAME,
    FileStamp,
    RecordsFile,
    SkippedLine,
    parse_jsonl_bytes,
    read_checkpoints_jsonl,
)

RUNS_DIR_ENV = "TINKER_COOKBOOK_RUNS_DIR"
CONFIG_FILE_NAME = "config.json"
METRICS_FILE_NAME = "metrics.jsonl"
DEFAULT_MAX_DEPTH = 6


def default_runs_root(environ: Mapping[str, str] | None = None) -> Path:
    """`$TINKER_COOKBOOK_RUNS_DIR`, else `~/tinker-runs`."""
    env = os.environ if environ is None else environ
    value = env.get(RUNS_DIR_ENV, "").strip()
    return Path(value).expanduser() if value else Path.home() / "tinker-runs"


class Problem(msgspec.Struct, frozen=True, gc=False):
    """Something found while looking at log directories that the user may want to fix."""

    path: Path
    message: str


class RunConfig(msgspec.Struct, frozen=True):
    """The parts of a run's `config.json` that ckpt-tui uses; `raw` keeps the rest."""

    model_name: str | None = None
    lora_rank: int | None = None
    log_path: str | None = None
    raw: dict[str, Any] = msgspec.field(default_factory=dict)
    error: str | None = None


def read_run_config(path: Path) -> RunConfig:
    """Read `config.json`; a missing or bad file gives a RunConfig with `error` set."""
    try:
        raw = read_json_file(path)  # hostile input: bounded like the store's files
    except FileNotFoundError:
        return RunConfig(error="no config.json")
    except (OSError, ValueError) as exc:
        return RunConfig(error=f"cannot read {path.name}: {exc}")
    if not isinstance(raw, dict):
        return RunConfig(error=f"{path.name} is not a JSON object")
    model = raw.get("model_name", raw.get("base_model"))
    rank = raw.get("lora_rank")
    log_path = raw.get("log_path")
    return RunConfig(
        model_name=model if isinstance(model, str) else None,
        lora_rank=rank if isinstance(rank, int) and not isinstance(rank, bool) else None,
        log_path=log_path if isinstance(log_path, str) else None,
        raw=raw,
    )


class Metrics(msgspec.Struct, frozen=True):
    """`metrics.jsonl` as one (step, value) series per numeric key.

    `read_to`, `lines` and `stamp` say how much of the file this holds, so the next read
    (`read_metrics(path, previous)`) parses only what was appended since.
    """

    series: dict[str, list[tuple[int, float]]]
    skipped: list[SkippedLine]
    error: str | None = None
    read_to: int = 0
    lines: int = 0
    positions: int = 0
    stamp: FileStamp | None = None

    def is_current(self, path: Path) -> bool:
        """True if the file is still as this read it (same size and mtime)."""
        return FileStamp.of(path) == self.stamp


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _step_of(value: object, position: int) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return position


MAX_METRICS_READ = 64 * 1024 * 1024
"""The most bytes one read of metrics.jsonl takes in (a huge file is read in turns)."""


def read_metrics(path: Path, previous: Metrics | None = None) -> Metrics:
    """Read `metrics.jsonl`, or only the lines appended since `previous` was read.

    A line without an integer `step` takes its position as step. A last line still being
    written (no newline, not yet valid JSON) is left for the next read. A file that shrank
    (rewritten) is read again from its start.
    """
    stamp = FileStamp.of(path)
    if previous is not None and (stamp is None or stamp.size < previous.read_to):
        previous = None
    start = 0 if previous is None else previous.read_to
    try:
        with open_regular(path) as handle:  # a FIFO would hang the read
            handle.seek(start)
            data = handle.read(MAX_METRICS_READ)
    except FileNotFoundError:
        return Metrics({}, [], "no metrics.jsonl")
    except OSError as exc:
        return Metrics({}, [], f"cannot read {path.name}: {exc}")
    data = _complete_lines(data)
    base = previous or Metrics({}, [])
    series = {key: list(points) for key, points in base.series.items()}
    skipped = list(base.skipped)
    parsed, new_skipped = parse_jsonl_bytes(data)
    skipped += [SkippedLine(s.line_no + base.lines, s.reason) for s in new_skipped]
    for position, line in enumerate(parsed, start=base.positions):
        if not isinstance(line.value, dict):
            skipped.append(SkippedLine(line.line_no + base.lines, "not a JSON object"))
            continue
        step = _step_of(line.value.get("step"), position)
        for key, value in line.value.items():
            if key != "step" and _is_number(value) and math.isfinite(value):
                series.setdefault(key, []).append((step, float(value)))
    skipped.sort(key=lambda s: s.line_no)
    lines = base.lines + data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    positions = base.positions + len(parsed)
    return Metrics(series, skipped, None, start + len(data), lines, positions, stamp)


def _complete_lines(data: bytes) -> bytes:
    """`data` without a last line that is still being written (no newline, not JSON yet)."""
    cut = data.rfind(b"\n") + 1
    tail = data[cut:]
    if not tail.strip():
        return data
    try:
        parse_json(tail, METRICS_FILE_NAME)  # bounded: a deep unfinished line must not recurse
    except ValueError:
        return data[:cut]
    return data


class LogDir:
    """One log directory: its records now, and its config when first asked for.

    Its metrics.jsonl is read by `read_metrics` (the TUI keeps one cache of them, by folder).
    """

    def __init__(self, path: Path, display_name: str) -> None:
        self.path = path
        self.display_name = display_name
        self.records_file: RecordsFile | None = None
        self.read_error: str | None = None
        self._config: RunConfig | None = None
        self.reload()

    @property
    def checkpoints_path(self) -> Path:
        return self.path / CHECKPOINTS_FILE_NAME

    def reload(self) -> None:
        """Read `checkpoints.jsonl` again (the config is re-read on next use)."""
        self._config = None
        try:
            self.records_file = read_checkpoints_jsonl(self.checkpoints_path)
            self.read_error = None
        except OSError as exc:
            self.records_file = None
            self.read_error = f"cannot read {CHECKPOINTS_FILE_NAME}: {exc.strerror or exc}"

    def has_changed(self) -> bool:
        """True if `checkpoints.jsonl` differs from what was read (size or mtime)."""
        if self.records_file is None:
            return FileStamp.of(self.checkpoints_path) is not None
        return self.records_file.has_changed()

    def refresh(self) -> bool:
        """Re-read only if the file changed; True if it was re-read."""
        if not self.has_changed():
            return False
        self.reload()
        return True

    @property
    def config(self) -> RunConfig:
        if self._config is None:
            self._config = read_run_config(self.path / CONFIG_FILE_NAME)
        return self._config

    def problems(self) -> list[Problem]:
        """Unreadable file and skipped lines, for display."""
        if self.read_error is not None:
            return [Problem(self.checkpoints_path, self.read_error)]
        assert self.records_file is not None
        return [
            Problem(self.checkpoints_path, f"line {s.line_no} skipped: {s.reason}")
            for s in self.records_file.skipped
        ]

    def __repr__(self) -> str:
        return f"LogDir({str(self.path)!r}, {self.display_name!r})"


class LogDirDiscovery(msgspec.Struct):
    """The log directories found and everything that got in the way."""

    log_dirs: list[LogDir]
    problems: list[Problem]


def _holds_checkpoints(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path / CHECKPOINTS_FILE_NAME).st_mode)
    except OSError:
        return False


def _dir_key(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _subdirs(path: Path, problems: list[Problem]) -> Iterator[Path]:
    """Child folders (following symlinks); hidden folders are skipped, errors recorded."""
    try:
        with os.scandir(path) as entries:
            children = sorted(
                Path(e.path) for e in entries if not e.name.startswith(".") and _is_dir(e)
            )
    except OSError as exc:
        problems.append(Problem(path, f"cannot read folder: {exc.strerror or exc}"))
        return
    yield from children


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=True)
    except OSError:
        return False


def _scan(
    root: Path, max_depth: int, seen: set[tuple[int, int]], problems: list[Problem]
) -> list[LogDir]:
    """Depth-first search for folders holding checkpoints.jsonl; log dirs are not descended."""
    found: list[LogDir] = []
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        key = _dir_key(folder)
        if key is None or key in seen:
            continue  # gone meanwhile, or already visited (a symlink loop or a second route)
        seen.add(key)
        if _holds_checkpoints(folder):
            name = folder.relative_to(root).as_posix() if folder != root else folder.name
            found.append(LogDir(folder, name))
            continue
        if depth < max_depth:
            children = list(_subdirs(folder, problems))
            stack.extend((child, depth + 1) for child in reversed(children))
    return found


def discover_log_dirs(
    explicit: list[Path], runs_root: Path | None, max_depth: int = DEFAULT_MAX_DEPTH
) -> LogDirDiscovery:
    """Log dirs named by `--log-dir` (a log dir itself or a root to scan), then under runs_root.

    A missing `--log-dir` is a problem; a missing runs root is not (it is only a default).
    """
    problems: list[Problem] = []
    seen: set[tuple[int, int]] = set()
    found: list[LogDir] = []
    for folder in explicit:
        folder = folder.expanduser()
        if not folder.is_dir():
            problems.append(Problem(folder, "--log-dir is not a folder (or cannot be reached)"))
            continue
        found.extend(_scan(folder, max_depth, seen, problems))
    if runs_root is not None and runs_root.is_dir():
        found.extend(_scan(runs_root, max_depth, seen, problems))
    for log_dir in found:
        problems.extend(log_dir.problems())
    return LogDirDiscovery(found, problems)
