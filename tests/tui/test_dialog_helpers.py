"""The dialogs' pure helpers: delete warnings, the typed word, the freed total, the publish
question and the session log's order."""

from __future__ import annotations

from datetime import timedelta

from ckpt_tui.actions.session_log import LogEntry, LogItem, SessionLog
from ckpt_tui.tui.screens.delete_dialog import freed_text, needs_typed_word, warnings
from ckpt_tui.tui.screens.publish_dialog import question, title
from tests.support.dialogs import NOW, GiB, ckpt, flagged, many_rows, rows_of


def test_warnings_name_each_risk_and_the_hidden_count() -> None:
    rows = rows_of(ckpt("a", 5), ckpt("b", 5, public=True), ckpt("c", None))
    rows = [flagged(rows[0], final=True), rows[1], flagged(rows[2], resume=True)]
    lines = warnings(rows, hidden_count=3)
    assert lines == [
        "⚠ 1 is a final checkpoint: the end result of a run",
        "⚠ 1 is a resume point: training resumes from it",
        "⚠ 1 is public: others may be using it",
        "⚠ 3 of these are hidden by the current filter",
    ]
    assert warnings(rows_of(ckpt("a", 5)), 0) == []


def test_typed_word_needed_for_risky_or_more_than_ten() -> None:
    assert not needs_typed_word(many_rows(10))
    assert needs_typed_word(many_rows(11))
    assert needs_typed_word(rows_of(ckpt("p", 5, public=True)))
    assert needs_typed_word([flagged(rows_of(ckpt("f", 5))[0], final=True)])


def test_freed_total_says_at_least_when_a_size_is_unknown() -> None:
    exact = rows_of(ckpt("a", 5, size=GiB), ckpt("b", 5, size=GiB))
    assert freed_text(exact).plain == "Frees 2.0 GiB. This cannot be undone."
    # one size unknown: the catalog estimates it from the run's measured ones
    partial = rows_of(ckpt("a", 5, size=GiB), ckpt("b", 5, size=None))
    assert freed_text(partial).plain.startswith("Frees ≈ 2.0 GiB")


def test_publish_question_counts_both_sides() -> None:
    expected = "3 of these are public and 5 are private: publish the 5, or unpublish the 3?"
    assert question(3, 5) == expected
    assert question(1, 1).startswith("1 of these is public and 1 is private")


def test_counts_in_the_dialogs_have_thousands_separators_as_the_status_line_does() -> None:
    assert title(2000, 0) == "Publish 2,000 checkpoints?"
    assert title(0, 1) == "Unpublish 1 checkpoint?"
    assert question(1500, 2500).startswith("1,500 of these are public and 2,500 are private")
    rows = many_rows(1200)
    hidden = warnings(rows, hidden_count=1100)[-1]
    assert hidden == "⚠ 1,100 of these are hidden by the current filter"


def test_session_log_keeps_entries_in_order() -> None:
    log = SessionLog()
    first = LogEntry(NOW, "ttl", "Extended 2", [LogItem("tinker://a/weights/x", "a", True)])
    second = LogEntry(NOW + timedelta(minutes=1), "delete", "Deleted 0 of 1; 1 failed")
    second.items.append(LogItem("tinker://a/weights/y", "a", False, "404 not found"))
    log.add(first)
    log.add(second)
    assert log.entries == [first, second] and log.newest_first() == [second, first]
    assert second.failed == [LogItem("tinker://a/weights/y", "a", False, "404 not found")]
    assert first.ok_count == 1 and second.ok_count == 0
