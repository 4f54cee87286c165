"""CheckpointRecord semantics (as tinker-cookbook defines them) and the forgiving jsonl reader."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ckpt_tui.training.records import (
    CheckpointRecord,
    last_checkpoint,
    read_checkpoints_jsonl,
    record_paths,
    record_problem,
)

# Lines as the cookbook writes them: json.dumps(record.to_dict()) for periodic, rolling and final
# checkpoints, with loop_state keys (batch, epoch, step) and user metadata (eval_loss, rolling).
COOKBOOK_LINES: list[dict[str, Any]] = [
    {
        "name": "000010",
        "batch": 10,
        "epoch": 0,
        "state_path": "tinker://run-abc/weights/000010",
        "sampler_path": "tinker://run-abc/sampler_weights/000010",
        "eval_loss": 1.2345,
    },
    {
        "name": "rolling_000013",
        "batch": 13,
        "state_path": "tinker://run-abc/weights/rolling_000013",
        "rolling": True,
    },
    {
        "name": "000020",
        "batch": 20,
        "epoch": 1,
        "step": 20,
        "sampler_path": "tinker://run-abc/sampler_weights/000020",
    },
    {
        "name": "final",
        "batch": 25,
        "epoch": 1,
        "final": True,
        "state_path": "tinker://run-abc/weights/final",
        "sampler_path": "tinker://run-abc/sampler_weights/final",
        "notes": None,
    },
]


def write_lines(path: Path, lines: list[bytes], final_newline: bool = True) -> Path:
    path.write_bytes(b"\n".join(lines) + (b"\n" if final_newline else b""))
    return path


@pytest.mark.parametrize("line", COOKBOOK_LINES)
def test_cookbook_dicts_round_trip_unchanged(line: dict[str, Any]) -> None:
    record = CheckpointRecord.from_dict(line)
    assert record.to_dict() == line
    assert CheckpointRecord.from_dict(record.to_dict()) == record


def test_unknown_keys_land_in_extra() -> None:
    record = CheckpointRecord.from_dict(COOKBOOK_LINES[0])
    assert record.extra == {"eval_loss": 1.2345}
    assert record.batch == 10 and record.epoch == 0 and record.final is None


def test_to_dict_leaves_out_none_known_keys_but_keeps_none_extras() -> None:
    record = CheckpointRecord(name="x", batch=None, extra={"notes": None})
    assert record.to_dict() == {"name": "x", "notes": None}
    assert CheckpointRecord.from_dict({"name": "x", "batch": None}).to_dict() == {"name": "x"}


def test_has_is_not_none_for_known_and_present_for_extra() -> None:
    record = CheckpointRecord(name="t", batch=5, extra={"step": 10, "gone": None})
    assert record.has("batch") and not record.has("epoch")
    assert record.has("step") and record.has("gone") and not record.has("missing")


def test_get_returns_known_values_even_when_none() -> None:
    record = CheckpointRecord(name="t", batch=5, extra={"step": 10})
    assert record.get("batch") == 5
    assert record.get("epoch", -1) is None
    assert record.get("step") == 10
    assert record.get("missing") is None
    assert record.get("missing", "default") == "default"


def test_known_keys_in_extra_are_dropped() -> None:
    record = CheckpointRecord(name="t", batch=5, extra={"batch": 99, "custom": "v"})
    assert record.extra == {"custom": "v"}
    assert record.to_dict()["batch"] == 5


def test_from_dict_needs_a_name() -> None:
    with pytest.raises(KeyError):
        CheckpointRecord.from_dict({"batch": 1})


def test_rolling_flag() -> None:
    assert CheckpointRecord.from_dict(COOKBOOK_LINES[1]).is_rolling
    assert not CheckpointRecord.from_dict(COOKBOOK_LINES[0]).is_rolling


def test_reads_every_cookbook_line(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "checkpoints.jsonl", [json.dumps(d).encode() for d in COOKBOOK_LINES]
    )
    result = read_checkpoints_jsonl(path)
    assert [r.to_dict() for r in result.records] == COOKBOOK_LINES
    assert result.line_numbers == [1, 2, 3, 4]
    assert result.skipped == []


def test_each_kind_of_bad_line_is_reported_with_its_number(tmp_path: Path) -> None:
    good = json.dumps(COOKBOOK_LINES[0]).encode()
    lines = [
        good,  # 1
        b"",  # 2 blank: ignored silently
        b"{not json",  # 3
        b"[1, 2]",  # 4 not an object
        b'{"batch": 3}',  # 5 no name
        b'{"name": 7}',  # 6 name not a string
        b'{"name": "a", "batch": "ten"}',  # 7 wrong type
        b'{"name": "a", "batch": true}',  # 8 bool is not a batch
        b'{"name": "\xff\xfe"}',  # 9 invalid UTF-8
        b'{"name": "a", "final": 1}',  # 10 final must be a bool
        b"   ",  # 11 whitespace: ignored
        good,  # 12
        b'{"name": "partial", "batch": 3',  # 13 truncated: no newline at the end
    ]
    result = read_checkpoints_jsonl(write_lines(tmp_path / "c.jsonl", lines, final_newline=False))
    assert result.line_numbers == [1, 12]
    reasons = {s.line_no: s.reason for s in result.skipped}
    assert sorted(reasons) == [3, 4, 5, 6, 7, 8, 9, 10, 13]
    assert reasons[3].startswith("bad JSON")
    assert "not a JSON object" in reasons[4]
    assert "no 'name'" in reasons[5]
    assert "'name' must be a string" in reasons[6]
    assert "'batch'" in reasons[7] and "'batch'" in reasons[8]
    assert "UTF-8" in reasons[9]
    assert "'final'" in reasons[10]
    assert reasons[13].startswith("truncated last line")


def test_complete_last_line_without_newline_is_read(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "c.jsonl", [b'{"name": "a"}', b'{"name": "b"}'], False)
    assert [r.name for r in read_checkpoints_jsonl(path).records] == ["a", "b"]


def test_crlf_line_endings_are_fine(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"name": "a"}\r\n{"name": "b"}\r\n')
    result = read_checkpoints_jsonl(path)
    assert [r.name for r in result.records] == ["a", "b"] and result.skipped == []


def test_deeply_nested_json_is_skipped_not_raised(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "c.jsonl", [b"[" * 100_000, b'{"name": "ok"}'])
    result = read_checkpoints_jsonl(path)
    assert [r.name for r in result.records] == ["ok"]
    assert [s.line_no for s in result.skipped] == [1]


def test_missing_file_raises_oserror(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        read_checkpoints_jsonl(tmp_path / "nope.jsonl")


def test_has_changed_notices_growth(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "c.jsonl", [b'{"name": "a"}'])
    result = read_checkpoints_jsonl(path)
    assert not result.has_changed()
    with open(path, "ab") as handle:
        handle.write(b'{"name": "b"}\n')
    assert result.has_changed()


def test_last_checkpoint_is_last_with_the_key() -> None:
    records = [CheckpointRecord.from_dict(d) for d in COOKBOOK_LINES[:3]]
    last = last_checkpoint(records)
    assert last is not None and last.name == "rolling_000013"
    sampler = last_checkpoint(records, required_key="sampler_path")
    assert sampler is not None and sampler.name == "000020"
    assert last_checkpoint(records, required_key="eval_loss") is records[0]
    assert last_checkpoint([], "state_path") is None


def test_record_paths_split_good_and_report_bad() -> None:
    paths = record_paths(CheckpointRecord.from_dict(COOKBOOK_LINES[0]))
    assert paths.ids() == [("run-abc", "weights/000010"), ("run-abc", "sampler_weights/000010")]
    assert paths.problems == ()
    bad = record_paths(
        CheckpointRecord(name="x", state_path="s3://bucket/x", sampler_path="tinker://r/odd/x")
    )
    assert bad.state is None and bad.sampler is None
    assert len(bad.problems) == 2 and bad.problems[0].startswith("state_path:")


def test_record_problem_accepts_what_the_cookbook_writes() -> None:
    assert all(record_problem(d) is None for d in COOKBOOK_LINES)
