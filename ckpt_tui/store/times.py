"""Times as integer microseconds since the epoch: exact in SQLite, cheap to sort and compare."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from ckpt_tui.store.errors import InvalidRequestError

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_ONE_US = timedelta(microseconds=1)


def to_us(value: datetime, what: str = "time") -> int:
    """Microseconds since the epoch of an aware datetime; a naive one is refused."""
    if value.tzinfo is None:
        raise InvalidRequestError(f"{what} must carry a time zone (e.g. UTC), got {value!r}")
    return (value - _EPOCH) // _ONE_US


def from_us(us: int) -> datetime:
    """The aware UTC datetime of `us` microseconds since the epoch."""
    return _EPOCH + timedelta(microseconds=us)


def ns_to_us(ns: int) -> int:
    """A file's `st_mtime_ns` as microseconds."""
    return ns // 1000
