"""The status line and a keep policy's scope come from small frozen data (`StatusFacts`,
`Selection`), not from the screen: each is checked here without one."""

from __future__ import annotations

from ckpt_tui.api_types import TrainingRun
from ckpt_tui.catalog import Catalog, build_catalog
from ckpt_tui.tui.screens.policy_flow import Selection, policy_scope
from ckpt_tui.tui.status import StatusFacts, marked_text, status_text
from tests.support.dialogs import NOW, GiB, ckpt

BAR = "  │  "


def two_runs() -> Catalog:
    checkpoints = [
        ckpt("a1", 5, size=GiB, run="run-a"),
        ckpt("a2", 5, size=GiB, run="run-a"),
        ckpt("b1", 5, size=GiB, run="run-b"),
    ]
    runs = [TrainingRun(run, "Qwen/Qwen3-8B", "me", True, NOW) for run in ("run-a", "run-b")]
    return build_catalog(runs, checkpoints, [])


def path(catalog: Catalog, name: str) -> str:
    return next(row.tinker_path for row in catalog.rows if row.tinker_path.endswith(name))


def test_the_status_line_says_loading_then_refreshing() -> None:
    def shown(**facts: object) -> str:
        return status_text(StatusFacts(browsing="By run", **facts)).plain  # type: ignore[arg-type]

    assert shown(fetching=True) == f"By run{BAR}Loading…"
    assert shown(fetching=True, progress=(1000, 5000)) == f"By run{BAR}1,000 of 5,000 loaded"
    assert shown(fetching=True, refreshing=True) == f"By run{BAR}Refreshing…"
    assert (
        shown(fetching=True, refreshing=True, progress=(10, 20))
        == f"By run{BAR}Refreshing 10 of 20"
    )
    assert shown() == "By run"


def test_the_status_line_lists_what_goes_on_in_order_and_the_error_last() -> None:
    facts = StatusFacts(
        browsing="All checkpoints",
        view_counts="3 of 9 match",
        bulk_progress="Deleting 2 of 5…",
        marked="2 marked · 2.0 GiB",
        no_log_dirs="no training logs found",
        dropped_marks="1 marked checkpoint no longer stored: unmarked",
        new_above=1200,
        incomplete=True,
    )
    extras = [
        "Deleting 2 of 5…",
        "2 marked · 2.0 GiB",
        "no training logs found",
        "1 marked checkpoint no longer stored: unmarked",
        "1,200 new above",
        "Incomplete list: some checkpoints may not be shown",
    ]
    assert status_text(facts).plain == BAR.join(["All checkpoints · 3 of 9 match", *extras])
    failed = status_text(StatusFacts(browsing="By run", no_log_dirs="no logs", error="refused"))
    assert failed.plain == f"By run{BAR}Backend error (r retries): refused"  # no log hint then
    loading = StatusFacts(browsing="By run", fetching=True, incomplete=True)
    assert "Incomplete" not in status_text(loading).plain  # not while the next load runs


def test_marked_text_counts_the_marked_checkpoints_and_their_monthly_cost() -> None:
    catalog = two_runs()
    marks = {path(catalog, "a1"), path(catalog, "b1")}
    assert marked_text(catalog, marks, None) == "2 marked · 2.0 GiB"
    assert marked_text(catalog, marks, 0.1) == "2 marked · 2.0 GiB · $0.20/mo"
    assert marked_text(catalog, set(), 0.1) == ""
    assert marked_text(None, marks, None) == ""


def test_a_keep_policy_starts_on_the_marked_runs_else_the_highlighted_one_else_all() -> None:
    catalog = two_runs()
    marked = Selection(frozenset({path(catalog, "a1"), path(catalog, "b1")}), "run-a")
    runs, label = policy_scope(marked, catalog)
    assert [run.run_id for run in runs] == ["run-a", "run-b"]
    assert label == "the 2 runs holding the 2 marked checkpoints"
    runs, label = policy_scope(Selection(frozenset({path(catalog, "a2")})), catalog)
    assert ([run.run_id for run in runs], label) == (
        ["run-a"],
        "the run holding the 1 marked checkpoint",
    )
    runs, label = policy_scope(Selection(highlighted_run="run-b"), catalog)
    assert ([run.run_id for run in runs], label) == (["run-b"], "run-b")
    runs, label = policy_scope(Selection(), catalog)
    assert (len(runs), label) == (2, "all 2 runs")
