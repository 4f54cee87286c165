"""Checkpoint time-to-live: parsing what users type, the server's bounds, and display.

Accepted input (case-insensitive, spaces anywhere between parts):

- `never` (also `none`, `forever`): remove the expiry;
- durations `30m`, `12h`, `7d`, `2w`, `1y` and combinations such as `1d12h` or `1d 12h`, with
  units s, m, h, d, w, y (also spelled sec/min/hr/hour/day/week/year, plural or not);
  `1y` is 365 days, like the server's 10-year bound (10 * 365 days);
- a bare number is seconds, as the `tinker checkpoint set-ttl --ttl 86400` CLI takes it;
- an ISO date (`2026-12-03`: the start of that UTC day, as "expire at" means, see `dates.py`) or
  date-time (`2026-12-03T14:00`, `2026-12-03 14:00Z`, `...+02:00`; no zone means UTC): the
  duration from now until then.

The server takes a TTL counted from now and refuses anything outside [1 hour, 10 years]; "extend
by X" is `(max(now, expires_at) + X) - now`. Every function takes `now`; none reads the clock.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Literal

import msgspec

from ckpt_tui.timekeeping.dates import DateError, find_instant

MIN_TTL_SECONDS = 3600
MAX_TTL_SECONDS = 10 * 365 * 86400
EXPIRING_SOON = timedelta(hours=24)

_UNITS: dict[str, int] = {"y": 365 * 86400, "w": 7 * 86400, "d": 86400, "h": 3600, "m": 60, "s": 1}
_UNIT_WORDS: dict[str, str] = {
    **{w: "s" for w in ("s", "sec", "secs", "second", "seconds")},
    **{w: "m" for w in ("m", "min", "mins", "minute", "minutes")},
    **{w: "h" for w in ("h", "hr", "hrs", "hour", "hours")},
    **{w: "d" for w in ("d", "day", "days")},
    **{w: "w" for w in ("w", "wk", "wks", "week", "weeks")},
    **{w: "y" for w in ("y", "yr", "yrs", "year", "years")},
}
_NEVER_WORDS = frozenset({"never", "none", "forever"})
_PART = re.compile(r"\s*([0-9]+)\s*([a-z]+)\s*")
_HELP = "use e.g. 30m, 12h, 7d, 2w, 1y, 1d12h, never, a number of seconds, or 2026-12-03"


class TtlError(ValueError):
    """A TTL the user typed that cannot be used; the message says what to type instead."""


class Ttl(msgspec.Struct, frozen=True, gc=False):
    """A TTL to send: `seconds` from now, or None for "never expires"."""

    seconds: int | None

    @property
    def is_never(self) -> bool:
        return self.seconds is None

    def __str__(self) -> str:
        return "never" if self.seconds is None else format_duration(self.seconds)


NEVER = Ttl(None)


def format_duration(seconds: int) -> str:
    """Compact form that `parse_duration` reads back exactly: 90061 -> '1d1h1m1s'."""
    if seconds < 0:
        raise ValueError("a duration cannot be negative")
    if seconds == 0:
        return "0s"
    parts: list[str] = []
    for unit, size in _UNITS.items():
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)


def parse_duration(text: str) -> int:
    """Seconds in `30m`, `1d12h`, `2 weeks`, or a bare number; TtlError if not a duration."""
    cleaned = text.strip().lower()
    if re.fullmatch(r"[0-9]+", cleaned):
        return int(cleaned)
    position, total = 0, 0
    while position < len(cleaned):
        match = _PART.match(cleaned, position)
        if match is None or match.group(2) not in _UNIT_WORDS:
            raise TtlError(f"cannot read {text!r} as a duration; {_HELP}")
        total += int(match.group(1)) * _UNITS[_UNIT_WORDS[match.group(2)]]
        position = match.end()
    if position == 0:
        raise TtlError(f"empty duration; {_HELP}")
    return total


def expiry_instant(text: str) -> datetime | None:
    """The instant a typed "expire at" names (a bare date: the start of that UTC day), or None
    when `text` is not a date or time; TtlError for a date that is not valid."""
    try:
        return find_instant(text, bare_date="start")
    except DateError as exc:
        raise TtlError(str(exc)) from None


def bounds_message() -> str:
    return (
        f"a TTL must be between 1 hour and 10 years "
        f"({MIN_TTL_SECONDS} to {MAX_TTL_SECONDS} seconds), or 'never'"
    )


def check_bounds(seconds: int) -> Ttl:
    """A Ttl of `seconds` if the server will take it, else TtlError naming the bounds."""
    if not MIN_TTL_SECONDS <= seconds <= MAX_TTL_SECONDS:
        shown = format_duration(seconds) if seconds >= 0 else f"{seconds}s"
        raise TtlError(f"{shown} is out of range: {bounds_message()}")
    return Ttl(seconds)


def parse_ttl(text: str, now: datetime) -> Ttl:
    """What the user typed, as a TTL counted from `now`; TtlError says what is wrong."""
    if text.strip().lower() in _NEVER_WORDS:
        return NEVER
    instant = expiry_instant(text)
    if instant is None:
        return check_bounds(parse_duration(text))
    seconds = int((instant - now).total_seconds())
    if seconds <= 0:
        raise TtlError(f"{format_exact(instant)} is in the past; give a later time")
    return check_bounds(seconds)


def extend(expires_at: datetime | None, by_seconds: int, now: datetime) -> Ttl:
    """The TTL that pushes an expiry `by_seconds` later: `(max(now, expires_at) + by) - now`.

    A checkpoint that never expires stays so (NEVER).
    """
    if by_seconds <= 0:
        raise TtlError("extend by a positive duration, e.g. 7d")
    if expires_at is None:
        return NEVER
    base = max(now, expires_at)
    return check_bounds(int((base + timedelta(seconds=by_seconds) - now).total_seconds()))


def format_exact(moment: datetime) -> str:
    """'2026-12-03 14:00 UTC'."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


