"""Fixtures shared by the whole suite: a store on a fixed clock and a real server over it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from ckpt_tui.clock import FixedClock
from ckpt_tui.server import create_app
from ckpt_tui.store import Store
from tests.demo_fixture import ServedDemo, served_demo
from tests.faulty_app import FaultyApp
from tests.support.live_server import run_server

T0 = datetime(2025, 1, 1, 12, 0, tzinfo=timezone.utc)


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The session log file goes to a temp folder, never to the user's own state folder."""
    folder = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(folder))
    return folder


@pytest.fixture
def clock() -> FixedClock:
    """A clock standing at T0; tests move it with `advance`."""
    return FixedClock(T0)


@pytest.fixture
def store(tmp_path: Path, clock: FixedClock) -> Iterator[Store]:
    """An empty store in `tmp_path/store`, closed after the test."""
    opened = Store.open(tmp_path / "store", clock)
    yield opened
    opened.close()


@pytest.fixture
def server_url(store: Store) -> Iterator[str]:
    """Base URL of a real uvicorn server over `store`, without auth or background sweep."""
    with run_server(create_app(store, sweep_interval=None)) as url:
        yield url


@pytest.fixture
def demo(tmp_path: Path, clock: FixedClock) -> Iterator[ServedDemo]:
    """The demo built at the fixed clock's time, served by a real server."""
    with served_demo(tmp_path / "demo", clock) as served:
        yield served


@pytest.fixture
def faulty_demo(tmp_path: Path, clock: FixedClock) -> Iterator[tuple[ServedDemo, FaultyApp]]:
    """The demo served through a FaultyApp, which the test configures."""
    holder: list[FaultyApp] = []

    def wrap(app: Any) -> FaultyApp:
        holder.append(FaultyApp(app))
        return holder[0]

    with served_demo(tmp_path / "demo", clock, wrap=wrap) as served:
        yield served, holder[0]
