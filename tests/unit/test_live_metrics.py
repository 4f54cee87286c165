"""metrics.jsonl read as it grows: only the appended lines are parsed (issue 18)."""

from __future__ import annotations

import json
from pathlib import Path

from ckpt_tui.training.logdirs import read_metrics


def append(path: Path, text: str) -> None:
    with path.open("a") as handle:
        handle.write(text)


def test_appended_lines_extend_the_series(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps({"step": s, "loss": 1 / s}) + "\n" for s in (1, 2)))
    first = read_metrics(path)
    assert first.is_current(path) and first.series["loss"][-1] == (2, 0.5)
    append(path, json.dumps({"step": 3, "loss": 0.25}) + "\n" + '{"step": 4, "lo')
    grown = read_metrics(path, first)
    assert not first.is_current(path)
    assert grown.series["loss"] == [(1, 1.0), (2, 0.5), (3, 0.25)]  # step 4 is half-written
    assert first.series["loss"] == [(1, 1.0), (2, 0.5)]  # an earlier read never changes
    append(path, 'ss": 0.2}\n{bad\n')
    done = read_metrics(path, grown)
    assert done.series["loss"][-1] == (4, 0.2)
    assert [s.line_no for s in done.skipped] == [5]


def test_a_rewritten_file_is_read_from_the_start(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1, "loss": 3.0}\n{"step": 2, "loss": 2.0}\n')
    first = read_metrics(path)
    path.write_text('{"step": 1, "loss": 9.0}\n')
    assert read_metrics(path, first).series["loss"] == [(1, 9.0)]


def test_a_deep_unfinished_last_line_is_held_back_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(b'{"step": 1, "loss": 1.0}\n' + b"[" * 100_000)
    metrics = read_metrics(path)
    assert metrics.series["loss"] == [(1, 1.0)]
    assert metrics.skipped == []