SPAN_UNITS: tuple[tuple[int, str], ...] = tuple(
    (size, unit) for unit, size in _UNITS.items() if unit != "w"
)
"""The units a span is said in, largest first: those a TTL is typed in (`format_duration`),
but for weeks ('30d' reads better than '4w 2d')."""


def describe_span(span: timedelta) -> str:
    """'1d 21h': the span's largest unit and the next one down, rounded to that one.

    Not humanize's `naturaldelta`, which says 'a day' for anything from 24 to 47 hours (a TTL
    extended by 24 hours from 'in 21 hours' read 'in a day'). Short units keep it within the
    table's Expires and Created columns: 'in 364d 23h' is the longest under 10 years.
    """
    seconds = abs(span.total_seconds())
    if seconds < 0.5:
        return "a moment"
    index = _largest_unit(seconds)
    step = SPAN_UNITS[min(index + 1, len(SPAN_UNITS) - 1)][0]
    rounded = round(seconds / step) * step
    index = _largest_unit(rounded)  # rounding may carry: 23h 59.6m is 1d
    size, unit = SPAN_UNITS[index]
    whole, rest = divmod(rounded, size)
    parts = [f"{whole:,}{unit}"]
    if rest and index + 1 < len(SPAN_UNITS):
        smaller, smaller_unit = SPAN_UNITS[index + 1]
        parts.append(f"{rest // smaller}{smaller_unit}")
    return " ".join(parts)


def _largest_unit(seconds: float) -> int:
    """The index in SPAN_UNITS of the largest unit `seconds` holds at least once."""
    for index, (size, _) in enumerate(SPAN_UNITS):
        if seconds >= size:
            return index
    return len(SPAN_UNITS) - 1


def describe_expiry(expires_at: datetime | None, now: datetime) -> str:
    """'never', 'in 1d 21h' or 'expired 2h ago' (`describe_span`)."""
    if expires_at is None:
        return "never"
    delta = expires_at - now
    if delta.total_seconds() > 0:
        return f"in {describe_span(delta)}"
    return f"expired {describe_span(delta)} ago"


ExpiryState = Literal["never", "expired", "soon", "later"]


def format_created(created: datetime | None, now: datetime) -> str:
    """'2h 5m ago' (the past's counterpart of `describe_expiry`, in its words); '-' when
    not known."""
    if created is None:
        return "-"
    span = describe_span(now - created)
    return f"{span} ago" if created <= now else f"{span} from now"  # a clock set behind


def expiry_state(expires_at: datetime | None, now: datetime) -> ExpiryState:
    """Which of never / expired / soon (< 24 h left) / later an expiry is."""
    if expires_at is None:
        return "never"
    left = expires_at - now
    if left <= timedelta(0):
        return "expired"
    return "soon" if left < EXPIRING_SOON else "later"
