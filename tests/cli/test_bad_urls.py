"""A server URL that cannot work (issue 24, item 2): a port above 65535, a control character.
On the command line it exits 2 naming the option and the fix; from the config file or
TINKER_BASE_URL it is that backend's error entry, and the healthy backend still loads."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from ckpt_tui.cli import build_parser, main, options
from ckpt_tui.cli.common import connect, setups_for
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support.seed import seed_backend
from tests.support.tui import app_on, backend_error, screen_of, settle

PER_RUN = 3
BIG_PORT = "http://127.0.0.1:99999"
PORT_FIX = "its port must be a number from 1 to 65535"
CONTROL_FIX = "it holds a control character or a space"
BAD_CONFIG_URLS = {  # TOML escapes: the file holds them as the characters they name
    "bigport": (BIG_PORT, PORT_FIX),
    "nul": (r"http://127.0.0.1:8751/\u0000", CONTROL_FIX),
    "newline": (r"http://127.0.\n0.1:8751", CONTROL_FIX),
}


@pytest.fixture
def good(tmp_path: Path, clock: FixedClock, quiet_environment: None) -> Path:
    root = tmp_path / "good"
    with Store.open(root, clock) as store:
        seed_backend(store, "good", PER_RUN)
    return root


def run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("url", "fix"),
    [(BIG_PORT, PORT_FIX), ("http://127.0.0.1:0", PORT_FIX), ("http://h\n:1", CONTROL_FIX)],
)
def test_a_bad_url_option_exits_2_naming_it_and_the_fix(
    url: str, fix: str, good: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in (["ls"], ["backends"], ["prune", "--keep-last", "1"], []):
        code, _out, err = run(capsys, [*command, "--url", url, "--local", str(good)])
        assert code == 2, err
        assert f"{url!r} (from --url) is not a server URL: {fix}" in err
        assert "e.g. --url http://127.0.0.1:8750" in err and "Traceback" not in err


def write_config(good: Path) -> None:
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "ckpt-tui" / "config.toml"
    config.parent.mkdir(parents=True)
    tables = [f'[backends.{name}]\nurl = "{url}"\n' for name, (url, _) in BAD_CONFIG_URLS.items()]
    config.write_text("\n".join([*tables, f'[backends.good]\nlocal = "{good}"\n']))


def by_name(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {item["name"]: item for item in items}


def test_a_bad_url_in_the_config_is_that_backends_error(
    good: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(good)
    code, out, err = run(capsys, ["ls", "--json"])
    assert code == 1  # not every backend could be read
    document = json.loads(out)
    sections = by_name(document["backends"])
    assert sections["good"]["error"] is None and sections["good"]["complete"] is True
    assert document["totals"]["checkpoints"] == 2 * PER_RUN  # the good one's, all of them
    for name, (_, fix) in BAD_CONFIG_URLS.items():
        error = sections[name]["error"]
        assert f"[backends.{name}] url:" in error and fix in error, error
        assert "\x00" not in out + err and "\\n0.1" in sections["newline"]["url"]
    code, out, err = run(capsys, ["backends", "--json"])
    statuses = by_name(json.loads(out)["backends"])
    assert code == 1 and statuses["good"]["reachable"] is True
    assert [name for name, status in statuses.items() if status["error"]] == list(BAD_CONFIG_URLS)


async def test_the_tui_shows_a_bad_config_url_as_an_error_entry(
    good: Path, clock: FixedClock
) -> None:
    """As `ckpt-tui` opens it: the backends its options name, each connected."""
    write_config(good)
    parser = build_parser()
    args = parser.parse_args([])
    options.settle(args, parser)
    app = app_on([connect(setup) for setup in setups_for(args)], None, clock)
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot)
        assert backend_error(app, "good") is None
        header = str(screen_of(app).query_one("#header-line").render())
        assert "good ✓" in header
        for name, (_, fix) in BAD_CONFIG_URLS.items():
            assert fix in (backend_error(app, name) or "") and f"{name} ✗" in header


def test_a_bad_tinker_base_url_is_the_tinker_backends_error(
    good: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TINKER_BASE_URL", BIG_PORT)
    code, out, err = run(capsys, ["ls", "--json", "--local", str(good)])
    sections = by_name(json.loads(out)["backends"])
    assert code == 1 and sections["good"]["complete"] is True
    assert f"(from TINKER_BASE_URL) is not a server URL: {PORT_FIX}" in sections["tinker"]["error"]
    code, _out, err = run(capsys, ["ls"])  # the only backend: nothing to show, exit 2
    assert code == 2 and "TINKER_BASE_URL" in err and PORT_FIX in err


MARKER = "SEKRIT"
LOOKS = (
    ["ls"],
    ["backends"],
    ["ls", "--json"],
    ["backends", "--json"],
    ["prune", "--keep-last", "1"],
)


@pytest.mark.parametrize("separator", ["/", "?", "#", "@"])
def test_a_password_holding_a_url_separator_is_never_printed(
    separator: str,
    good: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reviewer's case: `http://u:PW/SEKRIT@127.0.0.1:1` was taken for a URL whose port
    is `PW` and quoted whole in the error; from the config or TINKER_BASE_URL it showed in
    the WHERE column and in `ls --json` too. Refused wherever it is given, never shown."""
    url = f"http://u:PW{separator}{MARKER}@127.0.0.1:1"
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "ckpt-tui" / "config.toml"
    config.parent.mkdir(parents=True)

    def scan(argv: list[str]) -> tuple[int, str]:
        code, out, err = run(capsys, argv)
        assert MARKER not in out + err, out + err
        assert "Traceback" not in err
        return code, out + err

    for command in LOOKS:  # --url: refused before anything opens
        code, shown = scan([*command, "--url", url, "--local", str(good)])
        assert code == 2 and "(user:password@host)" in shown and "--api-key" in shown
    config.write_text(f'[backends.bad]\nurl = "{url}"\n\n[backends.good]\nlocal = "{good}"\n')
    for command in LOOKS:  # the config: that backend's error
        code, shown = scan(command)
        assert code != 0 and "[backends.bad] url" in shown and "127.0.0.1:1" in shown
    config.unlink()
    monkeypatch.setenv("TINKER_BASE_URL", url)
    for command in LOOKS:  # prune: alone, as it leaves Tinker out when --local is given
        local = [] if command[0] == "prune" else ["--local", str(good)]
        code, shown = scan([*command, *local])
        assert code != 0 and "TINKER_BASE_URL" in shown
