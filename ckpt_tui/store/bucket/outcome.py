"""What a bucket delete found and did, checkpoint by checkpoint (`deleting.py`), and what the
recovery of interrupted deletes did (`recovery.py`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from ckpt_tui.store.errors import StorageFailedError, StoreError
from ckpt_tui.store.times import to_us

if TYPE_CHECKING:
    from obstore import ObjectMeta

Found = dict[str, int] | StoreError
"""A checkpoint's objects as a look found them (key -> last modified), or why not."""


@dataclass
class DeleteOutcome:
    """What one checkpoint's delete did, key by key."""

    checkpoint: str
    deleted: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    """key -> why it is still there."""
    left: dict[str, str] = field(default_factory=dict)
    """Keys under the checkpoint not deleted on purpose (appeared or rewritten meanwhile)."""
    requests: int = 0
    """Delete requests (batches) that carried its keys."""
    problem: str | None = None
    """Why the delete is not finished although no key failed (e.g. the metadata write)."""

    @property
    def done(self) -> bool:
        return not self.failed and not self.left and self.problem is None

    def error(self) -> StoreError:
        """The error to answer for an unfinished delete, saying exactly what happened."""
        total = len(self.deleted) + len(self.failed)
        parts = [f"{len(self.deleted)} of {total} objects were deleted"]
        if self.failed:
            key, why = next(iter(sorted(self.failed.items())))
            parts.append(f"{len(self.failed)} could not be (first: {key}: {why})")
        if self.left:
            key, why = next(iter(sorted(self.left.items())))
            parts.append(f"{len(self.left)} were left alone ({key}: {why})")
        if self.problem:
            parts.append(self.problem)
        return StorageFailedError(
            f"deleting {self.checkpoint} is not finished: {'; '.join(parts)}; the store "
            "finishes the delete when it is next opened, or delete it again"
        )


@dataclass
class Recovery:
    """What `recover` found: interrupted deletes finished (or not), and records not acted on."""

    finished: list[DeleteOutcome] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def modified_us(listed: dict[str, ObjectMeta]) -> dict[str, int]:
    """key -> last modified (microseconds) of each object of a listing."""
    return {key: object_us(meta["last_modified"]) for key, meta in listed.items()}


def object_us(moment: datetime) -> int:
    """An object's last modified time, in microseconds."""
    return to_us(moment, "an object's last modified time")
