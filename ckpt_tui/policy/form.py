"""What the keep-policy form holds, turned into a `KeepPolicy` (pure: no widgets here).

Every mistake becomes a `PolicyError` whose message names the field as the form labels it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from ckpt_tui.catalog import CheckpointRow, RunSummary
from ckpt_tui.policy.rules import KeepPolicy, PolicyError
from ckpt_tui.timekeeping.dates import DateError, parse_instant


@dataclass(frozen=True)
class FormValues:
    """The form's fields as typed: numbers and the date are still text."""

    keep_final: bool = True
    keep_flagged_best: bool = True
    keep_resume_point: bool = True
    keep_published: bool = True
    best: str = ""
    metric: str | None = None
    higher_is_better: bool = False
    last: str = ""
    every: str = ""
    after: str = ""


def whole_number(text: str, label: str) -> int | None:
    """None for an empty field, else a whole number of at least 1."""
    if not text.strip():
        return None
    try:
        value = int(text.strip())
    except ValueError:
        value = 0
    if value < 1:
        raise PolicyError(
            f"{label}: give a whole number of at least 1 (e.g. 3), or leave it empty; "
            f"got {text.strip()!r}"
        )
    return value


def expiry_limit(text: str) -> datetime | None:
    """None for an empty field, else a date (end of that UTC day) or an ISO time."""
    if not text.strip():
        return None
    try:
        return parse_instant(text, bare_date="end")
    except DateError as exc:
        raise PolicyError(f"Expiring after: {exc}") from None


def policy_from_form(values: FormValues) -> KeepPolicy:
    """The policy the form describes; PolicyError says which field to fix."""
    best = whole_number(values.best, "Keep best")
    if best is not None and not values.metric:
        raise PolicyError("Keep best: no checkpoint here has a metric to rank by")
    return KeepPolicy(
        keep_final=values.keep_final,
        keep_flagged_best=values.keep_flagged_best,
        keep_resume_point=values.keep_resume_point,
        keep_published=values.keep_published,
        keep_best=best,
        metric=values.metric if best is not None else None,
        higher_is_better=values.higher_is_better,
        keep_last=whole_number(values.last, "Keep last"),
        keep_every=whole_number(values.every, "Every"),
        keep_expiring_after=expiry_limit(values.after),
    )


def stored_rows(runs: Iterable[RunSummary]) -> list[CheckpointRow]:
    return [row for run in runs for row in run.stored_rows]
