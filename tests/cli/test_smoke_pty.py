"""`ckpt-tui demo` in a real pseudo-terminal: the main view appears, and `q` quits cleanly."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.terminal import read_available, screen_text, set_window_size

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")

COLUMNS, LINES = 120, 36
STARTUP_TIMEOUT = 15.0
EXIT_TIMEOUT = 5.0


def main_view_shown(text: str) -> bool:
    """The header's totals ("47 checkpoints") and a run of the demo are on screen."""
    return re.search(r"\d+ checkpoints", text) is not None and "sl/llama-8b-tulu3" in text


def read_until_main_view(fd: int, process: subprocess.Popen[bytes]) -> str:
    """Read output until the main view shows (or time runs out); the text so far."""
    raw = b""
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline and process.poll() is None:
        raw += read_available(fd, 0.1)
        if main_view_shown(screen_text(raw)):
            break
    return screen_text(raw)


def wait_for_exit(fd: int, process: subprocess.Popen[bytes]) -> str:
    """Keep draining the terminal (a full pty would block the child) until the process ends."""
    raw = b""
    deadline = time.monotonic() + EXIT_TIMEOUT
    while time.monotonic() < deadline and process.poll() is None:
        raw += read_available(fd, 0.1)
    raw += read_available(fd, 0.1)
    return screen_text(raw)


def start_demo(tmp_path: Path, columns: int, lines: int) -> tuple[int, subprocess.Popen[bytes]]:
    """`ckpt-tui demo` in a fresh pseudo-terminal of that size: (the master fd, the process)."""
    master, slave = os.openpty()
    set_window_size(slave, columns, lines)
    env = {
        **os.environ,
        "TERM": "xterm-256color",
        "COLUMNS": str(columns),
        "LINES": str(lines),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    env.pop("TEXTUAL", None)  # no devtools or other driver overrides from the caller
    command = [sys.executable, "-m", "ckpt_tui", "demo", "--dir", str(tmp_path / "demo")]
    process = subprocess.Popen(
        command, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True
    )
    os.close(slave)
    return master, process


def stop(master: int, process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
        process.wait()
    os.close(master)


def test_the_demo_opens_in_a_terminal_and_q_quits(tmp_path: Path) -> None:
    master, process = start_demo(tmp_path, COLUMNS, LINES)
    try:
        shown = read_until_main_view(master, process)
        assert main_view_shown(shown), shown[-2000:]
        os.write(master, b"q")
        after = wait_for_exit(master, process)
        assert process.poll() == 0, after[-2000:]
        assert "The demo stays in" in after  # printed once the app has left the screen
    finally:
        stop(master, process)


def read_until(fd: int, process: subprocess.Popen[bytes], words: tuple[str, ...]) -> str:
    """Read output until every one of `words` has shown (or time runs out); the text so far."""
    raw = b""
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline and process.poll() is None:
        raw += read_available(fd, 0.1)
        if all(word in screen_text(raw) for word in words):
            break
    return screen_text(raw)


@pytest.mark.parametrize(
    ("columns", "lines", "words"),
    [
        (80, 24, ("tinker-demo", "gpu-box", "checkpoints", "TTL", "Delete", "Keep policy")),
        (40, 12, ("tinker-demo", "gpu-box", "terminal too small (need 60x16)")),
    ],
)
def test_small_terminals_keep_the_backend_and_say_what_they_lack(
    tmp_path: Path, columns: int, lines: int, words: tuple[str, ...]
) -> None:
    master, process = start_demo(tmp_path, columns, lines)
    try:
        shown = read_until(master, process, words)
        assert [word for word in words if word not in shown] == [], shown[-2000:]
        os.write(master, b"q")
        wait_for_exit(master, process)
        assert process.poll() == 0
    finally:
        stop(master, process)
