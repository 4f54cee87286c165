"""The actions log read back: what was deleted, on which backend (by where it is, not by its
name), and only what the server confirmed."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

from ckpt_tui.catalog.actions_log import (
    LogEntry,
    LogItem,
    deleted_paths,
    entry_lines,
    read_deleted_paths,
)

AT = datetime(2026, 12, 2, 10, 0, tzinfo=timezone.utc)
BOX1, BOX2 = "http://127.0.0.1:8751", "local store /data/ckpts"
GONE, REFUSED, OTHER = (
    "tinker://run-a/weights/0001",
    "tinker://run-a/weights/0002",
    "tinker://run-a/weights/0003",
)


def log_text(*entries: LogEntry) -> str:
    return "".join("\n".join(entry_lines(entry)) + "\n\n" for entry in entries)


def delete(backend: str, *items: LogItem) -> LogEntry:
    return LogEntry(AT, "delete", "Deleted some", list(items), backend)


def test_only_confirmed_deletions_on_that_place_count() -> None:
    text = log_text(
        delete(
            f"box1 ({BOX1})", LogItem(GONE, "sl/a", True), LogItem(REFUSED, "sl/a", False, "409")
        ),
        delete(f"scratch ({BOX2}, read-only)", LogItem(OTHER, "sl/a", True)),
        LogEntry(AT, "ttl", "Set the TTL", [LogItem(OTHER, "sl/a", True)], f"box1 ({BOX1})"),
    )
    assert deleted_paths(text, BOX1) == {GONE}
    assert deleted_paths(text, BOX1 + "/") == {GONE}  # the same server
    assert deleted_paths(text, BOX2) == {OTHER}  # read-only now or then: the same store
    assert deleted_paths(text, "http://127.0.0.1:8752") == set()


def test_a_backend_opened_under_another_name_is_the_same_backend(tmp_path: Path) -> None:
    log = tmp_path / "actions.log"
    log.write_text(log_text(delete(f"old-name ({BOX1})", LogItem(GONE, "sl/a", True))))
    assert read_deleted_paths(log, BOX1) == {GONE}


def test_no_file_a_fifo_or_none_means_nothing_known(tmp_path: Path) -> None:
    assert read_deleted_paths(None, BOX1) == set()
    assert read_deleted_paths(tmp_path / "absent.log", BOX1) == set()
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    assert read_deleted_paths(fifo, BOX1) == set()  # refused, never a blocking open


def test_what_is_appended_after_a_read_is_read_next_time(tmp_path: Path) -> None:
    log = tmp_path / "actions.log"
    log.write_text(log_text(delete(f"box1 ({BOX1})", LogItem(GONE, "sl/a", True))))
    assert read_deleted_paths(log, BOX1) == {GONE}
    with log.open("a") as out:
        out.write(log_text(delete(f"box1 ({BOX1})", LogItem(OTHER, "sl/a", True))))
    assert read_deleted_paths(log, BOX1) == {GONE, OTHER}
