"""Training-side checkpoint records: the `checkpoints.jsonl` a tinker-cookbook run writes.

`CheckpointRecord` copies the semantics of tinker-cookbook's own class
(thinking-machines-lab/tinker-cookbook, `tinker_cookbook/checkpoint_utils.py`, the version that
added `CheckpointRecord` and `RollingCheckpointManager`; its tests are
`tinker_cookbook/checkpoint_utils_test.py` at commit 6ac60ded3151a9f9b2aa99855b36f32044fc5655):

- known keys are `name, batch, epoch, final, state_path, sampler_path`; every other key is kept
  in `extra` and written back unchanged;
- `to_dict` leaves out known keys whose value is None (extra keys are written even when None);
- `has(key)` is "not None" for known keys and "present" for extra keys;
- `get(key, default)` returns a known key's value even when None, else `extra[key]`, else default;
- `get_last_checkpoint(required_key="state_path")` is the last record for which `has` is true.

The reader here is more forgiving than the cookbook's: a run that is writing right now leaves a
last line without a newline, and a hand-edited file can hold anything, so every line that is not a
valid record is skipped and reported by line number instead of stopping the read.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import msgspec

from ckpt_tui.api_types import TinkerPath
from ckpt_tui.bounded_json import MAX_JSON_DEPTH, json_depth
from ckpt_tui.regular_files import open_regular

CHECKPOINTS_FILE_NAME = "checkpoints.jsonl"
MAX_RECORDS_BYTES = 64 * 1024 * 1024
"""The most of a checkpoints.jsonl read (a line per checkpoint: hundreds of thousands)."""
KNOWN_KEYS: frozenset[str] = frozenset(
    {"name", "batch", "epoch", "final", "state_path", "sampler_path"}
)
_MISSING: Any = object()


class CheckpointRecord(msgspec.Struct):
    """One line of `checkpoints.jsonl`, as tinker-cookbook defines it."""

    name: str
    batch: int | None = None
    epoch: int | None = None
    final: bool | None = None
    state_path: str | None = None
    sampler_path: str | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)

    def __post_init__(self) -> None:
        # As in the cookbook: a known key inside `extra` would be written twice by to_dict.
        if set(self.extra) & KNOWN_KEYS:
            self.extra = {k: v for k, v in self.extra.items() if k not in KNOWN_KEYS}

    def to_dict(self) -> dict[str, Any]:
        """The dict the cookbook writes: known keys that are None are left out."""
        data: dict[str, Any] = {"name": self.name}
        for key in ("batch", "epoch", "final", "state_path", "sampler_path"):
            value = getattr(self, key)
            if value is not None:
                data[key] = value
        data.update(self.extra)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CheckpointRecord:
        """Build a record; unknown keys go to `extra`. KeyError if `name` is missing."""
        return cls(
            name=data["name"],
            batch=data.get("batch"),
            epoch=data.get("epoch"),
            final=data.get("final"),
            state_path=data.get("state_path"),
            sampler_path=data.get("sampler_path"),
            extra={k: v for k, v in data.items() if k not in KNOWN_KEYS},
        )

    def has(self, key: str) -> bool:
        """True if a known key is set (not None) or an extra key is present."""
        if key in KNOWN_KEYS:
            return getattr(self, key) is not None
        return key in self.extra

    def get(self, key: str, default: Any = _MISSING) -> Any:
        """A known key's value (even None), else the extra value, else `default` (or None)."""
        if key in KNOWN_KEYS:
            return getattr(self, key)
        if default is _MISSING:
            return self.extra.get(key)
        return self.extra.get(key, default)

    @property
    def is_rolling(self) -> bool:
        """Written by the cookbook's RollingCheckpointManager (a short-lived resume point)."""
        return self.extra.get("rolling") is True


_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "batch": (int,),
    "epoch": (int,),
    "final": (bool,),
    "state_path": (str,),
    "sampler_path": (str,),
}


def record_problem(data: object) -> str | None:
    """Why `data` is not a valid record, or None if it is one."""
    if not isinstance(data, dict):
        return f"not a JSON object (got {type(data).__name__})"
    if "name" not in data:
        return "no 'name' key"
    if not isinstance(data["name"], str):
        return f"'name' must be a string, got {type(data['name']).__name__}"
    for key, types in _FIELD_TYPES.items():
        value = data.get(key)
        # bool is an int subclass; a batch of `true` is a writer bug, not a number.
        wrong_bool = isinstance(value, bool) and bool not in types
        if value is not None and (wrong_bool or not isinstance(value, types)):
            return f"'{key}' must be {types[0].__name__} or null, got {type(value).__name__}"
    return None


class SkippedLine(msgspec.Struct, frozen=True, gc=False):
    """A line that was not read, and why."""

    line_no: int
    reason: str


