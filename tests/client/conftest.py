"""Fixtures of the client tests: a client of the plain server, a seeded store, and the server
behind a fault-injecting app (modules with a server of their own define their own `client`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from ckpt_tui.client import CheckpointClient, Endpoint, RetryPolicy
from ckpt_tui.server import create_app
from ckpt_tui.store import Store
from tests.support.faulty_app import FaultyApp, RecordedSleeps
from tests.support.seed import seed_store


@pytest.fixture
def made(store: Store) -> list[str]:
    """12 checkpoints over 3 runs, as tinker paths."""
    return [f"tinker://{run}/{cid}" for run, cid in seed_store(store, runs=3, per_run=4)]


@pytest.fixture
def faulty(store: Store) -> FaultyApp:
    """The real server app over `store`, behind a FaultyApp the test configures."""
    return FaultyApp(create_app(store, sweep_interval=None))


@pytest.fixture
async def client(server_url: str) -> AsyncIterator[CheckpointClient]:
    """A client of the real server over `store`; a retry records its sleep instead of waiting."""
    policy = RetryPolicy(sleep=RecordedSleeps())
    async with CheckpointClient(Endpoint.remote(server_url), retry=policy) as opened:
        yield opened
