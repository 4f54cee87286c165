"""`prune --yes` on a terminal shows one updating progress line; piped or --json, none; and the
config file's `max_in_flight` bounds how many deletes reach the server at once."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ckpt_tui.cli import main
from ckpt_tui.server import create_app
from tests.support.demo_fixture import ServedDemo
from tests.support.faulty_app import FaultyApp
from tests.support.live_server import run_server
from tests.support.terminal import read_available, set_window_size

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")

SFT = "sl/llama-8b-tulu3"  # --keep-last 2 deletes 16 of its checkpoints
EXIT_TIMEOUT = 60.0
DONE = "Deleted 16 of 16 checkpoints."


def prune_command(demo: ServedDemo) -> list[str]:
    logs = str(demo.paths.logs)
    return [sys.executable, "-m", "ckpt_tui", "prune", "--url", demo.url, "--log-dir", logs]


def environment(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "HOME": str(tmp_path / "home"), "TERM": "xterm-256color"}
    for name in ("TINKER_API_KEY", "TINKER_BASE_URL", "CKPT_TUI_READONLY", "CKPT_TUI_STORAGE_RATE"):
        env.pop(name, None)
    env["TINKER_COOKBOOK_RUNS_DIR"] = str(tmp_path / "no-runs")
    return env


def run_in_terminal(command: list[str], env: dict[str, str]) -> tuple[int, bytes]:
    """Run `command` with stdout and stderr on a fresh pseudo-terminal: (exit code, output)."""
    master, slave = os.openpty()
    set_window_size(slave, 100, 30)
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
    )
    os.close(slave)
    raw = b""
    deadline = time.monotonic() + EXIT_TIMEOUT
    try:
        while time.monotonic() < deadline and process.poll() is None:
            raw += read_available(master, 0.1)
        raw += read_available(master, 0.1)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        os.close(master)
    return process.returncode, raw


def test_on_a_terminal_one_line_shows_done_total_rate_and_time_left(
    demo: ServedDemo, tmp_path: Path
) -> None:
    command = [*prune_command(demo), "--run", SFT, "--keep-last", "2", "--yes"]
    code, raw = run_in_terminal(command, environment(tmp_path))
    text = raw.decode("utf-8", errors="replace")
    assert code == 0, text[-2000:]
    last = text.rindex("\r\x1b[2KDeleting 16/16")  # the last update is always shown ...
    assert text.index("\r\x1b[2K", last + 1) < text.index(DONE)  # ... then cleared
    assert " left" in text[last:] and "/s · " in text[last:]
    updates = text.count("\r\x1b[2KDeleting ")
    assert 1 <= updates <= 16  # one line, rewritten in place: no newline between updates
    assert "\n" not in text[text.index("\r\x1b[2KDeleting ") : last]


@pytest.mark.parametrize("as_json", [False, True], ids=["piped", "json-on-a-terminal"])
def test_piped_or_json_there_is_no_progress_line(
    demo: ServedDemo, tmp_path: Path, as_json: bool
) -> None:
    command = [*prune_command(demo), "--run", SFT, "--keep-last", "2", "--yes"]
    if as_json:
        code, raw = run_in_terminal([*command, "--json"], environment(tmp_path))
        output = raw.decode("utf-8", errors="replace")
        assert '"deleted": 16' in output, output[-2000:]
    else:
        done = subprocess.run(
            command,
            capture_output=True,
            env=environment(tmp_path),
            timeout=EXIT_TIMEOUT,
            check=False,
        )
        code, output = done.returncode, (done.stdout + done.stderr).decode()
        assert DONE in output
    assert code == 0
    assert "\r" not in output.replace("\r\n", "\n") and "Deleting 16/16" not in output


@pytest.mark.usefixtures("quiet_environment")
def test_the_config_files_max_in_flight_bounds_deletes_at_once(
    demo: ServedDemo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    faulty = FaultyApp(create_app(demo.store, sweep_interval=None))
    faulty.gather(3, method="DELETE")  # the first 3 wait for each other: a pile-up
    with run_server(faulty) as url:
        config = tmp_path / "xdg" / "ckpt-tui" / "config.toml"
        config.parent.mkdir(parents=True)
        config.write_text(f'[backends.box]\nurl = "{url}"\nmax_in_flight = 3\n')
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
        logs = str(demo.paths.logs)
        args = ["prune", "--backend", "box", "--log-dir", logs, "--run", SFT, "--keep-last", "2"]
        assert main([*args, "--yes"]) == 0
    assert faulty.count("DELETE") == 16
    assert faulty.most_in_flight == 3
