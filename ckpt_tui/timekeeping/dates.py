"""Dates and times as people type them, read by one parser.

A date-time (`2026-12-03T14:00`, `2026-12-03 14:00Z`, `...+02:00`) means itself, in UTC when it
names no zone. A bare date (`2026-12-03`) names a whole UTC day, so the caller says which instant
of it the question needs (`bare_date`):

- `"start"` (00:00 UTC) when the date says when something happens: "expire at 2026-12-03"
  (typed TTLs) is the moment the day begins;
- `"end"` (23:59:59.999999 UTC) when the date bounds a comparison that the whole day must fall
  on one side of: "keep checkpoints expiring after 2026-12-31" (keep policies) keeps one that
  expires on Jan 1 and not one that expires during Dec 31.

Nothing here reads the clock.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time, timezone
from typing import Literal

from ckpt_tui.api_types import parse_time

BareDate = Literal["start", "end"]
"""Which instant of its day a bare date means."""

END_OF_DAY = time(23, 59, 59, 999999)
_DAY_TIMES: dict[BareDate, time] = {"start": time(0), "end": END_OF_DAY}
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]", re.IGNORECASE)
_EXAMPLES = "a date like 2026-12-31 or a time like 2026-12-31T18:00Z"


class DateError(ValueError):
    """A date or time the user typed that cannot be read; the message says what to type."""


def find_instant(text: str, *, bare_date: BareDate) -> datetime | None:
    """The UTC instant `text` names, or None when it does not look like a date or time at all
    (e.g. a duration); DateError when it looks like one but is not valid."""
    cleaned = text.strip()
    try:
        if _DATE.fullmatch(cleaned):
            day = date.fromisoformat(cleaned)
            return datetime.combine(day, _DAY_TIMES[bare_date], timezone.utc)
        if not _DATE_TIME.match(cleaned):
            return None
        return parse_time(cleaned)
    except ValueError as exc:
        raise DateError(f"{cleaned!r} looks like a date but is not a valid one: {exc}") from exc


def parse_instant(text: str, *, bare_date: BareDate) -> datetime:
    """The UTC instant `text` names; DateError (naming the accepted forms) otherwise."""
    found = find_instant(text, bare_date=bare_date)
    if found is None:
        raise DateError(f"expected {_EXAMPLES}, got {text.strip()!r}")
    return found


def is_end_of_day(at: datetime) -> bool:
    """Whether `at` is how a bare date read with `bare_date="end"` comes out."""
    return at.astimezone(timezone.utc).time() == END_OF_DAY
