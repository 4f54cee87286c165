"""What the browse screen's workers tell it: each result arrives as a message that the screen
takes with `@on`, on its own message loop, so the screen is the only writer of its state.

A message posted to a screen that has gone is never handled: what must happen even then (a
change's session log) is done by the worker itself, before it posts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from textual.message import Message

from ckpt_tui.actions.fleet_action import FleetAction
from ckpt_tui.backends import BackendState
from ckpt_tui.backends.fleet import UNREACHABLE, ErrorKind
from ckpt_tui.backends.fleet_view import RowKey
from ckpt_tui.catalog.snapshot import Snapshot


@dataclass
class LoadingChanged(Message):
    """The backends loading now, and each one's pages so far (loaded, total)."""

    loads: frozenset[str]
    progress: dict[str, tuple[int, int]] = field(default_factory=dict)


@dataclass
class PagesArrived(Message):
    """A backend's first load: its pages so far, as a partial snapshot."""

    backend: str
    snapshot: Snapshot


@dataclass
class BackendLoaded(Message):
    """A backend's load is whole: its new state (snapshot, rate)."""

    state: BackendState


@dataclass
class BackendFailed(Message):
    """A backend's load failed: why, and whether its rows stay shown."""

    backend: str
    problem: str
    kind: ErrorKind = UNREACHABLE
    keep_rows: bool = True


@dataclass
class LatencyMeasured(Message):
    """A backend answered the header's latency check."""

    backend: str
    latency: float


@dataclass
class NewerSnapshot(Message):
    """`snapshot`, made from `base`, shows more: training logs grew, or a change's results
    arrived. The screen shows it unless another snapshot replaced `base` meanwhile."""

    backend: str
    base: Snapshot
    snapshot: Snapshot


@dataclass
class MetricsRead(Message):
    """New loss-curve lines were read: the details pane shows them."""


@dataclass
class ActionDone(Message):
    """A change (publish, TTL, delete, retry) has finished and is logged already: what it did,
    and what went wrong writing the session log file."""

    action: FleetAction
    log_problems: list[str] = field(default_factory=list)


@dataclass
class ProgressChanged(Message):
    """What runs (a change or a download) says how far it is: the status line's progress
    ("" when it is over), and while a download runs, one line per file in flight."""

    line: str
    files: str = ""


@dataclass
class DownloadDone(Message):
    """A download has finished or stopped: what the notice says, whether anything is left
    undone, and the checkpoints not downloaded (they stay, or become, marked)."""

    summary: str
    undone: bool
    unfinished: list[RowKey]
