"""The storage billing endpoint on both sides: `ckpt-tui serve --storage-rate R` answers it
from its store (a 404 without a rate), the client reads it, and a rate the user set wins."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

import ckpt_tui
from ckpt_tui.backends import Backend, Connection
from ckpt_tui.backends.load import resolve_rate
from ckpt_tui.cli import main
from ckpt_tui.client import CheckpointClient, Endpoint
from ckpt_tui.server import create_app
from ckpt_tui.store import Store
from tests.support.faulty_app import FaultyApp
from tests.support.live_server import run_server

BILLING = "/api/v1/billing/usage/checkpoints/current"
REPO = Path(ckpt_tui.__file__).resolve().parent.parent


def fill(store: Store) -> int:
    """Two runs in two projects; returns the bytes stored."""
    store.create_run("run-a", "Qwen/Qwen3-8B", lora_rank=8, extra={"project_id": "alpha"})
    store.create_run("run-b", "Qwen/Qwen3-8B", lora_rank=8, extra={"project_id": "beta"})
    store.add_checkpoint("run-a", "weights/0001", {"a.bin": b"x" * 3000})
    store.add_checkpoint("run-a", "weights/0002", {"a.bin": b"x" * 1000})
    store.add_checkpoint("run-b", "weights/0001", {"a.bin": b"x" * 500})
    return 4500


def test_the_server_answers_usage_at_its_rate(store: Store) -> None:
    size = fill(store)
    with run_server(create_app(store, sweep_interval=None, storage_rate=0.5)) as url:
        answer = httpx.get(url + BILLING, timeout=10).json()
        alpha = httpx.get(url + BILLING, params={"project_id": "alpha"}, timeout=10).json()
        empty = httpx.get(url + BILLING, params={"project_id": " "}, timeout=10)
    assert answer["effective_rate_usd_per_gigabyte_month"] == 0.5
    [row] = answer["data"]
    assert (row["checkpoint_count"], row["size_bytes"]) == (3, size)
    assert row["size_gigabytes"] == pytest.approx(size / 2**30)
    assert row["estimated_monthly_cost_usd"] == pytest.approx(size / 2**30 * 0.5)
    assert {"project_id", "org_user_urn", "user_email", "user_name"} <= set(row)
    assert (alpha["data"][0]["checkpoint_count"], alpha["data"][0]["project_id"]) == (2, "alpha")
    assert empty.status_code == 400


def test_without_a_rate_it_is_a_clear_404(store: Store) -> None:
    with run_server(create_app(store, sweep_interval=None)) as url:
        response = httpx.get(url + BILLING, timeout=10)
    assert response.status_code == 404
    assert response.headers["x-should-retry"] == "false"
    assert "--storage-rate" in response.json()["detail"]


def test_a_rate_must_be_a_number_of_at_least_zero(store: Store) -> None:
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="storage_rate"):
            create_app(store, sweep_interval=None, storage_rate=bad)


async def test_the_client_reads_the_rate_and_a_user_rate_wins(store: Store) -> None:
    fill(store)
    app = FaultyApp(create_app(store, api_key="tml-k", sweep_interval=None, storage_rate=0.07))
    with run_server(app) as url:
        async with CheckpointClient(Endpoint.remote(url, "tml-k")) as client:
            usage = await client.storage_usage()
            assert usage is not None and usage.effective_rate_usd_per_gigabyte_month == 0.07
            assert usage.data[0].checkpoint_count == 3
            from_server = Connection(Backend("box", "url", url), client)
            assert await resolve_rate(from_server) == (0.07, "billing endpoint")
            asked = app.count("GET")
            mine = Connection(Backend("box", "url", url, storage_rate=0.01), client)
            assert await resolve_rate(mine) == (0.01, "set by you")
            assert app.count("GET") == asked  # the user's rate needs no question


async def test_a_server_without_billing_means_no_rate(server_url: str) -> None:
    async with CheckpointClient(Endpoint.remote(server_url)) as client:
        assert await client.storage_usage() is None
        connection = Connection(Backend("box", "url", server_url), client)
        assert await resolve_rate(connection) == (None, "default")


def test_serve_storage_rate_answers_billing(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "ckpt_tui", "serve", str(tmp_path / "store"), "--port", "0"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(
        [*command, "--storage-rate", "0.04"], cwd=REPO, env=env, stdout=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        try:
            url = line.split("serving ", 1)[1].split(" ", 1)[0]
            answer = httpx.get(url + BILLING, timeout=10).json()
        finally:
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=20)
    assert code == 0 and "billing at $0.04 per GiB-month" in line
    assert answer["effective_rate_usd_per_gigabyte_month"] == 0.04
    assert answer["data"][0]["checkpoint_count"] == 0


def test_serve_refuses_a_bad_rate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", str(tmp_path / "s"), "--port", "0", "--storage-rate", "cheap"]) == 2
    assert "--storage-rate must be a number" in capsys.readouterr().err
    assert main(["--storage-rate", "-1", "serve", str(tmp_path / "s"), "--port", "0"]) == 2
    assert "at least 0" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()
