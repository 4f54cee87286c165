"""Running the command line in-process over a bucket backend, and reading its answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from ckpt_tui.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `ckpt-tui ARGV`."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def checkpoints(document: dict[str, Any]) -> dict[str, int | None]:
    """tinker path -> size of every checkpoint in an `ls --json` document."""
    return {
        c["tinker_path"]: c["size_bytes"] for run in document["runs"] for c in run["checkpoints"]
    }


def listed_in_both(
    capsys: pytest.CaptureFixture[str], folder: Path, place: str
) -> tuple[dict[str, int | None], dict[str, Any]]:
    """(`checkpoints` of `ls --json` of `folder`, the `ls --json` document of bucket
    location `place`), each command checked to succeed."""
    code, out, err = run(capsys, "--local", str(folder), "ls", "--json")
    assert code == 0, err
    on_disk = checkpoints(json.loads(out))
    code, out, err = run(capsys, "--local", place, "ls", "--json")
    assert code == 0, err
    document: dict[str, Any] = json.loads(out)
    assert document["complete"] is True
    assert document["backends"][0]["path"] == place
    return on_disk, document


def write_config(tmp_path: Path, text: str) -> None:
    """The config file the `state_home` fixture points at (under `tmp_path/config-home`)."""
    folder = tmp_path / "config-home" / "ckpt-tui"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(text)


@contextmanager
def serving(location: str, environment: dict[str, str], cwd: Path) -> Iterator[tuple[str, str]]:
    """`ckpt-tui serve LOCATION` in a process of its own, run in `cwd` with `environment`
    added to this one's: (its URL, the line it printed first); stopped on exit."""
    command = [sys.executable, "-m", "ckpt_tui", "serve", location, "--port", "0"]
    env = {**os.environ, **environment}
    with subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, text=True) as server:
        try:
            assert server.stdout is not None
            line = server.stdout.readline()
            yield line.split("serving ", 1)[1].split(" ", 1)[0], line
        finally:
            server.terminate()
            server.wait(timeout=30)
