"""Backends load side by side, each with its own client: one that hangs never holds back the
others, and one where nothing listens is an error entry, not a failed load."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ckpt_tui.backends import Backend, Connection, Fleet
from ckpt_tui.backends.load import load_fleet
from ckpt_tui.catalog.snapshot import LogDirSettings
from ckpt_tui.client import CheckpointClient, Endpoint
from ckpt_tui.server import create_app
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support.faulty_app import FaultyApp
from tests.support.live_server import bind_loopback_socket, run_server
from tests.support.seed import seed_backend

NO_LOGS = LogDirSettings((), runs_root=None)


def connection(name: str, url: str) -> Connection:
    return Connection(Backend(name, "url", url), CheckpointClient(Endpoint.remote(url)))


async def test_a_hanging_backend_holds_back_no_other(tmp_path: Path, clock: FixedClock) -> None:
    stores = [Store.open(tmp_path / name, clock) for name in ("fast", "slow")]
    for store, name in zip(stores, ("fast", "slow"), strict=True):
        seed_backend(store, name, per_run=2)
    slow = FaultyApp(create_app(stores[1], sweep_interval=None))
    gate = slow.hold("GET")
    nothing = bind_loopback_socket()  # bound, never listening: connections are refused
    dead_url = f"http://127.0.0.1:{nothing.getsockname()[1]}"
    seen: list[Fleet] = []
    fast_in = asyncio.Event()

    def on_change(fleet: Fleet) -> None:
        seen.append(fleet)
        if fleet.state("fast").complete:
            fast_in.set()

    try:
        fast_app = create_app(stores[0], sweep_interval=None)
        with run_server(fast_app) as fast_url, run_server(slow) as slow_url:
            connections = [
                connection("slow", slow_url),
                connection("dead", dead_url),
                connection("fast", fast_url),
            ]
            loading = asyncio.ensure_future(load_fleet(connections, NO_LOGS, on_change))
            await asyncio.wait_for(fast_in.wait(), timeout=60)
            while_held = seen[-1]
            assert while_held.state("slow").loading  # still held, and nothing waits for it
            assert {run.run_id for run in while_held.runs()} == {"fast-run-0", "fast-run-1"}
            gate.set()
            fleet = await asyncio.wait_for(loading, timeout=60)
            for c in connections:
                await c.client.aclose()
    finally:
        gate.set()  # a failed check must not leave the server waiting on the held request
        nothing.close()
        for store in stores:
            store.close()
    assert fleet.names == ("slow", "dead", "fast")  # the given order, whatever finished first
    assert fleet.state("slow").complete and fleet.state("fast").complete
    dead = fleet.state("dead")
    assert dead.snapshot is None and dead.error is not None and "could not connect" in dead.error
    assert "SSH tunnel" in dead.error
    assert {row.backend for row in fleet.rows()} == {"slow", "fast"}
    # no command that loads a fleet shows a latency, so none is measured (one round trip)
    assert all(state.latency is None for state in fleet.states)
