"""The filter over the browse screen's plain data (`tui/view/state`): which runs it keeps,
and that its indexes stay out of the garbage collector's way."""

from __future__ import annotations

import gc
from dataclasses import replace

from ckpt_tui.api_types import TrainingRun
from ckpt_tui.backends import Backend, BackendState, Fleet
from ckpt_tui.backends.fleet_view import FleetCatalog
from ckpt_tui.catalog.query import search_index
from ckpt_tui.catalog.row_cache import RowCache
from ckpt_tui.catalog.snapshot import Snapshot
from ckpt_tui.training.logdirs import LogDirDiscovery
from ckpt_tui.tui.view.state import BrowseState, SortedRows, visible_runs
from tests.support.dialogs import NOW, GiB, ckpt


def backend(name: str, runs: dict[str, list[str]]) -> BackendState:
    """A backend `name` holding each run of `runs` with its checkpoints' names."""
    checkpoints = [
        ckpt(checkpoint, 5, size=GiB, run=run)
        for run, names in runs.items()
        for checkpoint in names
    ]
    trainings = [TrainingRun(run, "Qwen/Qwen3-8B", "me", True, NOW) for run in runs]
    snapshot = Snapshot.join(trainings, checkpoints, LogDirDiscovery([], []), cache=RowCache(name))
    return BackendState(Backend(name, "local", f"/data/{name}"), snapshot, complete=True)


def kept(
    catalog: FleetCatalog, text: str, cache: SortedRows | None = None
) -> list[tuple[str, str]]:
    runs = visible_runs(catalog, replace(BrowseState(), filter_text=text), cache)
    return [(run.backend, run.run_id) for run in runs]


def test_a_filter_keeps_the_runs_whose_name_backend_or_some_checkpoint_matches() -> None:
    fleet = Fleet(
        (
            backend("alpha", {"run-a": ["step-1", "step-2"], "run-b": ["final"], "empty": []}),
            backend("beta", {"run-c": ["step-3", "Final-Z"]}),
        )
    )
    catalog = FleetCatalog(fleet)
    everything = [("alpha", "run-a"), ("alpha", "run-b"), ("alpha", "empty"), ("beta", "run-c")]
    assert kept(catalog, "") == everything
    assert kept(catalog, "  ") == everything  # only spaces: every run, as every row matches
    assert kept(catalog, "step") == [("alpha", "run-a"), ("beta", "run-c")]
    assert kept(catalog, "FINAL") == [("alpha", "run-b"), ("beta", "run-c")]
    assert kept(catalog, "step-2") == [("alpha", "run-a")]  # found on a run's second row
    assert kept(catalog, "empt") == [("alpha", "empty")]  # by name, with no checkpoint at all
    assert kept(catalog, "beta") == [("beta", "run-c")]  # by the backend's name
    assert kept(catalog, "alpha\x00run-b\ntinker") == [("alpha", "run-b")]  # name and row
    assert kept(catalog, "nothing like it") == []


def test_typing_narrows_the_runs_searched_and_a_deletion_or_a_new_catalog_searches_all() -> None:
    runs = {"run-a": ["step-1", "step-2"], "run-b": ["final"], "other": ["step-9"]}
    catalog = FleetCatalog(Fleet((backend("alpha", runs),)))
    cache = SortedRows()  # (sorted: the order of runs is not what is checked here)
    assert sorted(kept(catalog, "s", cache)) == [
        ("alpha", "other"),
        ("alpha", "run-a"),
        ("alpha", "run-b"),
    ]
    assert sorted(kept(catalog, "st", cache)) == [("alpha", "other"), ("alpha", "run-a")]
    assert sorted(kept(catalog, "step-2", cache)) == [("alpha", "run-a")]
    assert sorted(kept(catalog, "step-", cache)) == [
        ("alpha", "other"),
        ("alpha", "run-a"),
    ]  # backspace
    assert sorted(kept(catalog, "fin", cache)) == [("alpha", "run-b")]  # not a narrowing of "step-"
    fresh = FleetCatalog(Fleet((backend("alpha", {"run-c": ["final-2"], **runs}),)))
    assert sorted(kept(fresh, "final", cache)) == [("alpha", "run-b"), ("alpha", "run-c")]


def test_a_backend_name_alone_keeps_nothing_when_one_backend_is_open() -> None:
    catalog = FleetCatalog(Fleet((backend("alpha", {"run-a": ["step-1"]}),)))
    assert kept(catalog, "alpha") == []
    assert kept(catalog, "step-1") == [("alpha", "run-a")]


def test_an_index_drops_out_of_the_garbage_collector_and_shares_its_rows() -> None:
    fleet = Fleet((backend("alpha", {"run-a": ["step-1", "step-2"], "run-b": ["final"]}),))
    index = search_index(FleetCatalog(fleet).rows)
    index.haystacks()
    gc.collect()
    # A full collection walks every tracked container: the dozen indexes of 100,000 rows a
    # browse screen keeps would be walked in the middle of a key press.
    assert not gc.is_tracked(index.rows) and not gc.is_tracked(index.haystacks())
    assert index.matches("tinker://") is index.rows  # every row matches: no copy
    assert [row.name for row in index.matches("tinker://run-a")] == ["step-1", "step-2"]
    assert [row.name for row in index.matches("tinker://run-a/weights/step-2")] == ["step-2"]
    assert index.filter("") == list(index.rows)


def test_a_backspace_finds_the_shorter_texts_matches_kept() -> None:
    fleet = Fleet((backend("alpha", {"run-a": ["step-1", "step-2"], "run-b": ["final"]}),))
    index = search_index(FleetCatalog(fleet).rows)
    typed = index.matches("tinker://run-a")
    assert [row.name for row in index.matches("tinker://run-a/weights/step-2")] == ["step-2"]
    # Backspacing back to "tinker://run-a": its matches as they were kept, not a new search.
    assert index.matches("tinker://run-a") is typed
    assert [row.name for row in typed] == ["step-1", "step-2"]
    assert [row.name for row in index.matches("final")] == ["final"]  # another text: all rows
    assert [row.name for row in index.matches("tinker://run-a/")] == ["step-1", "step-2"]
