"""Stopping a bulk run between items: what was sent finishes, nothing new is sent.

A bulk run (ckpt_tui.client.bulk) gives each item's task its `Stop` (a context variable, so
it follows the item through the client without a parameter on every call). The retry loop
checks it right before an item's first attempt goes out, after the item's pace slot came
free: a change waiting in its backend's queue when the user stops is never sent, and is
reported "not tried". A change whose first attempt went out carries on (its retries too), so
its outcome is known rather than guessed.
"""

from __future__ import annotations

from contextvars import ContextVar


class Stop:
    """Asked once (`request()`), never reset: a run that was stopped stays stopped."""

    def __init__(self) -> None:
        self.requested = False

    def request(self) -> None:
        self.requested = True


class NotSent(Exception):
    """The item's run was stopped before its first request went out: nothing was asked."""


_STOP: ContextVar[Stop | None] = ContextVar("ckpt_tui_bulk_stop", default=None)


def follow(stop: Stop | None) -> None:
    """The current task (one item of a bulk run) stops with `stop`."""
    _STOP.set(stop)


def before_sending() -> None:
    """NotSent if the current item's run was stopped (called before its first attempt)."""
    stop = _STOP.get()
    if stop is not None and stop.requested:
        raise NotSent("stopped before it was sent")
