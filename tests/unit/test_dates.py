"""One date parser for the CLI and the TUI: a bare date means the start of its UTC day where it
says when something happens (a TTL's "expire at"), the end where it bounds "expiring after"."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from ckpt_tui.cli import build_parser, prune
from ckpt_tui.policy import PolicyError
from ckpt_tui.policy.form import FormValues, policy_from_form
from ckpt_tui.timekeeping.dates import DateError, find_instant, parse_instant
from ckpt_tui.timekeeping.ttl import TtlError, parse_ttl

UTC = timezone.utc
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
DEC_31_START = datetime(2026, 12, 31, tzinfo=UTC)
JAN_1_START = datetime(2027, 1, 1, tzinfo=UTC)


def test_a_bare_date_means_the_start_or_the_end_of_its_utc_day() -> None:
    assert parse_instant("2026-12-31", bare_date="start") == DEC_31_START
    assert parse_instant(" 2026-12-31 ", bare_date="end") == JAN_1_START - timedelta(microseconds=1)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-12-31T18:00", datetime(2026, 12, 31, 18, tzinfo=UTC)),
        ("2026-12-31 18:00Z", datetime(2026, 12, 31, 18, tzinfo=UTC)),
        ("2026-12-31t18:00:00+02:00", datetime(2026, 12, 31, 16, tzinfo=UTC)),
    ],
)
def test_a_date_time_means_itself_whatever_a_bare_date_would(text: str, expected: datetime) -> None:
    assert parse_instant(text, bare_date="start") == expected
    assert parse_instant(text, bare_date="end") == expected


@pytest.mark.parametrize("text", ["36h", "never", "86400", ""])
def test_what_is_not_a_date_is_none_to_find_and_an_error_to_parse(text: str) -> None:
    assert find_instant(text, bare_date="start") is None
    with pytest.raises(DateError, match="expected a date like 2026-12-31"):
        parse_instant(text, bare_date="end")


@pytest.mark.parametrize("text", ["2026-13-01", "2026-02-30", "2026-12-31T25:00"])
def test_an_impossible_date_is_refused(text: str) -> None:
    with pytest.raises(DateError, match="not a valid one"):
        find_instant(text, bare_date="start")


def test_the_cli_and_the_keep_policy_form_read_expiring_after_as_the_end_of_the_day() -> None:
    """An expiry during Dec 31 is not "after 2026-12-31"; one at Jan 1 00:00 is."""
    args = build_parser().parse_args(["prune", "--keep-expiring-after", "2026-12-31"])
    from_cli = prune.policy_from_args(args).keep_expiring_after
    from_form = policy_from_form(FormValues(after="2026-12-31")).keep_expiring_after
    assert from_cli == from_form
    assert from_cli is not None and datetime(2026, 12, 31, 23, 59, tzinfo=UTC) < from_cli
    assert from_cli < JAN_1_START


@pytest.mark.parametrize("text", ["20261231", "next week"])
def test_the_cli_and_the_form_refuse_the_same_text(
    text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A compact ISO date used to pass the CLI as the START of the day, against its rule."""
    with pytest.raises(SystemExit):
        build_parser().parse_args(["prune", "--keep-expiring-after", text])
    assert "expected a date like 2026-12-31" in capsys.readouterr().err
    with pytest.raises(PolicyError, match="Expiring after: expected a date like 2026-12-31"):
        policy_from_form(FormValues(after=text))


def test_a_ttl_date_expires_at_the_start_of_the_day() -> None:
    assert parse_ttl("2026-12-31", NOW).seconds == int((DEC_31_START - NOW).total_seconds())
    with pytest.raises(TtlError, match="not a valid one"):
        parse_ttl("2026-02-30", NOW)
