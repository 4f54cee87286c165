"""TTL parsing, bounds, extension and display."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ckpt_tui.timekeeping.ttl import (
    MAX_TTL_SECONDS,
    MIN_TTL_SECONDS,
    NEVER,
    Ttl,
    TtlError,
    describe_expiry,
    describe_span,
    expiry_state,
    extend,
    format_created,
    format_duration,
    format_exact,
    parse_duration,
    parse_ttl,
)

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=timezone.utc)
HOUR, DAY = 3600, 86400


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("12h", 12 * HOUR),
        ("7d", 7 * DAY),
        ("2w", 14 * DAY),
        ("1y", 365 * DAY),
        ("90m", 90 * 60),
        ("1d12h", 36 * HOUR),
        (" 1D 12H ", 36 * HOUR),
        ("2 weeks", 14 * DAY),
        ("3 days 4 hours", 3 * DAY + 4 * HOUR),
        ("86400", DAY),
        ("10y", 10 * 365 * DAY),
    ],
)
def test_parse_durations(text: str, seconds: int) -> None:
    assert parse_ttl(text, NOW) == Ttl(seconds)


@pytest.mark.parametrize("text", ["never", "NEVER", " none ", "Forever"])
def test_never(text: str) -> None:
    assert parse_ttl(text, NOW) is NEVER
    assert NEVER.is_never and str(NEVER) == "never"


@pytest.mark.parametrize("text", ["", "abc", "5x", "1d 30", "-5h", "1.5h", "h", "1²h", "²"])
def test_garbage_is_refused_with_help(text: str) -> None:
    with pytest.raises(TtlError, match=r"e\.g\. 30m"):
        parse_ttl(text, NOW)


@pytest.mark.parametrize("text", ["30m", "59m", "3599", "10y1s", "11y"])
def test_out_of_bounds_names_the_bounds(text: str) -> None:
    with pytest.raises(TtlError, match="between 1 hour and 10 years"):
        parse_ttl(text, NOW)


def test_bounds_are_inclusive() -> None:
    assert parse_ttl("1h", NOW).seconds == MIN_TTL_SECONDS
    assert parse_ttl("3650d", NOW).seconds == MAX_TTL_SECONDS


def test_a_date_is_midnight_utc() -> None:
    assert parse_ttl("2026-01-20", NOW).seconds == 4 * DAY + 12 * HOUR


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("2026-01-16T12:00", DAY),
        ("2026-01-16 12:00Z", DAY),
        ("2026-01-16t12:00:00+02:00", DAY - 2 * HOUR),
    ],
)
def test_datetimes_become_durations_from_now(text: str, seconds: int) -> None:
    assert parse_ttl(text, NOW).seconds == seconds


def test_past_and_invalid_dates_are_refused() -> None:
    with pytest.raises(TtlError, match="in the past"):
        parse_ttl("2025-12-31", NOW)
    with pytest.raises(TtlError, match="not a valid one"):
        parse_ttl("2026-02-30", NOW)
    with pytest.raises(TtlError, match="between 1 hour"):
        parse_ttl("2026-01-15T12:30", NOW)


def test_extend_from_future_expiry() -> None:
    expires = NOW + timedelta(days=2)
    assert extend(expires, 7 * DAY, NOW) == Ttl(9 * DAY)


def test_extend_an_expired_checkpoint_counts_from_now() -> None:
    assert extend(NOW - timedelta(days=3), 7 * DAY, NOW) == Ttl(7 * DAY)


def test_extend_never_stays_never_and_bounds_apply() -> None:
    assert extend(None, DAY, NOW) is NEVER
    with pytest.raises(TtlError, match="10 years"):
        extend(NOW + timedelta(days=3649), 2 * DAY, NOW)
    with pytest.raises(TtlError, match="positive"):
        extend(NOW, 0, NOW)


def test_humanized_expiry() -> None:
    assert describe_expiry(None, NOW) == "never"
    assert describe_expiry(NOW + timedelta(days=3), NOW) == "in 3d"
    assert describe_expiry(NOW - timedelta(hours=2), NOW) == "expired 2h ago"
    assert format_created(NOW - timedelta(hours=45), NOW) == "1d 21h ago"


@pytest.mark.parametrize(
    ("span", "said"),
    [
        (timedelta(hours=45), "1d 21h"),  # humanize's naturaldelta: "a day"
        (timedelta(hours=44, minutes=59, seconds=59), "1d 21h"),  # rounded, not cut
        (timedelta(hours=20, minutes=59), "20h 59m"),
        (timedelta(minutes=90, seconds=20), "1h 30m"),
        (timedelta(hours=23, minutes=59, seconds=40), "1d"),  # rounding carries
        (timedelta(days=29, hours=23, minutes=31), "30d"),
        (timedelta(days=364, hours=22, minutes=40), "364d 23h"),
        (timedelta(days=400), "1y 35d"),
        (timedelta(seconds=59.6), "1m"),
        (timedelta(seconds=5), "5s"),
        (timedelta(seconds=0.2), "a moment"),
        (-timedelta(hours=45), "1d 21h"),
    ],
)
def test_a_span_is_said_in_two_units_rounded_to_the_smaller(span: timedelta, said: str) -> None:
    assert describe_span(span) == said


def test_exact_display() -> None:
    moment = datetime(2026, 12, 3, 15, 0, tzinfo=timezone(timedelta(hours=1)))
    assert format_exact(moment) == "2026-12-03 14:00 UTC"


def test_expiring_soon_is_under_24_hours() -> None:
    assert expiry_state(NOW + timedelta(hours=23, minutes=59), NOW) == "soon"
    assert expiry_state(NOW + timedelta(hours=24), NOW) == "later"
    assert expiry_state(NOW - timedelta(seconds=1), NOW) == "expired"
    assert expiry_state(None, NOW) == "never"
    assert expiry_state(NOW, NOW) == "expired"
    assert expiry_state(NOW + timedelta(days=2), NOW) == "later"


@given(st.integers(min_value=0, max_value=10**12))
def test_format_then_parse_round_trips(seconds: int) -> None:
    assert parse_duration(format_duration(seconds)) == seconds


@given(st.integers(min_value=MIN_TTL_SECONDS, max_value=MAX_TTL_SECONDS))
def test_every_in_bounds_duration_is_accepted(seconds: int) -> None:
    assert parse_ttl(format_duration(seconds), NOW) == Ttl(seconds)
    assert parse_ttl(str(seconds), NOW) == Ttl(seconds)


@given(st.integers(min_value=0, max_value=10**12))
def test_out_of_bounds_always_refused(seconds: int) -> None:
    in_bounds = MIN_TTL_SECONDS <= seconds <= MAX_TTL_SECONDS
    try:
        parse_ttl(str(seconds), NOW)
    except TtlError:
        assert not in_bounds
    else:
        assert in_bounds


@given(
    st.one_of(st.none(), st.integers(min_value=-(10**9), max_value=3000 * DAY)),
    st.integers(min_value=1, max_value=MAX_TTL_SECONDS),
)
def test_extend_never_ends_before_now(offset: int | None, by: int) -> None:
    expires = None if offset is None else NOW + timedelta(seconds=offset)
    try:
        ttl = extend(expires, by, NOW)
    except TtlError:
        return
    if expires is None:
        assert ttl is NEVER
    else:
        assert ttl.seconds is not None and ttl.seconds >= by
        assert NOW + timedelta(seconds=ttl.seconds) >= max(NOW, expires)
