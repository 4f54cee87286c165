"""No credential command hangs a command: it runs in its own process group, which is killed
as a whole at the deadline or past the output bound, and the call returns with the reason.

Each command first exports a variable naming its test (`tests.support.processes.marked`), so
the test can check that no process of it lives on. Deadlines are short and injected; the
waits here are hang guards only (an old build hangs for good: `yes tml-k | cat`).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ckpt_tui.cli import main
from ckpt_tui.client import CredentialsError, credential_cmd
from ckpt_tui.client.credential_cmd import run_credential_cmd
from tests.support.processes import all_gone, marked

GUARD = 120.0
"""Seconds a call may take before the test calls it a hang (the calls take well under 1 s)."""


async def failure_of(command: str, timeout: float | None = None) -> str:
    with pytest.raises(CredentialsError) as caught:
        await asyncio.wait_for(run_credential_cmd(command, timeout), GUARD)
    return caught.value.message


@pytest.mark.parametrize("command", ["yes tml-k", "yes tml-k | cat", "setsid yes tml-k"])
async def test_endless_output_stops_at_the_bound_and_the_group_is_killed(
    tmp_path: Path, command: str
) -> None:
    full, mark = marked(command, tmp_path)
    assert "printed more than 64 KiB" in await failure_of(full)
    assert all_gone(mark)


@pytest.mark.parametrize(
    "command", ["sleep 600", "sleep 600 | cat", "sh -c 'sleep 600'", "echo tml-k; sleep 600 &"]
)
async def test_a_command_past_its_deadline_is_killed_with_its_children(
    tmp_path: Path, command: str
) -> None:
    full, mark = marked(command, tmp_path)
    assert "did not finish within 0.5 s" in await failure_of(full, timeout=0.5)
    assert all_gone(mark)


async def test_a_command_that_finishes_still_gives_its_credential(tmp_path: Path) -> None:
    full, _ = marked("printf 'tml-k\\n'", tmp_path)
    assert await asyncio.wait_for(run_credential_cmd(full, 5.0), GUARD) == "tml-k"


def test_ls_ends_with_the_reason_when_the_command_prints_without_end(tmp_path: Path) -> None:
    """The executable, as a person runs it (the Tinker connection's credential command)."""
    full, mark = marked("yes tml-k | cat", tmp_path)
    env = {"TINKER_CREDENTIAL_CMD": full, "TINKER_BASE_URL": "http://127.0.0.1:9"}
    result = subprocess.run(
        [sys.executable, "-m", "ckpt_tui", "ls"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=GUARD,
        check=False,
    )
    assert result.returncode == 1
    assert "TINKER_CREDENTIAL_CMD printed more than 64 KiB" in result.stderr
    assert "tml-k" not in result.stdout + result.stderr
    assert all_gone(mark)


@pytest.mark.usefixtures("quiet_environment")
def test_ls_ends_at_the_deadline_of_a_command_that_never_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    full, mark = marked("sleep 600 | cat", tmp_path)
    monkeypatch.setattr(credential_cmd, "TIMEOUT_SECONDS", 0.5)
    monkeypatch.setenv("TINKER_CREDENTIAL_CMD", full)
    monkeypatch.setenv("TINKER_BASE_URL", "http://127.0.0.1:9")
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(main(["ls"])), daemon=True)
    thread.start()
    thread.join(GUARD)
    assert codes == [1]
    assert "did not finish within 0.5 s" in capsys.readouterr().err
    assert all_gone(mark)
