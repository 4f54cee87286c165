"""Each way of failing to connect has its own message, the same in the CLI and the TUI:
a malformed URL, a refused connection, a missing API key and a wrong one."""

from __future__ import annotations

from pathlib import Path

import pytest

from ckpt_tui.cli import main as cli_main
from ckpt_tui.client import Endpoint
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support.tui import app_on, backend_error, connection, screen_text, settle

MALFORMED = "is not a server URL"
REFUSED = "connection refused"
NO_KEY = "needs an API key"
WRONG_KEY = "was refused by"
MESSAGES = (MALFORMED, REFUSED, NO_KEY, WRONG_KEY)


@pytest.fixture(autouse=True)
def no_stored_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("TINKER_API_KEY", "TINKER_BASE_URL", "TINKER_COOKBOOK_RUNS_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.tinker/credentials.json


def cases(keyed_url: str, refused_url: str) -> list[tuple[list[str], str]]:
    return [
        (["--url", "not-a-url"], MALFORMED),
        (["--url", refused_url], REFUSED),
        (["--url", keyed_url], NO_KEY),
        (["--url", keyed_url, "--api-key", "tml-wrong"], WRONG_KEY),
    ]


def only_its_own(text: str, expected: str) -> None:
    assert expected in text
    assert [other for other in MESSAGES if other != expected and other in text] == []


def test_the_cli_names_each_failure(
    keyed_url: str, refused_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for args, expected in cases(keyed_url, refused_url):
        code = cli_main(["ls", *args])
        err = capsys.readouterr().err
        only_its_own(err, expected)
        assert code == (2 if expected == MALFORMED else 1)
        assert "server said: All connection attempts failed" not in err
        assert "tml-wrong" not in err


def test_a_malformed_url_is_refused_before_the_app_opens(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli_main(["--url", "http//127.0.0.1:8750"]) == 2
    err = capsys.readouterr().err
    assert "'http//127.0.0.1:8750' (from --url) is not a server URL" in err
    assert "http://" in err  # says what a URL looks like


async def test_the_tui_names_each_failure(
    keyed_url: str, refused_url: str, clock: FixedClock, tmp_path: Path
) -> None:
    """(A malformed URL never reaches the app: the command line refuses it, above.)"""
    backends = [
        (Endpoint.remote(refused_url), REFUSED),
        (Endpoint.remote(keyed_url), NO_KEY),
        (Endpoint.remote(keyed_url, "tml-wrong", "--api-key flag"), WRONG_KEY),
    ]
    for backend, expected in backends:
        app = app_on([connection(backend)], None, clock)
        async with app.run_test(size=(200, 30)) as pilot:
            await settle(pilot)
            error = backend_error(app) or ""
            only_its_own(error, expected)
            assert expected in screen_text(app)
