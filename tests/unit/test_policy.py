"""Keep policies as pure functions: each rule, its reasons, sizes, validation, and the cost."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

import pytest

from ckpt_tui.catalog import CheckpointRow, build_catalog
from ckpt_tui.cost import (
    STORAGE_RATE_ENV,
    MonthlyCost,
    RateError,
    format_cost,
    monthly_cost,
    resolve_storage_rate,
)
from ckpt_tui.policy import NO_RULE_REASON, KeepPolicy, Plan, PolicyError, describe_moment, plan
from ckpt_tui.sizes import Size, total
from tests.support.policy_saves import NOW, Save, server_and_logs


def catalog_rows(saves: Sequence[Save], log_root: Path) -> list[CheckpointRow]:
    """Rows joined by `build_catalog` from server objects and real log dirs."""
    return build_catalog(*server_and_logs(saves, log_root)).rows


def periodic(count: int, kinds: tuple[str, ...] = ("state", "sampler")) -> list[Save]:
    """Saves at steps 100, 200, ... with losses that fall then rise (best in the middle)."""
    return [
        Save(f"{i * 100:06d}", i * 100, kinds, loss=abs(i - count / 2) + 1, hour=i)
        for i in range(1, count + 1)
    ]


def kept(result: Plan) -> dict[str, tuple[str, ...]]:
    return {d.row.tinker_path.split("/", 3)[-1]: d.reasons for d in result.decisions if d.keep}


def deleted(result: Plan) -> list[str]:
    return [row.tinker_path.split("/", 3)[-1] for row in result.to_delete]


def test_last_m_counts_states_and_samplers_separately(tmp_path: Path) -> None:
    rows = catalog_rows(periodic(5), tmp_path)
    result = plan(rows, KeepPolicy(keep_last=2, keep_resume_point=False), NOW)
    assert kept(result) == {
        "weights/000400": ("last 2",),
        "sampler_weights/000400": ("last 2",),
        "weights/000500": ("last 2",),
        "sampler_weights/000500": ("last 2",),
    }
    assert len(result.to_delete) == 6 and result.delete_count == 6 and result.kept_count == 4
    assert all(d.reasons == (NO_RULE_REASON,) for d in result.decisions if not d.keep)


def test_protections_final_resume_point_and_published(tmp_path: Path) -> None:
    saves = [
        Save("000100", 100, kinds=("sampler",), public=True),
        Save("000200", 200),
        Save("000300", 300, kinds=("sampler",)),
        Save("final", 400, final=True, kinds=("sampler",)),
    ]
    rows = catalog_rows(saves, tmp_path)
    result = plan(rows, KeepPolicy(keep_every=1000), NOW)
    assert kept(result) == {
        "sampler_weights/000100": ("published",),
        "weights/000200": ("resume point",),  # the last record with a state path
        "sampler_weights/final": ("final",),
    }
    off = KeepPolicy(
        keep_every=1000, keep_final=False, keep_resume_point=False, keep_published=False
    )
    assert kept(plan(rows, off, NOW)) == {}


def test_best_k_by_metric_lower_or_higher_and_rows_without_a_value(tmp_path: Path) -> None:
    losses = {100: 2.0, 200: 1.5, 300: 1.0, 400: 1.5, 500: 3.0}
    saves = [Save(f"{s:06d}", s, ("state",), loss, hour=s / 100) for s, loss in losses.items()]
    saves.append(Save("nometric", 600, kinds=("state",), hour=9))
    rows = catalog_rows(saves, tmp_path)
    lower = KeepPolicy(keep_best=2, metric="eval_loss", keep_resume_point=False)
    assert kept(plan(rows, lower, NOW)) == {
        "weights/000300": ("best 2 by eval_loss",),
        "weights/000400": ("best 2 by eval_loss",),  # ties with 000200 go to the later save
    }
    higher = KeepPolicy(
        keep_best=1, metric="eval_loss", higher_is_better=True, keep_resume_point=False
    )
    assert kept(plan(rows, higher, NOW)) == {"weights/000500": ("best 1 by eval_loss",)}
    assert "weights/nometric" in deleted(plan(rows, higher, NOW))


def test_untracked_rows_rank_by_their_user_metadata(tmp_path: Path) -> None:
    saves = [Save(f"u{i}", i, kinds=("sampler",), loss=float(i), logged=False) for i in (5, 1, 3)]
    rows = catalog_rows(saves, tmp_path)
    result = plan(rows, KeepPolicy(keep_best=1, metric="eval_loss"), NOW)
    assert kept(result) == {"sampler_weights/u1": ("best 1 by eval_loss",)}


def test_keep_every_n_steps_keeps_step_zero_and_never_rows_without_a_step(tmp_path: Path) -> None:
    saves = [
        Save(name, step, kinds=("sampler",), logged=False, hour=i)
        for i, (name, step) in enumerate([("a", 0), ("b", 50), ("c", 100), ("d", None)])
    ]
    result = plan(catalog_rows(saves, tmp_path), KeepPolicy(keep_every=100), NOW)
    assert kept(result) == {
        "sampler_weights/a": ("every 100 steps",),
        "sampler_weights/c": ("every 100 steps",),
    }


def test_rows_without_a_step_are_older_than_rows_with_one(tmp_path: Path) -> None:
    saves = [
        Save("late-no-step", None, kinds=("sampler",), logged=False, hour=50),
        Save("early-step", 1, kinds=("sampler",), logged=False, hour=1),
    ]
    result = plan(catalog_rows(saves, tmp_path), KeepPolicy(keep_last=1), NOW)
    assert deleted(result) == ["sampler_weights/late-no-step"]


def test_keep_expiring_after_keeps_later_and_never_expiring(tmp_path: Path) -> None:
    saves = [
        Save("soon", 1, kinds=("sampler",), expires_in_h=24),
        Save("late", 2, kinds=("sampler",), expires_in_h=24 * 400),
        Save("never", 3, kinds=("sampler",)),
    ]
    after = datetime(2026, 12, 31, 23, 59, 59, 999999, tzinfo=timezone.utc)
    result = plan(catalog_rows(saves, tmp_path), KeepPolicy(keep_expiring_after=after), NOW)
    assert kept(result) == {
        "sampler_weights/late": ("expires after 2026-12-31",),
        "sampler_weights/never": ("never expires",),
    }


def test_reasons_accumulate_in_a_fixed_order(tmp_path: Path) -> None:
    saves = [*periodic(3, kinds=("state",)), Save("final", 400, kinds=("state",), final=True)]
    policy = KeepPolicy(keep_best=4, metric="eval_loss", keep_last=1, keep_every=100)
    reasons = kept(plan(catalog_rows(saves, tmp_path), policy, NOW))
    # "final" has no eval_loss, so best 4 by eval_loss passes it by
    assert reasons["weights/final"] == ("final", "resume point", "last 1", "every 100 steps")
    assert reasons["weights/000100"] == ("best 4 by eval_loss", "every 100 steps")


def test_missing_rows_are_never_planned_and_runs_are_separate(tmp_path: Path) -> None:
    saves = [
        Save("gone", 1, stored=False),
        Save("a1", 2, run="run-a", hour=1),
        Save("b1", 1, run="run-b", hour=2),
        Save("b2", 2, run="run-b", hour=3),
    ]
    rows = catalog_rows(saves, tmp_path)
    assert any(row.is_missing for row in rows)
    result = plan(rows, KeepPolicy(keep_last=1, keep_resume_point=False), NOW)
    # (sorted: the joined view lists runs newest checkpoint first)
    assert sorted((r.run_id, len(r.decisions), len(r.deleted)) for r in result.runs) == [
        ("run-a", 2, 0),
        ("run-b", 4, 2),
    ]
    assert deleted(result) == ["sampler_weights/b1", "weights/b1"]
    assert result.made_at == NOW and result.policy.keep_last == 1


def test_freed_size_is_at_least_when_sizes_are_unknown(tmp_path: Path) -> None:
    saves = [
        Save("a", 1, kinds=("sampler",), size=300, hour=1),
        Save("b", 2, kinds=("sampler",), size=None, hour=2),
        Save("c", 3, kinds=("sampler",), size=500, hour=3),
    ]
    result = plan(catalog_rows(saves, tmp_path), KeepPolicy(keep_last=1), NOW)
    assert result.freed.bytes == 300 and result.freed.is_at_least
    assert result.runs[0].freed == result.freed and result.kept_size.bytes == 500
    assert result.kept_size.is_exact


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"keep_last": 0}, "keep_last must be a whole number of at least 1"),
        ({"keep_every": -5}, "keep_every must be a whole number of at least 1"),
        ({"keep_best": True, "metric": "x"}, "keep_best must be a whole number"),
        ({"keep_best": 2}, "keep_best needs a metric key"),
        ({"keep_best": 2, "metric": " "}, "keep_best needs a metric key"),
        ({"metric": "eval_loss"}, "only used with keep_best"),
        ({"keep_expiring_after": datetime(2026, 1, 1)}, "timezone-aware"),
    ],
)
def test_invalid_policies_say_what_to_change(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        KeepPolicy(**kwargs)  # type: ignore[arg-type]


def test_policy_describes_its_rules_and_says_if_it_selects_anything() -> None:
    assert not KeepPolicy().selects_something
    assert KeepPolicy().describe() == ["final", "flagged best", "resume point", "published"]
    policy = KeepPolicy(
        keep_final=False,
        keep_flagged_best=False,
        keep_best=2,
        metric="reward",
        higher_is_better=True,
        keep_every=50,
        keep_expiring_after=datetime(2026, 3, 1, 12, tzinfo=timezone.utc),
    )
    assert policy.selects_something
    assert policy.describe() == [
        "resume point",
        "published",
        "best 2 by reward (higher is better)",
        "every 50 steps",
        "expiring after 2026-03-01 12:00:00 UTC or never",
    ]
    assert describe_moment(datetime(2026, 3, 1, 23, 59, 59, 999999, tzinfo=timezone.utc)) == (
        "2026-03-01"
    )


def test_monthly_cost_and_its_format() -> None:
    exact = total([Size.exact(10 * 2**30)])
    assert monthly_cost(exact, 0.124).usd == pytest.approx(1.24)
    assert format_cost(monthly_cost(exact, 1.24)) == "$12.40/mo"
    assert format_cost(MonthlyCost(1234.5)) == "$1,234.50/mo"
    assert format_cost(MonthlyCost(0.001)) == "< $0.01/mo"
    assert format_cost(MonthlyCost(0.0)) == "$0.00/mo"
    assert format_cost(MonthlyCost(3.0, at_least=True, estimated=True)) == "at least ≈ $3.00/mo"
    with pytest.raises(RateError):
        monthly_cost(exact, -1)


def test_storage_rate_flag_wins_over_the_environment() -> None:
    env = {STORAGE_RATE_ENV: "0.5"}
    assert resolve_storage_rate("0.1", env) == 0.1
    assert resolve_storage_rate(None, env) == 0.5
    assert resolve_storage_rate(None, {}) is None
    assert resolve_storage_rate("$0.02", {}) == 0.02
    with pytest.raises(RateError, match=r"\$CKPT_TUI_STORAGE_RATE must be a number"):
        resolve_storage_rate(None, {STORAGE_RATE_ENV: "cheap"})
    with pytest.raises(RateError, match="--storage-rate must be a finite number"):
        resolve_storage_rate("nan", {})
