"""No file a person names can hang a command: a FIFO or a device where the config file, a key
file, `~/.tinker/credentials.json` or a log dir's files should be is refused (or skipped) with a
message, never opened for a read that waits for a writer for good.

The commands run as the executable, with a timeout that is a hang guard only (an old build
waits forever at the first FIFO).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from ckpt_tui.backends.config import KeyProblem, read_key_file
from ckpt_tui.store import Store
from ckpt_tui.training.logdirs import Metrics, read_metrics
from ckpt_tui.training.records import read_checkpoints_jsonl

T = TypeVar("T")
GUARD = 120.0
"""Seconds a command may take before the test calls it a hang (they take about one)."""


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ckpt_tui", *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=GUARD,
        check=False,
    )


def in_thread(read: Callable[[], T]) -> T | BaseException:
    """What `read()` returns or raises, run in a thread that may hang (an old build's open of
    a FIFO never returned); fails the test if it has not ended within GUARD."""
    outcome: list[T | BaseException] = []

    def run() -> None:
        try:
            outcome.append(read())
        except BaseException as exc:  # handed to the test to look at
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(GUARD)
    assert outcome, f"still reading after {GUARD:g} s"
    return outcome[0]


def write_config(text: str) -> Path:
    """The config file where the tests' XDG_CONFIG_HOME puts it."""
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "ckpt-tui" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_config_file_that_is_a_fifo_is_refused() -> None:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "ckpt-tui" / "config.toml"
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    result = run_cli("backends")
    assert result.returncode == 2
    assert f"{path}: cannot be read (not a regular file)" in result.stderr


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_key_file_that_is_not_a_regular_file_is_that_backends_error(
    tmp_path: Path, store: Store, kind: str
) -> None:
    key_file = Path("/dev/zero") if kind == "device" else tmp_path / "box1.key"
    if kind == "fifo":
        os.mkfifo(key_file)
    write_config(
        f'[backends.box1]\nurl = "http://127.0.0.1:9"\napi_key_file = "{key_file}"\n\n'
        f'[backends.scratch]\nlocal = "{store.root}"\n'
    )
    result = run_cli("backends")
    assert f"{key_file} (the api_key_file of [backends.box1]" in result.stdout + result.stderr
    assert "cannot be read (not a regular file)" in result.stdout + result.stderr
    scratch = next(line for line in result.stdout.splitlines() if line.startswith("scratch"))
    assert "reachable" in scratch.split()


def test_a_key_file_may_be_a_link_to_a_regular_file(tmp_path: Path) -> None:
    """Keys in ~/.config are often links into a secrets folder: the link is followed."""
    secret = tmp_path / "secrets" / "box1.key"
    secret.parent.mkdir()
    secret.write_text("tml-linked\n")
    link = tmp_path / "box1.key"
    link.symlink_to(secret)
    assert read_key_file(link, "[backends.box1]") == "tml-linked"
    fifo_link = tmp_path / "fifo.key"
    os.mkfifo(tmp_path / "secrets" / "fifo")
    fifo_link.symlink_to(tmp_path / "secrets" / "fifo")
    refused = in_thread(lambda: read_key_file(fifo_link, "[backends.box1]"))
    assert isinstance(refused, KeyProblem) and "not a regular file" in str(refused)


def test_a_credentials_file_that_is_a_fifo_is_no_key() -> None:
    credentials = Path(os.environ["HOME"]) / ".tinker" / "credentials.json"
    credentials.parent.mkdir(parents=True)
    os.mkfifo(credentials)
    result = run_cli("backends", env={"TINKER_BASE_URL": "http://127.0.0.1:9"})
    assert "http://127.0.0.1:9 (no API key)" in result.stdout


def test_a_log_dir_config_that_is_a_fifo_does_not_stop_ls(tmp_path: Path, store: Store) -> None:
    run = tmp_path / "logs" / "run1"
    run.mkdir(parents=True)
    record = {"name": "000001", "batch": 1, "state_path": "tinker://run1/weights/000001"}
    (run / "checkpoints.jsonl").write_text(json.dumps(record) + "\n")
    os.mkfifo(run / "config.json")
    result = run_cli("ls", "--local", str(store.root), "--log-dir", str(tmp_path / "logs"))
    assert result.returncode == 0, result.stderr
    assert "000001" in result.stdout


def test_a_checkpoints_file_that_is_a_fifo_is_refused(tmp_path: Path) -> None:
    """Discovery skips a log dir whose checkpoints.jsonl is not a regular file; one that
    becomes a FIFO after that look is refused at the read."""
    fifo = tmp_path / "checkpoints.jsonl"
    os.mkfifo(fifo)
    refused = in_thread(lambda: read_checkpoints_jsonl(fifo))
    assert isinstance(refused, OSError) and refused.strerror == "not a regular file"


def test_a_metrics_file_that_is_a_fifo_is_a_problem_not_a_hang(tmp_path: Path) -> None:
    """The app reads metrics.jsonl for the sparklines."""
    fifo = tmp_path / "metrics.jsonl"
    os.mkfifo(fifo)
    metrics = in_thread(lambda: read_metrics(fifo))
    assert isinstance(metrics, Metrics) and "not a regular file" in (metrics.error or "")
