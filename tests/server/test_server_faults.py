"""The background sweep, and failures turned into JSON instead of tracebacks."""

from __future__ import annotations

import logging
import time
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from ckpt_tui.server import create_app
from ckpt_tui.server.error_responses import response_for
from ckpt_tui.server.sweeper import sweep_once
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support.live_server import run_server
from tests.support.seed import seed_store

WAIT_LIMIT = 15.0  # generous: this waits for an event, it does not time anything


def test_background_sweep_removes_expired_files(store: Store, clock: FixedClock) -> None:
    seed_store(store, runs=1, per_run=2)
    store.set_ttl("run-000", "weights/0000", 3600)
    clock.advance(timedelta(hours=2))
    with run_server(create_app(store, sweep_interval=0.02)):
        deadline = time.monotonic() + WAIT_LIMIT
        while len(list(store.root.rglob("adapter.bin"))) > 1 and time.monotonic() < deadline:
            time.sleep(0.02)
    assert len(list(store.root.rglob("adapter.bin"))) == 1
    assert [c.checkpoint_id for c in store.list_run_checkpoints("run-000")] == ["weights/0001"]


async def test_a_failing_sweep_is_logged_not_raised(
    tmp_path: Path, clock: FixedClock, caplog: pytest.LogCaptureFixture
) -> None:
    store = Store.open(tmp_path / "closed", clock)
    store.close()  # a closed store fails every call: a real fault, no mock
    with caplog.at_level(logging.ERROR, logger="ckpt_tui.server.sweep"):
        assert await sweep_once(store) == []
    assert "sweeping expired checkpoints failed" in caplog.text


def test_a_closed_store_is_json_503_with_retry_after(tmp_path: Path, clock: FixedClock) -> None:
    store = Store.open(tmp_path / "closed", clock)
    with run_server(create_app(store, sweep_interval=None)) as url:
        assert httpx.get(f"{url}/api/v1/healthz").status_code == 200
        store.close()
        answer = httpx.get(f"{url}/api/v1/checkpoints")
        assert answer.status_code == 503
        assert answer.headers["content-type"] == "application/json"
        assert "is closed" in answer.json()["detail"]
        assert float(answer.headers["retry-after"]) > 0
        assert "x-should-retry" not in answer.headers  # a later try may well work
        assert httpx.get(f"{url}/api/v1/healthz").json()["status"] == "ok"


def test_unexpected_errors_are_json_500() -> None:
    answer = response_for(RuntimeError("a bug"))
    assert answer.status_code == 500
    assert answer.headers["content-type"] == "application/json"
    assert b"internal server error: RuntimeError: a bug" in answer.body


@pytest.mark.parametrize("interval", [0.0, -1.0])
def test_bad_sweep_interval_is_refused(store: Store, interval: float) -> None:
    with pytest.raises(ValueError, match="sweep_interval"):
        create_app(store, sweep_interval=interval)
