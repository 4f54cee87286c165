"""The TUI against a server that trades its key for short-lived JWTs: a session left open
across several lifetimes keeps renewing and acting; a renewal that fails is one error, and
`r` retries."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import Static

from ckpt_tui.client import Endpoint
from ckpt_tui.server.tokens import JwtIssuer
from ckpt_tui.timekeeping.clock import FixedClock
from ckpt_tui.tui.app import CkptApp
from tests.support.demo_fixture import ServedDemo, served_demo
from tests.support.faulty_app import FaultyApp
from tests.support.tui import app_on, backend_error, connection, loaded_on, screen_of, settle

KEY = "tml-tui-jwt-key"
LIFETIME = 3


def jwt_demo(
    root: Path, clock: FixedClock, lifetime: int
) -> Iterator[tuple[ServedDemo, JwtIssuer, FaultyApp]]:
    issuer = JwtIssuer(lifetime)
    holder: list[FaultyApp] = []

    def wrap(app: object) -> FaultyApp:
        holder.append(FaultyApp(app))  # type: ignore[arg-type]
        return holder[0]

    with served_demo(root, clock, wrap=wrap, api_key=KEY, jwt=issuer) as served:
        yield served, issuer, holder[0]


@pytest.fixture
def short_jwts(
    tmp_path: Path, clock: FixedClock
) -> Iterator[tuple[ServedDemo, JwtIssuer, FaultyApp]]:
    yield from jwt_demo(tmp_path / "demo", clock, LIFETIME)


@pytest.fixture
def long_jwts(
    tmp_path: Path, clock: FixedClock
) -> Iterator[tuple[ServedDemo, JwtIssuer, FaultyApp]]:
    yield from jwt_demo(tmp_path / "demo", clock, 900)


def keyed_app(demo: ServedDemo) -> CkptApp:
    backend = Endpoint.remote(demo.url, KEY, "TINKER_API_KEY")
    return app_on([connection(backend)], demo.paths.logs, demo.clock)


async def test_a_session_open_across_several_lifetimes_still_deletes(
    short_jwts: tuple[ServedDemo, JwtIssuer, FaultyApp],
) -> None:
    demo, issuer, _faulty = short_jwts
    app = keyed_app(demo)
    async with app.run_test(size=(120, 36)) as pilot:
        row = await loaded_on(pilot, app, "full/llama-3b-ft", "000150", "state")
        header = str(app.screen.query_one("#header-line", Static).content)
        assert header.endswith(f"{demo.url} (JWTs for the key from TINKER_API_KEY)")
        first, since = issuer.issued, time.monotonic()
        # Wait out two lifetimes, and at least four renewals made while nobody typed (the
        # background renewal at ~half of each lifetime; no call needed one meanwhile).
        give_up = since + 60  # only if renewals never come: a failure, not a race
        while issuer.issued < first + 4 or time.monotonic() - since < 2 * LIFETIME:
            assert time.monotonic() < give_up, "no JWT was renewed while the app sat idle"
            await asyncio.sleep(0.1)
        await pilot.press("d", "y")
        await settle(pilot)
        assert not demo.holds(row)
        assert backend_error(app) is None
        assert [entry.summary for entry in app.session_log.entries] == ["Deleted 1 of 1"]


async def test_a_failed_renewal_is_one_error_and_r_retries(
    long_jwts: tuple[ServedDemo, JwtIssuer, FaultyApp],
) -> None:
    demo, issuer, faulty = long_jwts
    app = keyed_app(demo)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        issuer.rotate()  # the app's JWT is refused from now on: it must trade for a new one
        faulty.fail_first(100, status=503, path="/api/v1/auth/token")
        await pilot.press("r")
        await settle(pilot)
        error = backend_error(app)
        assert error is not None and "the JWT exchange" in error
        assert KEY not in error and "eyJ" not in error
        faulty.clear_faults()
        await pilot.press("r")
        await settle(pilot)
        assert backend_error(app) is None
        catalog = screen_of(app).catalog
        assert catalog is not None and catalog.rows
