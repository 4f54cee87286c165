"""`ckpt-tui serve` killed (SIGKILL) during a bulk delete (issue 26): nothing outside the set
asked for is lost, every delete answered is done, and the rest of the set is whole or gone.

Deletes are done in batches and their files removed after the answer (`server/deletes.py`,
`Deleter.purge_later`): the kill comes after some answers with many more deletes in flight
or unsent, wherever each one is then; the assertions hold for any moment of the kill.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import httpx

from ckpt_tui.store import Store
from tests.support.seed import seed_store

RUNS, PER_RUN = 4, 60
IN_FLIGHT = 32
KILL_AFTER = 40
"""Answers before the kill: the set asked for is 150, so most are in flight or unsent."""


def files_of(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in (root / "runs").rglob("*")
        if path.is_file() and path.name != "run.json"
    }


def url_of(run_id: str, checkpoint_id: str) -> str:
    return f"/api/v1/training_runs/{run_id}/checkpoints/{checkpoint_id}"


async def delete_until_killed(
    url: str, asked: list[tuple[str, str]], server: subprocess.Popen[str]
) -> list[tuple[str, str]]:
    """DELETE each of `asked`, `IN_FLIGHT` at a time; SIGKILL the server after `KILL_AFTER`
    answers. Returns the deletes answered 204 (any other answer fails the test)."""
    answered: list[tuple[str, str]] = []
    gate = asyncio.Semaphore(IN_FLIGHT)
    limits = httpx.Limits(max_connections=IN_FLIGHT)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:

        async def one(pair: tuple[str, str]) -> None:
            async with gate:
                if server.poll() is not None:
                    return  # killed: never sent
                try:
                    answer = await client.delete(url_of(*pair))
                except httpx.TransportError:
                    return  # cut by the kill: no answer
            assert answer.status_code == 204, answer.text
            answered.append(pair)
            if len(answered) == KILL_AFTER:
                server.kill()

        await asyncio.gather(*(one(pair) for pair in asked))
    return answered


def test_a_server_killed_during_a_bulk_delete_loses_nothing_else(tmp_path: Path) -> None:
    root = tmp_path / "store"
    with Store.open(root) as store:
        made = seed_store(store, runs=RUNS, per_run=PER_RUN)
    asked = [pair for pair in made if pair[0] != "run-003"][:150]
    kept = [pair for pair in made if pair not in asked]
    before = files_of(root)
    argv = [sys.executable, "-m", "ckpt_tui", "serve", str(root), "--port", "0", "--api-key", ""]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True) as server:
        try:
            assert server.stdout is not None
            line = server.stdout.readline()
            url = line.split("serving ", 1)[1].split(" ", 1)[0]
            answered = asyncio.run(delete_until_killed(url, asked, server))
        finally:
            server.kill()
            server.wait(60)
    assert len(answered) >= KILL_AFTER
    with Store.open(root) as reopened:  # finishes what the kill interrupted
        checkpoints = reopened.list_checkpoints(0, 1000)[0]
    listed = {tuple(c.tinker_path.removeprefix("tinker://").split("/", 1)) for c in checkpoints}
    after = files_of(root)
    assert set(kept) <= listed  # nothing outside the set asked for is lost ...
    for run_id, checkpoint_id in kept:
        name = f"runs/{run_id}/{checkpoint_id}/adapter.bin"
        assert after[name] == before[name]  # ... nor changed
    assert not set(answered) & listed  # every delete answered is done
    for pair in set(asked) - set(answered):  # the others: whole, or gone with their files
        name = f"runs/{pair[0]}/{pair[1]}/adapter.bin"
        assert (pair in listed and after.get(name) == before[name]) or (
            pair not in listed and name not in after
        )
    assert listed - set(made) == set()
    assert list((root / ".ckpt-tui" / "trash").iterdir()) == []
