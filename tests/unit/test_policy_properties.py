"""Properties of keep policies over random runs and random policies (Hypothesis).

Rows come from `build_catalog` over random server checkpoints and real log dirs, so finals and
resume points follow the cookbook's records exactly as in the app.
"""

from __future__ import annotations

import math
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from ckpt_tui.catalog import CheckpointRow, build_catalog
from ckpt_tui.policy import NO_RULE_REASON, KeepPolicy, Plan, plan
from tests.support.policy_saves import NOW, Save, server_and_logs

KINDS: list[tuple[str, ...]] = [("state",), ("sampler",), ("state", "sampler")]
LOSSES = st.none() | st.sampled_from([0.5, 1.0, 1.5]) | st.floats(0, 3) | st.just(math.nan)


@st.composite
def run_saves(draw: st.DrawFn, run: str) -> list[Save]:
    """A run's saves: repeated steps, equal times, missing metrics, finals, untracked ones."""
    saves = []
    for index in range(draw(st.integers(1, 9))):
        logged = draw(st.booleans())
        saves.append(
            Save(
                name=f"s{index:02d}",
                step=draw(st.none() | st.integers(0, 12)),
                kinds=draw(st.sampled_from(KINDS)),
                loss=draw(LOSSES),
                final=logged and draw(st.booleans()),
                logged=logged,
                stored=not logged or draw(st.integers(0, 4)) > 0,
                public=draw(st.integers(0, 3)) == 0,
                size=draw(st.none() | st.integers(0, 10**6)),
                expires_in_h=draw(st.none() | st.integers(-5, 60)),
                hour=draw(st.integers(0, 8)),
                run=run,
            )
        )
    return saves


@st.composite
def all_saves(draw: st.DrawFn) -> list[Save]:
    runs = draw(st.lists(st.sampled_from(["run-a", "run-b"]), min_size=1, max_size=2, unique=True))
    return [save for run in runs for save in draw(run_saves(run))]


@st.composite
def policies(draw: st.DrawFn) -> KeepPolicy:
    best = draw(st.none() | st.integers(1, 4))
    hours = draw(st.none() | st.integers(-10, 70))
    return KeepPolicy(
        keep_final=draw(st.booleans()),
        keep_resume_point=draw(st.booleans()),
        keep_published=draw(st.booleans()),
        keep_best=best,
        metric=None if best is None else "eval_loss",
        higher_is_better=draw(st.booleans()),
        keep_last=draw(st.none() | st.integers(1, 4)),
        keep_every=draw(st.none() | st.integers(1, 6)),
        keep_expiring_after=None if hours is None else NOW + timedelta(hours=hours),
    )


@contextmanager
def log_root() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ckpt-policy-") as folder:
        yield Path(folder)


def later_than(a: CheckpointRow, b: CheckpointRow) -> bool:
    """The documented save order: rows with a step after rows without; step, created, path."""
    key_a = (a.step is not None, a.step or 0, a.created, a.tinker_path)
    key_b = (b.step is not None, b.step or 0, b.created, b.tinker_path)
    return key_a > key_b


def better_than(a: CheckpointRow, b: CheckpointRow, metric: str, higher: bool) -> bool:
    value_a, value_b = a.metrics.get(metric, math.nan), b.metrics.get(metric, math.nan)
    if not math.isfinite(value_a):
        return False
    if not math.isfinite(value_b) or value_a != value_b:
        return not math.isfinite(value_b) or (value_a > value_b) == higher
    return later_than(a, b)


def same_group(rows: Sequence[CheckpointRow], row: CheckpointRow) -> list[CheckpointRow]:
    return [
        other
        for other in rows
        if not other.is_missing
        and (other.run_id, other.checkpoint_type) == (row.run_id, row.checkpoint_type)
    ]


def protected_reasons(
    row: CheckpointRow, rows: Sequence[CheckpointRow], p: KeepPolicy
) -> list[str]:
    """Which kept classes `row` belongs to, computed without the planner's code."""
    group = same_group(rows, row)
    found = [
        name
        for name, member in (
            ("final", p.keep_final and row.final),
            ("resume point", p.keep_resume_point and row.resume_point),
            ("published", p.keep_published and row.public),
        )
        if member
    ]
    if p.keep_last is not None and sum(later_than(o, row) for o in group) < p.keep_last:
        found.append("last M")
    metric = p.metric
    if (
        p.keep_best is not None
        and metric is not None
        and math.isfinite(row.metrics.get(metric, math.nan))
    ):
        ahead = sum(better_than(o, row, metric, p.higher_is_better) for o in group)
        if ahead < p.keep_best:
            found.append("best K")
    return found


def check_one_decision_per_stored_row(rows: list[CheckpointRow], result: Plan) -> None:
    stored = [row.tinker_path for row in rows if not row.is_missing]
    assert Counter(d.row.tinker_path for d in result.decisions) == Counter(stored)
    for decision in result.decisions:
        if decision.keep:
            assert decision.reasons and NO_RULE_REASON not in decision.reasons
        else:
            assert decision.reasons == (NO_RULE_REASON,)
    assert result.kept_count + result.delete_count == len(stored)
    assert result.freed.bytes == sum(row.size.bytes or 0 for row in result.to_delete)


def check_no_kept_class_is_deleted(rows: list[CheckpointRow], result: Plan) -> None:
    policy = result.policy
    for row in result.to_delete:
        assert protected_reasons(row, rows, policy) == [], row.tinker_path
        if policy.keep_every is not None and row.step is not None:
            assert row.step % policy.keep_every != 0
        if policy.keep_expiring_after is not None:
            assert row.expires_at is not None and row.expires_at <= policy.keep_expiring_after
    for decision in result.decisions:
        if protected_reasons(decision.row, rows, policy):
            assert decision.keep


def decided(result: Plan) -> dict[str, tuple[bool, tuple[str, ...]]]:
    return {d.row.tinker_path: (d.keep, d.reasons) for d in result.decisions}


@settings(max_examples=150, deadline=None)
@given(all_saves(), policies())
def test_plans_are_complete_safe_and_idempotent(saves: list[Save], policy: KeepPolicy) -> None:
    """One decision per stored row; no kept class deleted; re-planning deletes nothing new.

    (One test for the three, so each generated example is paid for once.)
    """
    with log_root() as root:
        runs, checkpoints, log_dirs = server_and_logs(saves, root)
        rows = build_catalog(runs, checkpoints, log_dirs).rows
        first = plan(rows, policy, NOW)
        gone = {row.tinker_path for row in first.to_delete}
        left = [ckpt for ckpt in checkpoints if ckpt.tinker_path not in gone]
        second = plan(build_catalog(runs, left, log_dirs).rows, policy, NOW)
    check_one_decision_per_stored_row(rows, first)
    check_no_kept_class_is_deleted(rows, first)
    assert second.to_delete == []
    # and every survivor is kept for the very same reasons as before
    assert decided(second) == {path: d for path, d in decided(first).items() if path not in gone}


@settings(max_examples=40, deadline=None)
@given(all_saves(), policies(), st.integers(1, 4))
def test_adding_a_rule_never_deletes_more(saves: list[Save], policy: KeepPolicy, m: int) -> None:
    with log_root() as root:
        rows = build_catalog(*server_and_logs(saves, root)).rows
    wider = replace(policy, keep_last=m if policy.keep_last is None else policy.keep_last + m)
    narrow = {row.tinker_path for row in plan(rows, policy, NOW).to_delete}
    assert {row.tinker_path for row in plan(rows, wider, NOW).to_delete} <= narrow
