"""Property tests: any mix of good and garbage lines reads every good line and reports every bad."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ckpt_tui.training.records import CheckpointRecord, parse_jsonl_bytes, read_checkpoints_jsonl

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
extra_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=5,
)
records = st.builds(
    CheckpointRecord,
    name=st.text(),
    batch=st.none() | st.integers(min_value=0),
    epoch=st.none() | st.integers(min_value=0),
    final=st.none() | st.booleans(),
    state_path=st.none() | st.text(),
    sampler_path=st.none() | st.text(),
    extra=st.dictionaries(st.text().filter(lambda k: k not in {"name"}), extra_values, max_size=3),
)
# Garbage that can never be a valid record line and contains no newline.
garbage = st.one_of(
    st.binary().filter(lambda b: b"\n" not in b and b.strip() != b""),
    st.sampled_from([b"{", b"[]", b'"text"', b"42", b'{"name": 1}', b'{"batch": 2}', b"\xff{}"]),
).filter(lambda b: _is_garbage(b))


def _is_garbage(raw: bytes) -> bool:
    try:
        value = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return True
    return not (isinstance(value, dict) and isinstance(value.get("name"), str))


good_lines = records.map(lambda r: (json.dumps(r.to_dict()).encode(), r.to_dict()))
bad_lines = garbage.map(lambda g: (g, None))
Line = tuple[bytes, "dict[str, Any] | None"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(good_lines, bad_lines)))
def test_any_mix_reads_good_and_reports_bad(lines: list[Line]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "checkpoints.jsonl"
        path.write_bytes(b"".join(raw + b"\n" for raw, _ in lines))
        result = read_checkpoints_jsonl(path)
    good_numbers = [i + 1 for i, (_, want) in enumerate(lines) if want is not None]
    bad_numbers = [i + 1 for i, (_, want) in enumerate(lines) if want is None]
    assert result.line_numbers == good_numbers
    assert [s.line_no for s in result.skipped] == bad_numbers
    assert [r.to_dict() for r in result.records] == [w for _, w in lines if w is not None]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2000))
def test_parser_never_raises_on_any_bytes(data: bytes) -> None:
    parsed, skipped = parse_jsonl_bytes(data)
    numbers = [p.line_no for p in parsed] + [s.line_no for s in skipped]
    assert len(numbers) == len(set(numbers))
    assert all(1 <= n <= data.count(b"\n") + 1 for n in numbers)
