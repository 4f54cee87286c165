"""No crash of the app prints a key, and a refused key says so (issue 24, items 1 and 4).

The app is opened as the command line opens it (the config file names the backend and the
variable that holds its key) on a real server. The crash is a library failing deep inside a
request, as httpx did on a bad port: the connection raises, in a frame that holds the key
the way a library's frame may. Every byte written is searched for the key: stdout and
stderr (where the crash's traceback goes), the screen and the actions log.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import aiohttp
import pytest
from rich.pretty import pretty_repr
from textual.worker import WorkerFailed

from ckpt_tui.backends import Connection
from ckpt_tui.backends.config import load_config
from ckpt_tui.backends.resolve import Wanted, resolve
from ckpt_tui.cli.common import connect
from ckpt_tui.client import CheckpointClient, Endpoint
from ckpt_tui.server import create_app
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support.live_server import run_server
from tests.support.seed import seed_backend
from tests.support.tui import app_on, connection, screen_text, settle

KEY = "tml-s3cret-key-of-the-box"


def served(folder: Path, clock: FixedClock) -> Iterator[str]:
    """The URL of a server, asking for KEY, of a store of its own in `folder`."""
    with Store.open(folder, clock) as store:
        seed_backend(store, folder.name, 2)
        with run_server(create_app(store, api_key=KEY, sweep_interval=None)) as url:
            yield url


@pytest.fixture
def box_url(tmp_path: Path, clock: FixedClock) -> Iterator[str]:
    yield from served(tmp_path / "box", clock)


@pytest.fixture
def other_url(tmp_path: Path, clock: FixedClock) -> Iterator[str]:
    """A second server of its own store (one store under two names is refused)."""
    yield from served(tmp_path / "other", clock)


def configured(tmp_path: Path, url: str, key: str, monkeypatch: pytest.MonkeyPatch) -> Connection:
    """The backend `box` of a config file, its key in $BK, opened as the command line does."""
    config = tmp_path / "config-home" / "ckpt-tui" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[backends.box]\nurl = "{url}"\napi_key_env = "BK"\n')
    monkeypatch.setenv("BK", key)
    [setup] = resolve(Wanted(no_tinker=True), load_config(), os.environ)
    return connect(setup)


class LibraryFault(OverflowError):
    """What the connection raises: not a ClientError, so nothing on the way catches it."""


async def failing_connection(
    self: aiohttp.ClientSession, method: str, url: object, **options: Any
) -> None:
    sent = dict(options["headers"]).get("X-API-Key")  # a library's frame may hold the key
    raise LibraryFault(f"the connection failed ({len(sent or '')} bytes of key sent)")


def everything_written(capsys: pytest.CaptureFixture[str], state_home: Path) -> str:
    out, err = capsys.readouterr()
    logs = [path.read_text() for path in state_home.rglob("*") if path.is_file()]
    return "\n".join([out, err, *logs])


async def test_a_crash_prints_its_traceback_without_any_key(
    tmp_path: Path,
    box_url: str,
    clock: FixedClock,
    state_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    app = app_on([configured(tmp_path, box_url, KEY, monkeypatch)], None, clock)
    monkeypatch.setattr(aiohttp.ClientSession, "request", failing_connection)
    screens: list[str] = []
    with pytest.raises(WorkerFailed):  # the load's worker failed with LibraryFault
        async with app.run_test() as pilot:
            screens.append(screen_text(app))
            await pilot.pause()
            await app.workers.wait_for_complete()
            await pilot.pause()
    written = everything_written(capsys, state_home) + "".join(screens)
    assert "LibraryFault" in written and "Traceback" in written  # the crash was printed
    assert KEY not in written and "s3cret" not in written


def key_holding_frames(traceback: TracebackType | None) -> list[str]:
    """Each of ckpt-tui's frames whose locals, rendered as Rich's traceback renders them,
    show the key."""
    found = []
    while traceback is not None:
        frame = traceback.tb_frame
        ours = "/ckpt_tui/" in frame.f_code.co_filename
        if ours and "s3cret" in pretty_repr(frame.f_locals, max_length=100, max_string=1000):
            found.append(f"{frame.f_code.co_filename}:{frame.f_code.co_name}")
        traceback = traceback.tb_next
    return found


async def test_no_frame_of_a_request_holds_the_key_as_text(
    box_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Behind the traceback without locals: were locals ever shown, the key is a Secret in
    every frame of ckpt-tui (the start-up and the request alike)."""
    monkeypatch.setattr(aiohttp.ClientSession, "request", failing_connection)
    async with CheckpointClient(Endpoint.remote(box_url, KEY, "$BK")) as client:
        with pytest.raises(LibraryFault) as raised:
            await client.list_training_runs()
    assert key_holding_frames(raised.value.__traceback__) == []


async def test_a_refused_key_says_key_refused_wherever_its_state_shows(
    tmp_path: Path,
    box_url: str,
    other_url: str,
    clock: FixedClock,
    state_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The header's badge, the runs pane's backend row, the checkpoints pane, the status
    line and the toast say the key was refused, and where it came from, with no hint that
    r (a retry, which sends the same key) helps; a healthy second backend (another server,
    its right key) still loads."""
    wrong = "tml-s3cret-but-wrong"
    refused = configured(tmp_path, box_url, wrong, monkeypatch)
    healthy = connection(Endpoint.remote(other_url, KEY, "test key"), "good")
    app = app_on([refused, healthy], None, clock)
    async with app.run_test(size=(220, 40)) as pilot:
        await settle(pilot)
        screen = screen_text(app)
        toasts = "\n".join(str(toast.message) for toast in app._notifications)
    assert "box ✗ key refused" in screen and "good ✓" in screen
    assert "unreachable" not in screen
    said = [
        line for line in screen.splitlines() if "box: key refused: the API key from $BK" in line
    ]
    assert len(said) == 2  # the checkpoints pane (the cursor is on box's row) and the status line
    assert "▾ box ✗ key refused" in screen  # the runs pane's row for the backend
    assert "r retries" not in screen and "Press r" not in screen
    assert "the API key from $BK was refused" in toasts and "Put the right key there" in toasts
    written = everything_written(capsys, state_home) + screen + toasts
    assert wrong not in written and "s3cret" not in written
