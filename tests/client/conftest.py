"""Fixtures of the client tests: a seeded store, and the server behind a fault-injecting app."""

from __future__ import annotations

import pytest

from ckpt_tui.server import create_app
from ckpt_tui.store import Store
from tests.support.faulty_app import FaultyApp
from tests.support.seed import seed_store


@pytest.fixture
def made(store: Store) -> list[str]:
    """12 checkpoints over 3 runs, as tinker paths."""
    return [f"tinker://{run}/{cid}" for run, cid in seed_store(store, runs=3, per_run=4)]


@pytest.fixture
def faulty(store: Store) -> FaultyApp:
    """The real server app over `store`, behind a FaultyApp the test configures."""
    return FaultyApp(create_app(store, sweep_interval=None))
