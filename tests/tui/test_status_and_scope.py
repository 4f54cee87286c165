"""The status line and a keep policy's scope come from small frozen data (`StatusFacts`,
`Selection`), not from the screen: each is checked here without one."""

from __future__ import annotations

from ckpt_tui.api_types import TrainingRun
from ckpt_tui.backends import Backend, BackendState, Fleet
from ckpt_tui.backends.fleet_view import FleetCatalog, RowKey
from ckpt_tui.catalog.row_cache import RowCache
from ckpt_tui.catalog.snapshot import Snapshot
from ckpt_tui.training.logdirs import LogDirDiscovery
from ckpt_tui.tui.screens.browse.policy_flow import Selection, policy_scope
from ckpt_tui.tui.view.status import StatusFacts, badge, marked_text, status_text
from tests.support.dialogs import NOW, GiB, ckpt

BAR = "  │  "


def two_runs(rate: float | None = None) -> Fleet:
    """One backend, "box", holding run-a (two checkpoints) and run-b (one)."""
    checkpoints = [
        ckpt("a1", 5, size=GiB, run="run-a"),
        ckpt("a2", 5, size=GiB, run="run-a"),
        ckpt("b1", 5, size=GiB, run="run-b"),
    ]
    runs = [TrainingRun(run, "Qwen/Qwen3-8B", "me", True, NOW) for run in ("run-a", "run-b")]
    snapshot = Snapshot.join(runs, checkpoints, LogDirDiscovery([], []), cache=RowCache("box"))
    backend = Backend("box", "local", "/data/box")
    return Fleet((BackendState(backend, snapshot, complete=True, rate=rate),))


def path(catalog: FleetCatalog, name: str) -> RowKey:
    return next(("box", r.tinker_path) for r in catalog.rows if r.tinker_path.endswith(name))


def test_the_status_line_says_loading_then_refreshing() -> None:
    def shown(**facts: object) -> str:
        return status_text(StatusFacts(browsing="By run", **facts)).plain  # type: ignore[arg-type]

    assert shown(fetching=True) == f"By run{BAR}Loading…"
    waiting = (("", None),)
    assert shown(fetching=True, progress=waiting) == f"By run{BAR}Loading: waiting for the server"
    some = (("", (1000, 5000)),)
    assert shown(fetching=True, progress=some) == f"By run{BAR}Loading: 1,000 of 5,000 checkpoints"
    assert shown(fetching=True, refreshing=True) == f"By run{BAR}Refreshing…"
    both = (("box1", (10, 20)), ("box2", None))
    assert (
        shown(fetching=True, refreshing=True, progress=both)
        == f"By run{BAR}Refreshing: box1 10 of 20 checkpoints, box2 waiting for the server"
    )
    assert shown() == "By run"


def test_the_status_line_lists_a_partial_list_first_and_the_error_last() -> None:
    facts = StatusFacts(
        browsing="All checkpoints",
        view_counts="3 of 9 match",
        bulk_progress="Deleting 2 of 5…",
        marked="2 marked · 2.0 GiB",
        no_log_dirs="no training logs found",
        dropped_marks="1 marked checkpoint no longer stored: unmarked",
        new_above=1200,
        incomplete="the list",
    )
    extras = [  # a partial list first: a narrow line cuts from the end
        "Incomplete list: some checkpoints may not be shown",
        "Deleting 2 of 5…",
        "2 marked · 2.0 GiB",
        "no training logs found",
        "1 marked checkpoint no longer stored: unmarked",
        "1,200 new above",
    ]
    assert status_text(facts).plain == BAR.join(["All checkpoints · 3 of 9 match", *extras])
    failed = StatusFacts(browsing="By run", no_log_dirs="no logs", errors=(("", "refused"),))
    assert status_text(failed).plain == f"By run{BAR}Backend error (r retries): refused"
    several = StatusFacts(browsing="By run", errors=(("box2", "refused"),), incomplete="box1")
    assert status_text(several).plain == BAR.join(
        [
            "By run",
            "Incomplete list (box1): some checkpoints may not be shown",
            "box2 failed (r retries): refused",
        ]
    )
    unread = StatusFacts(browsing="By run", incomplete="box1", first_problem="box1: a: not read")
    assert (
        status_text(unread).plain
        == f"By run{BAR}Incomplete list (box1; ? shows why): box1: a: not read"
    )
    loading = StatusFacts(browsing="By run", fetching=True, incomplete="the list")
    assert "Incomplete" not in status_text(loading).plain  # not while the next load runs


def test_a_partial_backend_s_badge_says_partial() -> None:
    [whole] = two_runs().states
    partial = whole.replace(complete=False, latency=0.003)
    assert badge(whole, False, 0) == "box ✓"
    assert badge(partial, False, 0) == "box ! partial 3 ms"
    assert badge(partial, False, 1) == "box !"  # the short form, when narrow


def test_marked_text_counts_the_marked_checkpoints_and_their_monthly_cost() -> None:
    unpriced, priced = two_runs(), two_runs(0.1)
    catalog = FleetCatalog(unpriced)
    marks = {path(catalog, "a1"), path(catalog, "b1")}
    assert marked_text(catalog, marks, unpriced) == "2 marked · 2.0 GiB"
    assert marked_text(catalog, marks, priced) == "2 marked · 2.0 GiB · $0.20/mo"
    assert marked_text(catalog, set(), priced) == ""
    assert marked_text(None, marks, unpriced) == ""


def test_a_keep_policy_starts_on_the_marked_runs_else_the_highlighted_one_else_all() -> None:
    catalog = FleetCatalog(two_runs())
    marked = Selection(frozenset({path(catalog, "a1"), path(catalog, "b1")}), ("box", "run-a"))
    runs, label = policy_scope(marked, catalog)
    assert [run.run_id for run in runs] == ["run-a", "run-b"]
    assert label == "the 2 runs holding the 2 marked checkpoints"
    runs, label = policy_scope(Selection(frozenset({path(catalog, "a2")})), catalog)
    assert ([run.run_id for run in runs], label) == (
        ["run-a"],
        "the run holding the 1 marked checkpoint",
    )
    runs, label = policy_scope(Selection(highlighted_run=("box", "run-b")), catalog)
    assert ([run.run_id for run in runs], label) == (["run-b"], "run-b")
    runs, label = policy_scope(Selection(), catalog)
    assert (len(runs), label) == (2, "all 2 runs")
