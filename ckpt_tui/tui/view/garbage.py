"""Keeping Python's full garbage collections out of key presses once a load is shown.

A full collection walks every object the collector tracks. With 100,000 checkpoints shown,
the app holds about 100,000 of them (Textual's and the libraries' own objects, the catalog's
lists, the sort orders' indexes): one full collection took about 100 ms of CPU on this
2-core machine (0.3-1.5 s at load 10-19), and Python starts one whenever enough objects have
survived the young collections, which is often in the middle of a filter key press.

`gc.freeze()` (the standard library's tool for exactly this: a long-lived heap the collector
need not walk again) moves every tracked object to a permanent generation that collections
skip. Freezing right after a load is shown, when the screen waits for keys, leaves the
collections during a key press only the objects made since: a few milliseconds.

Objects frozen are still freed when their last reference goes (a replaced catalog is, since
its rows hold no reference cycles); only garbage in reference cycles among frozen objects
waits. So each settle first unfreezes and collects everything, then freezes what is left:
nothing waits longer than the next load, and what is frozen is what was alive.
"""

from __future__ import annotations

import gc


def settle_garbage() -> None:
    """Collect every generation, then freeze what survives (see the module's docstring).

    One full collection now, at a moment of the caller's choosing (after a load, off the key
    presses), instead of one every few key presses while typing.
    """
    gc.unfreeze()
    gc.collect()
    gc.freeze()
