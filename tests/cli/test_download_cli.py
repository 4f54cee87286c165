"""`ckpt-tui download` against real servers: killed and rerun, options anywhere, and a real
`ckpt-tui serve` whose output never shows a signature."""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import pytest

import ckpt_tui
from ckpt_tui.api_types import parse_time
from ckpt_tui.cli import main
from ckpt_tui.server import create_app
from ckpt_tui.store import Store
from tests.support import layouts as L
from tests.support.file_tap import FileTap
from tests.support.live_server import run_server
from tests.support.small_disk import fill, small_tmpfs

REPO = Path(ckpt_tui.__file__).resolve().parent.parent
PATH = "tinker://run-1/external_weights/final"
NAME = "run-1_external_weights_final"
FILES = {"a.bin": os.urandom(2_000_000), "b.bin": os.urandom(2_000_000), "c.json": b"{}"}
TOTAL = sum(map(len, FILES.values()))
DEADLINE = 120.0


def seed(store: Store) -> None:
    store.create_run("run-1", "base/model")
    store.add_checkpoint("run-1", "external_weights/final", FILES)


@pytest.fixture
def tap(store: Store) -> Iterator[FileTap]:
    seed(store)
    tap = FileTap(create_app(store, sweep_interval=None))
    yield tap
    tap.release.set()  # a stalled answer lets the server stop


def held(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def command(url: str, out: Path) -> list[str]:
    return [sys.executable, "-m", "ckpt_tui", "download", PATH, "--url", url, "-o", str(out.parent)]


def wait_for_bytes(part: Path, at_least: int) -> None:
    deadline = time.monotonic() + DEADLINE
    while not (part.exists() and part.stat().st_size >= at_least):
        assert time.monotonic() < deadline, f"{part} did not reach {at_least} bytes"
        time.sleep(0.05)


def test_killed_download_resumes_and_fetches_only_the_rest(tap: FileTap, tmp_path: Path) -> None:
    out = tmp_path / NAME
    tap.stall_after = 1_000_000
    with run_server(tap) as url:
        argv = [*command(url, out), "--no-tinker"]
        with subprocess.Popen(
            argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
        ) as proc:
            try:
                wait_for_bytes(out / "a.bin.part", 1_000_000)
            finally:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=DEADLINE)
        kept = sum(p.stat().st_size for p in out.glob("*.part"))
        assert not (out / "a.bin").exists()
        tap.release.set()
        tap.reset()
        done = subprocess.run(argv, cwd=REPO, capture_output=True, timeout=DEADLINE)
    assert done.returncode == 0, done.stderr
    assert held(out) == FILES
    assert tap.sent <= TOTAL - kept  # the rest, nothing fetched twice
    assert b"\r" not in done.stderr  # piped: no progress line
    assert b"downloaded tinker://run-1/external_weights/final" in done.stdout


def test_options_mean_the_same_before_or_after_and_json_is_one_document(
    tap: FileTap, tmp_path: Path, capsys: pytest.CaptureFixture[str], quiet_environment: None
) -> None:
    with run_server(tap) as url:
        assert main(["--url", url, "--no-tinker", "download", PATH, "-o", str(tmp_path / "a")]) == 0
        capsys.readouterr()
        argv = ["download", "--json", PATH, "--no-tinker", "--output", str(tmp_path / "b")]
        assert main([*argv, "--url", url]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["errors"] == []
    assert document["downloads"][0]["bytes"] == TOTAL
    assert held(tmp_path / "a" / NAME) == held(tmp_path / "b" / NAME) == FILES


def test_resuming_on_a_full_disk_is_a_clean_error(
    tap: FileTap, tmp_path: Path, capsys: pytest.CaptureFixture[str], quiet_environment: None
) -> None:
    """A rerun on a disk the first run filled crashed with a traceback writing the state file
    (ENOSPC), and left its empty `.new` file behind: now it is the same clean error."""
    with run_server(tap) as url, small_tmpfs(tmp_path / "disk") as disk:
        filler = fill(disk)
        os.truncate(filler, filler.stat().st_size - 64 * 1024)  # room for the state file
        argv = ["download", PATH, "--url", url, "--no-tinker", "-o", str(disk)]
        for extra in ([], [], ["--json"]):
            capsys.readouterr()
            assert main([*argv, *extra]) == 1
        out, err = capsys.readouterr()
        document = json.loads(out)
        assert "No space left on device" in document["errors"][0]
        assert "cannot write" in document["errors"][0]
        assert "Traceback" not in out + err
        assert not list(disk.rglob("*.new"))
        assert (disk / NAME / ".ckpt-tui-download.json").is_file()  # a rerun resumes


def test_a_bad_path_and_no_backend_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], quiet_environment: None
) -> None:
    assert main(["download", "tinker://run-1/nope/x", "--local", str(tmp_path)]) == 2
    assert "tinker://RUN/SEGMENT/NAME" in capsys.readouterr().err
    assert main(["download", PATH]) == 2  # no backend configured


