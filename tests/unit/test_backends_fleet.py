"""The backend descriptor and the fleet: per-backend states, rows across backends, totals."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from ckpt_tui.api_types import Checkpoint, TrainingRun
from ckpt_tui.backends import (
    RATE_FROM_BILLING,
    RATE_SET_BY_YOU,
    Backend,
    BackendState,
    Fleet,
)
from ckpt_tui.catalog.row_cache import RowCache
from ckpt_tui.catalog.snapshot import Snapshot
from ckpt_tui.training.logdirs import LogDirDiscovery

T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)
GIB = 2**30

BOX1 = Backend("box1", "url", "http://127.0.0.1:8751")
SCRATCH = Backend("scratch", "local", "/data/ckpts", readonly=True)
TINKER = Backend("tinker", "tinker", "https://tinker.example")


def snapshot_of(backend: str, sizes: list[int | None], incomplete: str = "") -> Snapshot:
    """One run `run-a` with one checkpoint per size; the n-th expires n+1 days after T0."""
    run = TrainingRun("run-a", "Qwen/Qwen3-8B", "me", False, T0)
    checkpoints = [
        Checkpoint(
            f"weights/{n:04d}",
            "training",
            T0 + timedelta(hours=n),
            f"tinker://run-a/weights/{n:04d}",
            size,
            expires_at=T0 + timedelta(days=n + 1),
        )
        for n, size in enumerate(sizes)
    ]
    return Snapshot.join(
        [run], checkpoints, LogDirDiscovery([], []), cache=RowCache(backend), incomplete=incomplete
    )


def test_backend_names_are_checked() -> None:
    with pytest.raises(ValueError, match="not usable"):
        Backend("box 1", "url", "http://127.0.0.1:1")
    with pytest.raises(ValueError, match="not usable"):
        Backend("", "local", "/x")
    with pytest.raises(ValueError, match="storage rate"):
        Backend("box1", "url", "http://127.0.0.1:1", storage_rate=-1.0)


def test_backend_describes_itself_and_its_json_object() -> None:
    assert BOX1.describe() == "box1 (http://127.0.0.1:8751)"
    assert SCRATCH.describe() == "scratch (local store /data/ckpts, read-only)"
    assert BOX1.document() == {"name": "box1", "kind": "url", "url": "http://127.0.0.1:8751"}
    assert SCRATCH.document() == {"name": "scratch", "kind": "local", "path": "/data/ckpts"}


def test_rows_and_runs_carry_their_backend_and_are_named_by_it() -> None:
    fleet = Fleet.loading([BOX1, SCRATCH])
    fleet = fleet.with_backend("box1", BackendState(BOX1, snapshot_of("box1", [1, 2])))
    fleet = fleet.with_backend("scratch", BackendState(SCRATCH, snapshot_of("scratch", [3])))
    rows = fleet.rows()
    assert [row.backend for row in rows] == ["box1", "box1", "scratch"]
    assert {run.key for run in fleet.runs()} == {("box1", "run-a"), ("scratch", "run-a")}
    # the same tinker path on two backends: two rows, told apart by their backend
    same = fleet.row("scratch", "tinker://run-a/weights/0000")
    assert same is not None and same.key == ("scratch", "tinker://run-a/weights/0000")
    other = fleet.row("box1", "tinker://run-a/weights/0000")
    assert other is not None and other is not same and other.size.bytes == 1
    groups = fleet.by_backend(reversed(rows))
    assert list(groups) == ["box1", "scratch"] and len(groups["box1"]) == 2


def test_with_backend_replaces_only_that_entry_and_keeps_the_order() -> None:
    fleet = Fleet.loading([TINKER, BOX1, SCRATCH])
    assert all(state.loading for state in fleet.states) and not fleet.complete
    failed = fleet.state("box1").replace(error="nothing listens at http://127.0.0.1:8751")
    after = fleet.with_backend("box1", failed)
    assert after.names == ("tinker", "box1", "scratch")
    assert after.state("box1").error is not None and fleet.state("box1").error is None
    assert after.state("tinker") is fleet.state("tinker")
    assert after.errors() == {"box1": "nothing listens at http://127.0.0.1:8751"}
    assert "box1: nothing listens" in after.incomplete()[1]
    with pytest.raises(ValueError, match="cannot replace"):
        fleet.with_backend("tinker", failed)
    with pytest.raises(KeyError, match="no backend named 'box9'"):
        fleet.state("box9")


def test_names_are_unique_in_a_fleet() -> None:
    with pytest.raises(ValueError, match="given twice: box1"):
        Fleet.loading([BOX1, Backend("box1", "local", "/elsewhere")])


def test_complete_only_when_every_backend_loaded_whole() -> None:
    fleet = Fleet.loading([BOX1, SCRATCH])
    fleet = fleet.with_backend("box1", BackendState(BOX1, snapshot_of("box1", [1]), complete=True))
    partial = snapshot_of("scratch", [1], incomplete="page 3 failed")
    fleet = fleet.with_backend("scratch", BackendState(SCRATCH, partial))
    assert not fleet.complete
    assert fleet.incomplete() == ["scratch: page 3 failed"]
    whole = BackendState(SCRATCH, snapshot_of("scratch", [1]), complete=True)
    assert fleet.with_backend("scratch", whole).complete


def test_totals_per_backend_and_overall_with_rates() -> None:
    fleet = Fleet.loading([TINKER, BOX1, SCRATCH])
    tinker = BackendState(
        TINKER, snapshot_of("tinker", [GIB, GIB]), rate=0.5, rate_source=RATE_FROM_BILLING
    )
    box1 = BackendState(
        BOX1, snapshot_of("box1", [GIB, None]), rate=1.0, rate_source=RATE_SET_BY_YOU
    )
    scratch = BackendState(SCRATCH, snapshot_of("scratch", [4 * GIB]))  # no rate
    for state in (tinker, box1, scratch):
        fleet = fleet.with_backend(state.name, state)
    totals = fleet.totals()
    assert list(totals) == ["tinker", "box1", "scratch"]
    assert totals["tinker"].cost is not None and totals["tinker"].cost.usd == pytest.approx(1.0)
    box1_cost = totals["box1"].cost  # the unsized one is estimated from its sibling
    assert box1_cost is not None and box1_cost.estimated and box1_cost.usd == pytest.approx(2.0)
    assert totals["scratch"].cost is None and totals["scratch"].unpriced == ("scratch",)
    overall = fleet.total()
    assert (overall.runs, overall.checkpoints) == (3, 5)
    assert overall.size.bytes == 8 * GIB and overall.size.estimate_count == 1
    assert overall.cost is not None and overall.cost.usd == pytest.approx(3.0)
    assert overall.cost.at_least and overall.cost.estimated and overall.unpriced == ("scratch",)
    assert overall.soonest_expiry == T0 + timedelta(days=1)


def test_a_loading_backend_adds_nothing() -> None:
    fleet = Fleet.loading([BOX1, SCRATCH])
    fleet = fleet.with_backend("box1", BackendState(BOX1, snapshot_of("box1", [GIB])))
    overall = fleet.total()
    assert overall.checkpoints == 1 and overall.cost is None and overall.unpriced == ("box1",)
    assert fleet.totals()["scratch"].checkpoints == 0
