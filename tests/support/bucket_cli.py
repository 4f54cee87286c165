"""Running the command line in-process over a bucket backend, and reading its answers."""

from __future__ import annotations

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


def write_config(tmp_path: Path, text: str) -> None:
    """The config file the `state_home` fixture points at (under `tmp_path/config-home`)."""
    folder = tmp_path / "config-home" / "ckpt-tui"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(text)
