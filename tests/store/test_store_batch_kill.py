"""kill -9 of a process half-way through a batch of deletes (`Store.delete_checkpoints`):
the next open finishes the batch from its intent record, loses nothing outside it, and leaves
an empty trash."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ckpt_tui.store import Store
from tests.support.seed import seed_store

ROOT = Path(__file__).resolve().parents[2]
GUARD = 120.0
"""Seconds the child may take to reach its stop (a hang guard, not a timing bet)."""


def files_of(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in (root / "runs").rglob("*")
        if path.is_file() and path.name != "run.json"
    }


def stopped_child(root: Path, step: str, count: int, asked: list[tuple[str, str]]) -> None:
    """Run the child until it stops at the `count`-th `step`, then SIGKILL it."""
    argv = [sys.executable, "-m", "tests.support.store_delete_child", str(root), step, str(count)]
    argv += [f"{run_id}/{checkpoint_id}" for run_id, checkpoint_id in asked]
    with subprocess.Popen(
        argv, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as process:
        try:
            assert process.stdout is not None
            said = [line.strip() for line in iter(process.stdout.readline, "stopped\n")]
            assert "done" not in " ".join(said), said
            os.kill(process.pid, signal.SIGKILL)
            assert process.wait(GUARD) == -signal.SIGKILL
        finally:
            if process.poll() is None:
                os.kill(process.pid, signal.SIGKILL)
                process.wait(GUARD)
    assert said.count(step) == count, said


@pytest.mark.parametrize(
    ("step", "count"),
    [("prepare", 1), ("move", 1), ("move", 5), ("move", 8), ("commit", 1)],
)
def test_a_batch_killed_half_way_is_finished_at_the_next_open(
    tmp_path: Path, step: str, count: int
) -> None:
    root = tmp_path / "store"
    with Store.open(root) as store:
        made = seed_store(store, runs=3, per_run=4)
    asked = [pair for pair in made if pair[0] != "run-002"][:8]
    kept = [pair for pair in made if pair not in asked]
    before = files_of(root)
    stopped_child(root, step, count, asked)
    with Store.open(root) as reopened:
        listed = {(c.run_id, c.checkpoint_id) for c in reopened.list_checkpoints(limit=1000)[0]}
    assert listed == set(kept)  # the whole batch is done, nothing else is touched
    after = files_of(root)
    assert after == {name: data for name, data in before.items() if name in after}
    assert {name.split("/")[1] for name in after} == {pair[0] for pair in kept}
    assert len(after) == len(kept)
    assert list((root / ".ckpt-tui" / "trash").iterdir()) == []
