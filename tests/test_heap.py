"""The app's garbage-collector policy: paused while loading, frozen after, off unless asked."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator

import pytest

from ckpt_tui import heap


@pytest.fixture
def managed() -> Iterator[None]:
    """The policy on for one test; Python's defaults (and no frozen objects) afterwards."""
    before = gc.get_threshold()
    heap.manage_heap()
    try:
        yield
    finally:
        heap.manage_heap(False)
        gc.unfreeze()
        gc.enable()
    assert gc.get_threshold() == before


def test_unmanaged_the_collector_is_left_alone() -> None:
    assert not heap.is_managed()
    with heap.collector_paused():
        assert gc.isenabled()
    frozen = gc.get_freeze_count()
    heap.keep_long_lived()
    assert gc.get_freeze_count() == frozen
    assert not heap.collect_if_due(idle=True)


def test_managed_young_collections_are_rarer(managed: None) -> None:
    assert gc.get_threshold()[0] == heap.YOUNG_THRESHOLD


def test_paused_blocks_nest_and_restore_the_collector(managed: None) -> None:
    with heap.collector_paused():
        assert not gc.isenabled()
        with heap.collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block still holds it
    assert gc.isenabled()


def test_a_pause_restores_the_collector_after_an_error(managed: None) -> None:
    with pytest.raises(RuntimeError), heap.collector_paused():
        raise RuntimeError("a failed load")
    assert gc.isenabled()


def test_a_collector_switched_off_by_the_caller_stays_off(managed: None) -> None:
    gc.disable()
    with heap.collector_paused():
        pass
    assert not gc.isenabled()


def test_keep_long_lived_freezes_what_is_alive(managed: None) -> None:
    keep = [[index] for index in range(1_000)]  # 1,001 tracked containers
    heap.keep_long_lived()
    assert gc.get_freeze_count() >= len(keep)


class Node:
    """An object that can sit in a reference cycle (and be weakly referenced)."""

    def __init__(self) -> None:
        self.me: Node | None = None


def test_frozen_garbage_is_freed_once_a_full_collection_is_due(
    managed: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    node = Node()
    node.me = node  # a cycle: only the cyclic collector can free it
    alive = weakref.ref(node)
    heap.keep_long_lived()
    del node
    gc.collect()
    assert alive() is not None  # frozen: ordinary collections never look at it
    assert not heap.collect_if_due(idle=True)  # not due yet
    monkeypatch.setattr(heap, "COLLECT_EVERY", 0.0)
    assert not heap.collect_if_due(idle=False)  # the user is typing: the full pass waits
    assert alive() is not None
    assert heap.collect_if_due(idle=True)
    assert alive() is None
    assert gc.get_freeze_count() > 0  # frozen again


def test_the_graveyard_keeps_retired_items_until_they_are_buried() -> None:
    graveyard = heap.Graveyard()
    item = Node()
    alive = weakref.ref(item)
    graveyard.retire(item)
    del item
    assert alive() is not None
    buried = threading.Thread(target=graveyard.bury)  # where the app frees them
    buried.start()
    buried.join()
    assert alive() is None
    assert graveyard.bury() == 0
