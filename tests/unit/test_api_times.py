"""Times as the API and run.json write them ("...Z") read the same on every supported Python:
3.10's `datetime.fromisoformat` refuses a trailing Z, 3.11's takes it."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from ckpt_tui.api_types import format_time, parse_time
from ckpt_tui.store.runinfo import read_run_info
from ckpt_tui.timekeeping.clock import NOW_ENV, clock_from_environ

UTC = timezone.utc
AT = datetime(2026, 3, 1, 12, 30, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-03-01T12:30:05Z", AT),
        ("2026-03-01T12:30:05z", AT),
        ("2026-03-01T12:30:05.250000Z", AT + timedelta(microseconds=250_000)),
        ("2026-03-01T12:30:05+00:00", AT),
        ("2026-03-01T14:30:05+02:00", AT),
        ("2026-03-01T12:30:05", AT),  # no zone: UTC
    ],
)
def test_an_api_time_is_read_in_utc_with_or_without_a_trailing_z(
    text: str, expected: datetime
) -> None:
    parsed = parse_time(text)
    assert parsed == expected and parsed.utcoffset() == timedelta(0)


def test_what_format_time_writes_parse_time_reads_back() -> None:
    written = format_time(AT + timedelta(microseconds=7))
    assert written.endswith("Z")
    assert parse_time(written) == AT + timedelta(microseconds=7)


def test_a_run_json_with_a_z_time_is_read_whole(tmp_path: Path) -> None:
    run = {"base_model": "Qwen/Qwen3-4B", "created": "2026-03-01T12:30:05Z", "lora_rank": 8}
    (tmp_path / "run.json").write_text(json.dumps(run), encoding="utf-8")
    info = read_run_info(tmp_path, fallback_created_us=7)
    assert not info.corrupted
    assert info.base_model == "Qwen/Qwen3-4B" and info.lora_rank == 8
    assert info.created_us == int(AT.timestamp()) * 1_000_000


def test_the_fixed_clock_of_the_environment_takes_a_z_time() -> None:
    assert clock_from_environ({NOW_ENV: "2026-03-01T12:30:05Z"}).now() == AT
