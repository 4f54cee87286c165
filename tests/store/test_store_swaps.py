"""Deletes cannot be redirected by a folder swapped for a symbolic link while they run.

A thread swaps the run folder (and in a second test the segment folder) with a link to a folder
outside the store that mirrors its layout, with Linux `renameat2(RENAME_EXCHANGE)`, as fast as it
can while the store deletes. Whatever the interleaving, the outside folder must stay whole; a
delete may succeed or fail.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from ckpt_tui.store import Store, StoreError, trash
from ckpt_tui.store.layout import Layout

DELETES = 500
AT_FDCWD = -100
RENAME_EXCHANGE = 2

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="renameat2 is Linux")


def exchange_function() -> Callable[[int, bytes, int, bytes, int], int]:
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if not hasattr(libc, "renameat2"):
        pytest.skip("this libc has no renameat2")
    function = libc.renameat2
    name = ctypes.c_char_p
    function.argtypes = [ctypes.c_int, name, ctypes.c_int, name, ctypes.c_uint]
    function.restype = ctypes.c_int
    exchange: Callable[[int, bytes, int, bytes, int], int] = function
    return exchange


@contextmanager
def swapping(real: Path, link: Path) -> Iterator[list[int]]:
    """Exchange `real` and `link` over and over in a thread; yields the swap counter."""
    renameat2 = exchange_function()
    a, b = os.fsencode(real), os.fsencode(link)
    stop = threading.Event()
    swaps = [0]

    def loop() -> None:
        while not stop.is_set():
            if renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0:
                swaps[0] += 1

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield swaps
    finally:
        stop.set()
        thread.join()
        if swaps[0] % 2:  # leave the real folder where it belongs
            renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)


def names(count: int) -> list[str]:
    return [f"{i:04d}" for i in range(count)]


def canary(outside: Path) -> None:
    """A copy of the run's layout outside the store: what a redirected delete would hit."""
    for name in names(DELETES):
        folder = outside / "weights" / name
        folder.mkdir(parents=True)
        (folder / "canary.txt").write_text("keep me")


def canary_intact(outside: Path) -> bool:
    return all(
        (outside / "weights" / name / "canary.txt").read_text() == "keep me"
        for name in names(DELETES)
    )


def delete_all_while_swapping(tmp_path: Path, swapped: str) -> tuple[int, int]:
    """(delete attempts, swaps) through the store, `swapped` ("run" or "segment") exchanged."""
    outside = tmp_path / "outside"
    canary(outside)
    with Store.open(tmp_path / "store") as store:
        store.create_run("r", "base")
        for name in names(DELETES):
            store.add_checkpoint("r", f"weights/{name}", {"f.bin": b"x"})
        real, link = swap_pair(store.root, swapped, outside)
        attempts = 0
        with swapping(real, link) as swaps:
            for name in names(DELETES):
                attempts += 1
                # refused, not found or failing while swapped: fine, as long as nothing leaked
                with suppress(StoreError, OSError):
                    store.delete_checkpoint("r", f"weights/{name}")
        return attempts, swaps[0]


def swap_pair(root: Path, swapped: str, outside: Path) -> tuple[Path, Path]:
    """The folder to swap and a link beside it (same parent) to its copy outside the store."""
    run_dir = root / "runs" / "r"
    real = run_dir if swapped == "run" else run_dir / "weights"
    link = real.parent / ".swap-link"
    link.symlink_to(outside if swapped == "run" else outside / "weights")
    return real, link


@pytest.mark.parametrize("swapped", ["run", "segment"])
def test_a_swapped_folder_never_redirects_a_store_delete(tmp_path: Path, swapped: str) -> None:
    attempts, swaps = delete_all_while_swapping(tmp_path, swapped)
    assert attempts >= 300 and swaps > 0
    assert canary_intact(tmp_path / "outside")


@pytest.mark.parametrize("swapped", ["run", "segment"])
def test_a_swapped_folder_never_redirects_the_delete_steps(tmp_path: Path, swapped: str) -> None:
    """The trash's own steps, without the store's rescans in between (which mostly see the
    swap first and answer 'not found'): prepare, move, purge for each checkpoint folder."""
    outside = tmp_path / "outside"
    canary(outside)
    layout = Layout(tmp_path / "store")
    for name in names(DELETES):
        (layout.runs / "r" / "weights" / name).mkdir(parents=True)
    real, link = swap_pair(layout.root, swapped, outside)
    moved = 0
    with swapping(real, link) as swaps:
        for name in names(DELETES):
            path = layout.checkpoint_dir("r", f"weights/{name}")
            slot = trash.new_slot(layout)
            intent = trash.write_intent(layout, [(slot, "r", f"weights/{name}", path)])
            try:
                trash.move(layout, path, slot)
                moved += 1
            except (OSError, StoreError):
                pass
            trash.drop_intent(layout, intent)
            trash.purge(layout, slot)
    assert swaps[0] > 0 and moved <= DELETES
    assert canary_intact(outside)