def test_local_store_downloads_in_process(
    store: Store, tmp_path: Path, quiet_environment: None
) -> None:
    seed(store)
    other = "tinker://run-1/external_weights/other"
    store.add_checkpoint("run-1", "external_weights/other", {"x.bin": b"x"})
    local = ["--local", str(store.root), "--no-tinker", "-o", str(tmp_path)]
    assert main(["download", PATH, other, *local]) == 0
    assert held(tmp_path / NAME) == FILES
    assert held(tmp_path / "run-1_external_weights_other") == {"x.bin": b"x"}


def test_serve_never_logs_a_signature(tmp_path: Path) -> None:
    root = tmp_path / "store"
    with Store.open(root) as store:
        seed(store)
    argv = [sys.executable, "-m", "ckpt_tui", "serve", str(root), "--port", "0"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(
        [*argv, "--url-lifetime", "120"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        try:
            url = line.split("serving ", 1)[1].split(" ", 1)[0]
            route = f"{url}/api/v1/training_runs/run-1/checkpoints/external_weights/final"
            answer = httpx.get(f"{route}/external_weights_urls", timeout=30).json()
            signed = answer["urls"]["a.bin"]
            lifetime = parse_time(answer["expires"]) - datetime.now(timezone.utc)
            assert timedelta(seconds=60) < lifetime <= timedelta(seconds=120)
            assert httpx.get(signed, timeout=30).content == FILES["a.bin"]
            assert httpx.get(signed.replace("sig=", "sig=0"), timeout=30).status_code == 403
        finally:
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
    signature = signed.split("sig=", 1)[1]
    assert signature not in line + out + err
    assert "sig=" not in line + out + err


def test_one_progress_line_on_a_terminal(tap: FileTap, tmp_path: Path) -> None:
    controller, terminal = pty.openpty()
    with run_server(tap) as url:
        argv = [*command(url, tmp_path / NAME), "--no-tinker"]
        process = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=terminal)
        os.close(terminal)
        shown = b""
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: the download ended and closed its side
                break
            if not chunk:
                break
            shown += chunk
        stdout, _ = process.communicate(timeout=DEADLINE)
    os.close(controller)
    assert process.returncode == 0
    text = shown.decode()
    assert text.startswith("\r\x1b[2KDownloading ")  # the progress line prune draws too
    assert " left · " in text and "/3 files" in text and "MiB" in text
    assert "\n" not in text  # redrawn in place: one line, cleared at the end
    assert b"downloaded" in stdout


def test_a_checkpoint_that_is_one_file_downloads_as_that_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], quiet_environment: None
) -> None:
    """A `torch.save` file in a training box's folder is a checkpoint of one file."""
    box = tmp_path / "box"
    saved = L.full_torch_checkpoint(box / "loose/model.pt")
    out = tmp_path / "out"
    local = ["--local", str(box), "--no-tinker", "-o", str(out)]
    assert main(["download", "tinker://loose/weights/model.pt", *local]) == 0
    assert held(out / "loose_weights_model.pt") == {"model.pt": saved.read_bytes()}
    assert "1 file," in capsys.readouterr().out
