"""`ckpt-tui serve` runs on uvloop (issue 26): its sockets, tasks and the wake-ups from the
store's thread cost less CPU per DELETE there than on asyncio's own loop."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from ckpt_tui.store import Store
from tests.support.seed import seed_store


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/PID/maps")
def test_serve_answers_on_uvloop(tmp_path: Path) -> None:
    root = tmp_path / "store"
    with Store.open(root) as store:
        (run_id, checkpoint_id), (_, other_id) = seed_store(store, runs=1, per_run=2)
    argv = [sys.executable, "-m", "ckpt_tui", "serve", str(root), "--port", "0", "--api-key", ""]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True) as server:
        try:
            assert server.stdout is not None
            url = server.stdout.readline().split("serving ", 1)[1].split(" ", 1)[0]
            path = f"{url}/api/v1/training_runs/{run_id}/checkpoints/{checkpoint_id}"
            assert httpx.delete(path, timeout=60).status_code == 204
            libraries = Path(f"/proc/{server.pid}/maps").read_text()
        finally:
            server.terminate()
    assert "/uvloop/" in libraries
    with Store.open(root) as store:
        assert [c.checkpoint_id for c in store.list_run_checkpoints(run_id)] == [other_id]