class FileStamp(msgspec.Struct, frozen=True, gc=False):
    """Size and modification time: a cheap "has the file changed?" check."""

    size: int
    mtime_ns: int

    @classmethod
    def of(cls, path: Path) -> FileStamp | None:
        """The stamp of `path` now, or None if it cannot be stat'ed."""
        try:
            st = os.stat(path)
        except OSError:
            return None
        return cls(st.st_size, st.st_mtime_ns)


class JsonLine(msgspec.Struct, frozen=True):
    """A line that parsed as JSON, with its 1-based number."""

    line_no: int
    value: Any


def parse_jsonl_bytes(data: bytes) -> tuple[list[JsonLine], list[SkippedLine]]:
    """Parse JSON Lines, skipping blank lines silently and reporting every other bad line."""
    parsed: list[JsonLine] = []
    skipped: list[SkippedLine] = []
    lines = data.split(b"\n")
    for index, raw in enumerate(lines):
        line_no = index + 1
        is_unterminated = index == len(lines) - 1
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            skipped.append(SkippedLine(line_no, f"not valid UTF-8 (byte {exc.start})"))
            continue
        try:
            parsed.append(JsonLine(line_no, _bounded_loads(raw, text)))
        except (ValueError, RecursionError) as exc:
            skipped.append(SkippedLine(line_no, _json_reason(exc, is_unterminated)))
    return parsed, skipped


def _bounded_loads(raw: bytes, text: str) -> Any:
    """A line's value; deeper than MAX_JSON_DEPTH is refused before parsing (a deep value
    parses, then breaks whatever prints or walks it)."""
    if json_depth(raw) > MAX_JSON_DEPTH:
        raise RecursionError
    return json.loads(text)


def _json_reason(exc: Exception, is_unterminated: bool) -> str:
    detail = (
        f"nested more than {MAX_JSON_DEPTH} deep" if isinstance(exc, RecursionError) else str(exc)
    )
    if is_unterminated:
        return f"truncated last line (no newline; still being written?): {detail}"
    return f"bad JSON: {detail}"


class RecordsFile(msgspec.Struct, frozen=True):
    """What was read from one `checkpoints.jsonl`."""

    path: Path
    records: list[CheckpointRecord]
    line_numbers: list[int]
    skipped: list[SkippedLine]
    stamp: FileStamp

    def has_changed(self) -> bool:
        """True if the file on disk is no longer what was read (grown, rewritten or gone)."""
        return FileStamp.of(self.path) != self.stamp


def read_checkpoints_jsonl(path: Path) -> RecordsFile:
    """Read every valid record of `path`; bad lines are reported, never raised.

    Raises OSError only when the file itself cannot be opened or read: it is not a regular
    file (a FIFO would hang the read), or it is larger than MAX_RECORDS_BYTES.
    """
    with open_regular(path) as handle:
        st = os.fstat(handle.fileno())
        data = handle.read(MAX_RECORDS_BYTES + 1)
    if len(data) > MAX_RECORDS_BYTES:
        raise OSError(errno.EFBIG, f"larger than {MAX_RECORDS_BYTES >> 20} MiB", str(path))
    parsed, skipped = parse_jsonl_bytes(data)
    records: list[CheckpointRecord] = []
    line_numbers: list[int] = []
    for line in parsed:
        problem = record_problem(line.value)
        if problem is None:
            records.append(CheckpointRecord.from_dict(line.value))
            line_numbers.append(line.line_no)
        else:
            skipped.append(SkippedLine(line.line_no, problem))
    skipped.sort(key=lambda s: s.line_no)
    return RecordsFile(path, records, line_numbers, skipped, FileStamp(st.st_size, st.st_mtime_ns))


def last_checkpoint(
    records: list[CheckpointRecord], required_key: str = "state_path"
) -> CheckpointRecord | None:
    """The last record that has `required_key`: the cookbook's resume point."""
    for record in reversed(records):
        if record.has(required_key):
            return record
    return None


class RecordPaths(msgspec.Struct, frozen=True, gc=False):
    """The tinker paths a record names, split; problems say which could not be parsed."""

    state: TinkerPath | None
    sampler: TinkerPath | None
    problems: tuple[str, ...] = ()

    def ids(self) -> list[tuple[str, str]]:
        """(run_id, checkpoint_id) of each path that parsed."""
        return [(p.run_id, p.checkpoint_id) for p in (self.state, self.sampler) if p is not None]


def record_paths(record: CheckpointRecord) -> RecordPaths:
    """Split a record's state_path and sampler_path; bad paths are reported, not raised."""
    problems: list[str] = []

    def parse(key: str, text: str | None) -> TinkerPath | None:
        if text is None:
            return None
        try:
            return TinkerPath.parse(text)
        except ValueError as exc:
            problems.append(f"{key}: {exc}")
            return None

    state = parse("state_path", record.state_path)
    sampler = parse("sampler_path", record.sampler_path)
    return RecordPaths(state, sampler, tuple(problems))
