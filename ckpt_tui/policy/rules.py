"""Keep policies: which stored checkpoints to keep and which to delete, and why (pure, no I/O).

A `KeepPolicy` combines the strategies training guides recommend (keep the final, the
trainer's own best checkpoint and the resume point, best K by a metric, last M, every N steps,
published ones, ones that live long) and `plan(rows, policy, now)` turns it into one `Decision`
per stored row. A row is kept when any
rule keeps it; every kept row says which rules kept it; the others are deleted with the reason
"matched no keep rule".

Choices, and why:

- Best K and last M are counted per (run, checkpoint kind): a save usually writes a training
  state and sampler weights, and "keep last 3" should keep 3 of each, not 3 files in total.
- They are counted over every stored row of that group, including rows another rule already
  keeps (the final is usually one of the last M). Missing rows (no longer stored) are never in
  a plan and never counted.
- Both rankings are total orders that do not depend on which other rows exist. So the K best
  (or M last) of a set are still the K best of any subset that contains them, which makes a plan
  idempotent: delete what it says, plan again on what is left, and nothing new is deleted.
- Best K: rows without a finite value for the metric are not kept by that rule. Ties on the
  metric go to the later save (step, then created, then path).
- Last M: ordered by step, then created, then path. Rows without a step count as older than
  every row with one (among themselves, by created). Rows without a step are never kept by
  keep_every; step 0 is kept by it (0 is a multiple of every N).
- keep_expiring_after keeps rows that never expire and rows whose expiry is strictly later.
- A checkpoint still being written (flagged incomplete by the server) is always kept, whatever
  the policy, and is not counted by best K or last M: those count complete saves.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone

import msgspec

from ckpt_tui.catalog import CheckpointRow, stored_only
from ckpt_tui.sizes import SizeTotal, total
from ckpt_tui.timekeeping.dates import is_end_of_day

NO_RULE_REASON = "matched no keep rule"
INCOMPLETE_REASON = "incomplete (still being written)"
_EARLIEST = datetime.min.replace(tzinfo=timezone.utc)


class PolicyError(ValueError):
    """A keep policy that makes no sense; the message says what to change."""


class KeepPolicy(msgspec.Struct, frozen=True, gc=False):
    """Which checkpoints to keep. Everything no rule keeps is deleted."""

    keep_final: bool = True
    keep_flagged_best: bool = True
    """The training framework's own best checkpoint (HF Trainer's best_model_checkpoint)."""
    keep_resume_point: bool = True
    keep_published: bool = True
    keep_best: int | None = None
    metric: str | None = None
    higher_is_better: bool = False
    keep_last: int | None = None
    keep_every: int | None = None
    keep_expiring_after: datetime | None = None

    def __post_init__(self) -> None:
        for name, value in (
            ("keep_best", self.keep_best),
            ("keep_last", self.keep_last),
            ("keep_every", self.keep_every),
        ):
            if value is not None and (isinstance(value, bool) or value < 1):
                raise PolicyError(f"{name} must be a whole number of at least 1, got {value!r}")
        if self.keep_best is not None and not (self.metric and self.metric.strip()):
            raise PolicyError("keep_best needs a metric key (e.g. eval_loss) to rank by")
        if self.metric is not None and self.keep_best is None:
            raise PolicyError(f"metric {self.metric!r} is only used with keep_best: give both")
        after = self.keep_expiring_after
        if after is not None and after.tzinfo is None:
            raise PolicyError("keep_expiring_after must be a timezone-aware datetime")

    @property
    def selects_something(self) -> bool:
        """True if a rule other than the protections (final, best, resume, published) keeps rows.

        Without one, a plan deletes every unprotected checkpoint.
        """
        return any(
            value is not None
            for value in (self.keep_best, self.keep_last, self.keep_every, self.keep_expiring_after)
        )

    def describe(self) -> list[str]:
        """The rules in words, e.g. ['final', 'resume point', 'last 3']."""
        words = [
            word
            for word, on in (
                ("final", self.keep_final),
                ("flagged best", self.keep_flagged_best),
                ("resume point", self.keep_resume_point),
                ("published", self.keep_published),
            )
            if on
        ]
        if self.keep_best is not None:
            better = "higher" if self.higher_is_better else "lower"
            words.append(f"best {self.keep_best} by {self.metric} ({better} is better)")
        if self.keep_last is not None:
            words.append(f"last {self.keep_last}")
        if self.keep_every is not None:
            words.append(f"every {self.keep_every} steps")
        if self.keep_expiring_after is not None:
            words.append(f"expiring after {describe_moment(self.keep_expiring_after)} or never")
        return words


def describe_moment(at: datetime) -> str:
    """A date alone when `at` is the end of a UTC day (how a bare date is read), else the time."""
    utc = at.astimezone(timezone.utc)
    if is_end_of_day(utc):
        return utc.date().isoformat()
    return utc.strftime("%Y-%m-%d %H:%M:%S UTC")


class Decision(msgspec.Struct, frozen=True, gc=False):
    """What the plan does with one row, and why it keeps it (or "matched no keep rule")."""

    row: CheckpointRow
    keep: bool
    reasons: tuple[str, ...]


class RunPlan(msgspec.Struct, frozen=True, gc=False):
    """The decisions for one run's stored rows, in the order the rows were given."""

    run_id: str
    run_name: str
    decisions: tuple[Decision, ...]

    @property
    def kept(self) -> list[Decision]:
        return [d for d in self.decisions if d.keep]

    @property
    def deleted(self) -> list[Decision]:
        return [d for d in self.decisions if not d.keep]

    @property
    def freed(self) -> SizeTotal:
        return total(d.row.size for d in self.deleted)

    @property
    def kept_size(self) -> SizeTotal:
        return total(d.row.size for d in self.kept)


