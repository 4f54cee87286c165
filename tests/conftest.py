"""Fixtures shared by the whole suite: a store on a fixed clock and a real server over it."""

from __future__ import annotations

import compileall
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import ckpt_tui
from ckpt_tui.api_types import format_time
from ckpt_tui.server import create_app
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support.clock import T0
from tests.support.cloud_emulators import Emulator, azurite, fake_gcs
from tests.support.demo_fixture import ServedDemo, served_demo
from tests.support.faulty_app import FaultyApp
from tests.support.live_server import bind_loopback_socket, run_server
from tests.support.s3_server import S3Server, s3_server


def pytest_sessionstart(session: pytest.Session) -> None:
    """Compile ckpt_tui's modules once, before the tests start `ckpt-tui` processes.

    An editable install has no compiled modules, and where PYTHONDONTWRITEBYTECODE is set (as
    on this project's machines) every process the tests start compiled each module it imports
    again: about 0.45 s per process that imports the app, server and store. Compiling writes
    only what is stale; two xdist workers may both write a file, atomically.
    """
    compileall.compile_dir(Path(ckpt_tui.__file__).parent, quiet=1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every SVG screenshot test (one that takes `snap_compare`) `svg_screenshot`, so that a
    run can leave them out by marker (`-m 'not svg_screenshot'`, e.g. on a terminal font setup
    whose screens are not the reference ones)."""
    for item in items:
        if "snap_compare" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.svg_screenshot)


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The session log file goes to a temp folder, never to the user's own state folder. No
    backend of the user's joins a test (it would reach the network): the config file is looked
    for in an empty temp folder, the home folder (where `tinker auth login` keeps keys) is an
    empty one, and the Tinker connection's variables are unset unless a test sets them."""
    folder = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(folder))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config-home"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache-home"))
    for name in ("TINKER_API_KEY", "TINKER_BASE_URL", "TINKER_CREDENTIAL_CMD"):
        monkeypatch.delenv(name, raising=False)
    return folder


@pytest.fixture
def quiet_environment(tmp_path: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """For commands run in-process: no real credentials, runs dir, storage rate or read-only
    switch from the person running the tests; "now" is the tests' clock."""
    for name in (
        "TINKER_API_KEY",
        "TINKER_BASE_URL",
        "TINKER_CREDENTIAL_CMD",
        "CKPT_TUI_STORAGE_RATE",
        "CKPT_TUI_READONLY",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TINKER_COOKBOOK_RUNS_DIR", str(tmp_path / "no-runs"))
    monkeypatch.setenv("CKPT_TUI_NOW", format_time(clock.now()))


@pytest.fixture
def clock() -> FixedClock:
    """A clock standing at T0; tests move it with `advance`."""
    return FixedClock(T0)


@pytest.fixture
def store(tmp_path: Path, clock: FixedClock) -> Iterator[Store]:
    """An empty store in `tmp_path/store`, closed after the test."""
    opened = Store.open(tmp_path / "store", clock)
    yield opened
    opened.close()


@pytest.fixture
def server_url(store: Store) -> Iterator[str]:
    """Base URL of a real uvicorn server over `store`, without auth or background sweep."""
    with run_server(create_app(store, sweep_interval=None)) as url:
        yield url


@pytest.fixture
def refused_url() -> str:
    """A loopback URL where nothing listens (its port was free a moment ago)."""
    sock = bind_loopback_socket()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    sock.close()  # nothing listens there any more
    return url


@pytest.fixture
def keyed_url(store: Store) -> Iterator[str]:
    """Like `server_url`, but every endpoint but healthz needs the API key "tml-right"."""
    with run_server(create_app(store, api_key="tml-right", sweep_interval=None)) as url:
        yield url


@pytest.fixture
def demo(tmp_path: Path, clock: FixedClock) -> Iterator[ServedDemo]:
    """The demo built at the fixed clock's time, served by a real server."""
    with served_demo(tmp_path / "demo", clock) as served:
        yield served


@pytest.fixture
def faulty_demo(tmp_path: Path, clock: FixedClock) -> Iterator[tuple[ServedDemo, FaultyApp]]:
    """The demo served through a FaultyApp, which the test configures."""
    holder: list[FaultyApp] = []

    def wrap(app: Any) -> FaultyApp:
        holder.append(FaultyApp(app))
        return holder[0]

    with served_demo(tmp_path / "demo", clock, wrap=wrap) as served:
        yield served, holder[0]


@pytest.fixture(scope="session")
def s3() -> Iterator[S3Server]:
    """One real S3 server (moto) for the whole run; each test makes its own bucket."""
    with s3_server() as server:
        yield server


@pytest.fixture
def s3_bucket(s3: S3Server, monkeypatch: pytest.MonkeyPatch) -> str:
    """A new empty bucket on the test S3 server, with the standard AWS variables pointing at
    the server (dummy credentials) for the test's duration."""
    for name, value in s3.environment().items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    return s3.make_bucket()


@pytest.fixture(scope="session")
def azure_emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    """Azurite for the whole run (the test skips when it is not installed)."""
    with azurite(tmp_path_factory.mktemp("azurite")) as emulator:
        yield emulator


@pytest.fixture(scope="session")
def gcs_emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    """fake-gcs-server for the whole run (the test skips when it is not installed)."""
    with fake_gcs(tmp_path_factory.mktemp("fake-gcs")) as emulator:
        yield emulator


@pytest.fixture(params=["az", "gs"])
def cloud(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Emulator:
    """Each of the other clouds' emulators in turn, with its standard variables set (and
    no other cloud's) for the test's duration."""
    emulator: Emulator = request.getfixturevalue(
        {"az": "azure_emulator", "gs": "gcs_emulator"}[request.param]
    )
    for name in list(os.environ):
        if name.startswith(("AWS_", "AZURE_", "GOOGLE_")):
            monkeypatch.delenv(name)
    for name, value in emulator.environment().items():
        monkeypatch.setenv(name, value)
    return emulator
