"""The demo, built at a fixed time and served by a real server: known data for many tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ckpt_tui.catalog import CheckpointRow
from ckpt_tui.demo import DemoPaths, build_demo
from ckpt_tui.server import create_app
from ckpt_tui.store import NotFoundError, Store
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support.live_server import run_server


@dataclass
class ServedDemo:
    """A demo store served over loopback, and the store itself for checking server state."""

    paths: DemoPaths
    url: str
    store: Store
    clock: FixedClock

    def holds(self, row: CheckpointRow) -> bool:
        """Whether the server still stores the checkpoint of `row`."""
        try:
            self.store.get_checkpoint(row.run_id, row.checkpoint_id)
        except NotFoundError:
            return False
        return True


@contextmanager
def served_demo(
    root: Path,
    clock: FixedClock,
    seed: int = 7,
    wrap: Callable[[Any], Any] | None = None,
    **app_options: Any,
) -> Iterator[ServedDemo]:
    """Build the demo under `root` and serve it; `wrap` may put e.g. a FaultyApp in front;
    `app_options` go to `create_app` (e.g. `api_key`, `jwt`)."""
    paths = build_demo(root, seed, clock)
    store = Store.open(paths.store, clock)
    app = create_app(store, sweep_interval=None, **app_options)
    try:
        with run_server(wrap(app) if wrap else app) as url:
            yield ServedDemo(paths, url, store, clock)
    finally:
        store.close()
