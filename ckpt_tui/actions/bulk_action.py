"""One change over many checkpoints, as plain data: what was asked, how it went, what to show.

No Textual: the screen runs a `BulkAction` through the client and shows these summaries.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

from msgspec.structs import replace

from ckpt_tui.api_types import Checkpoint
from ckpt_tui.client import BulkProgress, CheckpointClient, Outcome, Stop, run_bulk
from ckpt_tui.timekeeping.rate import RateMeter

ActionKind = Literal["delete", "publish", "unpublish", "ttl", "expire"]
EXPIRE_INSTEAD_SECONDS = 86400
EXPIRE_INSTEAD_TEXT = "1 day"
""""Expire instead of deleting": the one grace period of the delete dialog and the keep policy.
A day, not an hour: long enough to notice a mistake tomorrow morning."""

VERBS: dict[ActionKind, tuple[str, str]] = {
    "delete": ("Deleting", "Deleted"),
    "publish": ("Publishing", "Published"),
    "unpublish": ("Unpublishing", "Unpublished"),
    "ttl": ("Setting the TTL of", "Set the TTL of"),
    "expire": (
        f"Setting to expire in {EXPIRE_INSTEAD_TEXT}",
        f"Set to expire in {EXPIRE_INSTEAD_TEXT}",
    ),
}


@dataclass
class BulkAction:
    """An action over some checkpoints; `ttl_for` gives each path its TTL for "ttl"."""

    kind: ActionKind
    paths: list[str]
    label: str = ""
    ttl_for: dict[str, int | None] = field(default_factory=dict)
    outcomes: list[Outcome] = field(default_factory=list)
    run_names: dict[str, str] = field(default_factory=dict)
    """Each path's run as the user knows it, taken when the action starts (for the log)."""

    def ttl_of(self, path: str) -> int | None:
        if self.kind == "expire":
            return EXPIRE_INSTEAD_SECONDS
        return self.ttl_for[path]

    async def run(
        self, client: CheckpointClient, on_progress: BulkProgress, stop: Stop | None = None
    ) -> list[Outcome]:
        """Apply it through the client; one outcome per path, never raising half-way; once
        `stop` is asked, the paths not sent yet are outcomes "not tried"."""
        change = CLIENT_CALLS[self.kind]

        def one(path: str) -> Awaitable[None]:
            return change(client, self, path)

        # as many workers as the ceiling: the client's pace decides how many are sent at once
        workers = client.pace.ceiling
        self.outcomes = await run_bulk(self.paths, one, workers, on_progress, stop)
        return self.outcomes

    def retry(self, failed: Sequence[str]) -> BulkAction:
        """The same action over just the `failed` paths."""
        return BulkAction(self.kind, list(failed), self.label, self.ttl_for, [], self.run_names)

    @property
    def failed(self) -> dict[str, str]:
        """Each failed path with a short reason: the status and the server's own words."""
        return {o.target: short_reason(o) for o in self.outcomes if not o.ok}

    def progress_text(self, done: int) -> str:
        return progress_text(self.kind, done, len(self.paths))

    @property
    def not_tried(self) -> int:
        """How many were never sent: the action was stopped first."""
        return sum(not o.tried for o in self.outcomes)

    def summary(self) -> str:
        """'Deleted 38 of 40; 2 failed'."""
        ok = sum(o.ok for o in self.outcomes)
        return summary_text(self.kind, ok, len(self.paths), self.not_tried)


def progress_text(kind: ActionKind, done: int, total: int, meter: RateMeter | None = None) -> str:
    """'Deleting 12 of 40…': how a change is going; with a `meter` of it, its rate and time
    left once known: 'Deleting 12 of 40 · 48/s · 1s left'."""
    text = f"{VERBS[kind][0]} {done:,} of {total:,}"
    rate = None if meter is None else meter.rate
    if meter is None or rate is None:
        return f"{text}…"
    return f"{text} · {rate:,.0f}/s · {meter.left_text()}"


def summary_text(kind: ActionKind, ok: int, total: int, not_tried: int = 0) -> str:
    """'Deleted 38 of 40; 2 failed': how a change went (the TUI's status line and session
    log, `prune`'s entry in the actions log); a stopped one says how many it never sent:
    'Deleted 12 of 40; 1 failed; 27 not tried'."""
    text = f"{VERBS[kind][1]} {ok:,} of {total:,}"
    failed = total - ok - not_tried
    if failed:
        text += f"; {failed:,} failed"
    return f"{text}; {not_tried:,} not tried" if not_tried else text


Change = Callable[[CheckpointClient, BulkAction, str], Awaitable[None]]
CLIENT_CALLS: dict[ActionKind, Change] = {
    "delete": lambda client, _, path: client.delete_checkpoint(path),
    "publish": lambda client, _, path: client.publish(path),
    "unpublish": lambda client, _, path: client.unpublish(path),
    "ttl": lambda client, action, path: client.set_ttl(path, action.ttl_of(path)),
    "expire": lambda client, action, path: client.set_ttl(path, action.ttl_of(path)),
}
"""What each kind of action does to one checkpoint, through the client."""


def short_reason(outcome: Outcome) -> str:
    """'403 injected failure…' fits a table cell; the full message is in the session log."""
    detail = getattr(outcome.error, "detail", "") or outcome.message
    return f"{outcome.status} {detail}" if outcome.status else detail


def patch_checkpoints(
    checkpoints: list[Checkpoint], action: BulkAction, done: set[str], now: datetime
) -> list[Checkpoint]:
    """What the server now holds, given the paths it confirmed; the rest is unchanged."""
    change = patcher(action, now)
    patched: list[Checkpoint] = []
    for ckpt in checkpoints:
        if ckpt.tinker_path not in done:
            patched.append(ckpt)
        elif action.kind != "delete":
            patched.append(change(ckpt))
    return patched


def patcher(action: BulkAction, now: datetime) -> Callable[[Checkpoint], Checkpoint]:
    if action.kind in ("publish", "unpublish"):
        public = action.kind == "publish"
        return lambda ckpt: replace(ckpt, public=public)

    def set_expiry(ckpt: Checkpoint) -> Checkpoint:
        ttl = action.ttl_of(ckpt.tinker_path)
        expires = None if ttl is None else now + timedelta(seconds=ttl)
        return replace(ckpt, expires_at=expires)

    return set_expiry