class Plan(msgspec.Struct, frozen=True, gc=False):
    """A policy applied to stored rows: one decision per row, grouped by run."""

    policy: KeepPolicy
    made_at: datetime
    runs: tuple[RunPlan, ...]

    @property
    def decisions(self) -> list[Decision]:
        return [d for run in self.runs for d in run.decisions]

    @property
    def to_delete(self) -> list[CheckpointRow]:
        return [d.row for d in self.decisions if not d.keep]

    @property
    def kept_count(self) -> int:
        return sum(len(run.kept) for run in self.runs)

    @property
    def delete_count(self) -> int:
        return sum(len(run.deleted) for run in self.runs)

    @property
    def freed(self) -> SizeTotal:
        """What deleting frees: "at least" this much when some sizes are unknown."""
        return total(row.size for row in self.to_delete)

    @property
    def kept_size(self) -> SizeTotal:
        return total(d.row.size for d in self.decisions if d.keep)


def recency_key(row: CheckpointRow) -> tuple[bool, int, datetime, str]:
    """Later saves sort later; rows without a step before all rows with one."""
    step = -1 if row.step is None else row.step
    return (row.step is not None, step, row.created or _EARLIEST, row.tinker_path)


def last_m(rows: Sequence[CheckpointRow], m: int) -> list[CheckpointRow]:
    return sorted(rows, key=recency_key)[-m:]


def best_k(
    rows: Sequence[CheckpointRow], k: int, metric: str, higher_is_better: bool
) -> list[CheckpointRow]:
    """The K rows with the best finite value of `metric`; ties go to the later save."""
    valued = [row for row in rows if math.isfinite(row.metrics.get(metric, math.nan))]

    def goodness(row: CheckpointRow) -> tuple[float, tuple[bool, int, datetime, str]]:
        value = row.metrics[metric]
        return (value if higher_is_better else -value, recency_key(row))

    return sorted(valued, key=goodness)[-k:]


GroupRule = Callable[[Sequence[CheckpointRow]], list[CheckpointRow]]


def group_rules(policy: KeepPolicy) -> list[tuple[str, GroupRule]]:
    """The rules that rank rows within a (run, kind) group, with the reason each gives."""
    rules: list[tuple[str, GroupRule]] = []
    best, metric, last = policy.keep_best, policy.metric, policy.keep_last
    if best is not None and metric is not None:
        higher = policy.higher_is_better
        rules.append((f"best {best} by {metric}", lambda g: best_k(g, best, metric, higher)))
    if last is not None:
        rules.append((f"last {last}", lambda g: last_m(g, last)))
    return rules


def row_reasons(row: CheckpointRow, policy: KeepPolicy) -> list[str]:
    """The reasons that depend on the row alone."""
    reasons = [INCOMPLETE_REASON] if row.incomplete else []
    if policy.keep_final and row.final:
        reasons.append("final")
    if policy.keep_flagged_best and row.best:
        reasons.append("flagged best")
    if policy.keep_resume_point and row.resume_point:
        reasons.append("resume point")
    if policy.keep_published and row.public:
        reasons.append("published")
    return reasons


def late_reasons(row: CheckpointRow, policy: KeepPolicy) -> list[str]:
    """Reasons listed after the ranking ones: every N steps, and long-lived."""
    reasons = []
    every = policy.keep_every
    if every is not None and row.step is not None and row.step % every == 0:
        reasons.append(f"every {every} steps")
    after = policy.keep_expiring_after
    if after is not None:
        if row.expires_at is None:
            reasons.append("never expires")
        elif row.expires_at > after:
            reasons.append(f"expires after {describe_moment(after)}")
    return reasons


def group_by(
    rows: Iterable[CheckpointRow], key: Callable[[CheckpointRow], tuple[str, ...]]
) -> dict[tuple[str, ...], list[CheckpointRow]]:
    groups: dict[tuple[str, ...], list[CheckpointRow]] = {}
    for row in rows:
        groups.setdefault(key(row), []).append(row)
    return groups


def ranked_reasons(
    rows: Sequence[CheckpointRow], policy: KeepPolicy
) -> dict[tuple[str, str], list[str]]:
    """Best K and last M reasons by row key (backend, tinker path), ranked within each
    (backend, run, kind) group: two backends' copies of one run are two runs."""
    found: dict[tuple[str, str], list[str]] = {}
    rules = group_rules(policy)
    complete = [row for row in rows if not row.incomplete]
    for group in group_by(complete, lambda r: (r.backend, r.run_id, r.checkpoint_type)).values():
        for reason, rule in rules:
            for row in rule(group):
                found.setdefault(row.key, []).append(reason)
    return found


def plan(rows: Sequence[CheckpointRow], policy: KeepPolicy, now: datetime) -> Plan:
    """Decide, for every stored row, keep (with reasons) or delete. Missing rows are skipped."""
    stored = stored_only(rows)
    ranked = ranked_reasons(stored, policy)

    def decide(row: CheckpointRow) -> Decision:
        reasons = [
            *row_reasons(row, policy),
            *ranked.get(row.key, []),
            *late_reasons(row, policy),
        ]
        if reasons:
            return Decision(row, True, tuple(reasons))
        return Decision(row, False, (NO_RULE_REASON,))

    runs = tuple(
        RunPlan(run_id, group[0].run_name, tuple(decide(row) for row in group))
        for (_, run_id), group in group_by(stored, lambda r: (r.backend, r.run_id)).items()
    )
    return Plan(policy, now, runs)
