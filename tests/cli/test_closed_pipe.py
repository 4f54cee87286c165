"""A reader that goes away ends a command quietly: `ckpt-tui ls | head -1` prints the first line
and no BrokenPipeError traceback, and the command exits 141 (as a shell reports `ls` killed by
SIGPIPE), for every command that prints."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ckpt_tui.store import Store
from tests.support.seed import seed_store

GUARD = 120.0
"""Seconds a command may take before the test calls it a hang."""
CLOSED_PIPE_EXIT = 141


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "ckpt_tui", *args]


def run_into_closed_pipe(args: list[str]) -> subprocess.CompletedProcess[str]:
    """Run with stdout a pipe whose reader has already gone: the first write fails."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            args, stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=GUARD, check=False
        )
    finally:
        os.close(write_end)


@pytest.fixture
def seeded(store: Store) -> Store:
    seed_store(store, runs=4, per_run=150)
    return store


@pytest.mark.parametrize(
    "args",
    [["ls"], ["ls", "--json"], ["backends"], ["prune", "--json", "--keep-last", "1"]],
    ids=["ls", "ls --json", "backends", "prune --json"],
)
def test_a_listing_into_a_closed_pipe_ends_quietly(seeded: Store, args: list[str]) -> None:
    result = run_into_closed_pipe(command(*args, "--local", str(seeded.root)))
    assert result.stderr == ""
    assert result.returncode == CLOSED_PIPE_EXIT


def test_the_demo_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    result = run_into_closed_pipe(command("demo", "--no-tui", "--dir", str(tmp_path / "demo")))
    assert result.stderr == ""
    assert result.returncode == CLOSED_PIPE_EXIT


def test_ls_json_into_head_prints_the_start_and_no_traceback(seeded: Store) -> None:
    """A real pipeline, `ls --json | head -c 100`: the listing is more than twice what a pipe
    holds, so `ls` is still writing when `head` has its 100 bytes and goes."""
    ls = command("ls", "--json", "--local", str(seeded.root))
    whole = subprocess.run(ls, capture_output=True, timeout=GUARD, check=True).stdout
    assert len(whole) > 2 * 64 * 1024
    producer = subprocess.Popen(ls, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert producer.stdout is not None and producer.stderr is not None
    head = ["head", "-c", "100"]
    taken = subprocess.run(head, stdin=producer.stdout, capture_output=True, timeout=GUARD)
    producer.stdout.close()  # head has gone: now nobody reads
    stderr = producer.stderr.read()
    producer.stderr.close()
    assert producer.wait(GUARD) == CLOSED_PIPE_EXIT
    assert stderr == b""
    assert taken.stdout == whole[:100]
