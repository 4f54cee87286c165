"""The app, `ls`, `ls --json`, `prune --dry-run --json` and `backends --json` say the same about
one fleet: the demo's two backends (a Tinker-style store and a GPU box of Trainer saves, each
served by a real server at the tests' fixed time) and its training logs, which name only the
store's runs. A training log joins only the backend that holds its run, in every command: the
box's two runs never gain the store's runs as "missing" ones."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from ckpt_tui.catalog.partial_views import WORTH_A_VIEW
from ckpt_tui.cli import main
from ckpt_tui.demo import DEFAULT_SEED, build_demo
from ckpt_tui.server import create_app
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from ckpt_tui.tui.view.groups import BackendGroup
from tests.support.live_server import run_server
from tests.support.tui import app_on, connection, runs_pane, screen_of, settle, shown

pytestmark = pytest.mark.usefixtures("quiet_environment")

STORE, BOX = "tinker-demo", "gpu-box"
RunsByBackend = dict[str, list[str]]


class Fleet(NamedTuple):
    logs: Path
    urls: dict[str, str]
    """Each backend's URL, by name."""


@pytest.fixture
def fleet(tmp_path: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch) -> Iterator[Fleet]:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    paths = build_demo(tmp_path / "demo", DEFAULT_SEED, clock)
    with ExitStack() as stack:
        urls = {}
        for name, folder in ((STORE, paths.store), (BOX, paths.box)):
            store = stack.enter_context(Store.open(folder, clock, create=False, lazy=True))
            urls[name] = stack.enter_context(run_server(create_app(store, sweep_interval=None)))
        yield Fleet(paths.logs, urls)


def backends(fleet: Fleet) -> list[str]:
    """Both backends by name, as the demo's own "list it" command names them."""
    return ["--no-tinker", *(f"--url={name}={url}" for name, url in fleet.urls.items())]


def run_command(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


async def what_the_app_shows(fleet: Fleet, clock: FixedClock) -> tuple[RunsByBackend, int, str]:
    """The runs pane's runs under each backend's row, the missing rows of the all-checkpoints
    view (key 2), and the header's totals."""
    app = app_on([connection(url, name) for name, url in fleet.urls.items()], fleet.logs, clock)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        # A backend loaded while another still loads shows within WORTH_A_VIEW s.
        await pilot.pause(WORTH_A_VIEW)
        await settle(pilot)
        runs: RunsByBackend = {}
        for entry in runs_pane(app).rows:
            if isinstance(entry, BackendGroup):
                runs[entry.backend] = []
            else:
                runs[entry.backend].append(entry.display_name)
        header = str(screen_of(app).query_one("#header-line").render())
        await pilot.press("2")
        await settle(pilot)
        missing = sum(1 for row in shown(app) if row.is_missing)
    return runs, missing, header


def test_every_command_lists_the_runs_and_totals_the_app_shows(
    fleet: Fleet, clock: FixedClock, capsys: pytest.CaptureFixture[str]
) -> None:
    app_runs, app_missing, header = asyncio.run(what_the_app_shows(fleet, clock))
    assert len(app_runs[BOX]) == 2, app_runs  # the box holds two runs, and no log names them
    run_count = sum(len(names) for names in app_runs.values())
    assert f"{run_count} runs" in header, app_runs
    found = re.search(r"([\d,]+) checkpoints", header)
    assert found is not None, header
    stored = int(found[1].replace(",", ""))
    logs = ["--log-dir", str(fleet.logs)]

    document: Any = json.loads(run_command(capsys, "ls", *backends(fleet), *logs, "--json"))
    json_runs = {name: sorted(run["display_name"] for run in document["runs"]
                              if run["backend"]["name"] == name) for name in app_runs}  # fmt: skip
    assert json_runs == {name: sorted(names) for name, names in app_runs.items()}
    totals = document["totals"]
    assert (totals["runs"], totals["checkpoints"], totals["missing"]) == (
        run_count, stored, app_missing
    )  # fmt: skip
    per_backend = {b["name"]: (b["totals"]["runs"], b["totals"]["missing"])
                   for b in document["backends"]}  # fmt: skip
    assert per_backend[BOX] == (2, 0)

    text = run_command(capsys, "ls", *backends(fleet), *logs)
    headings = re.findall(r"^== (\S+): .*: (\d+) runs, (\d+) checkpoints", text, re.M)
    assert [(name, int(count)) for name, count, _ in headings] == [
        (name, len(names)) for name, names in app_runs.items()
    ]
    assert sum(int(count) for _, _, count in headings) == stored
    assert len(re.findall(r"  missing(  |$)", text, re.M)) == app_missing  # STATE cells

    argv = ["prune", *backends(fleet), *logs, "--dry-run", "--json", "--keep-last", "1"]
    plan: Any = json.loads(run_command(capsys, *argv))
    planned = {backend["name"]: backend["totals"]["runs"] for backend in plan["backends"]}
    assert planned == {name: len(names) for name, names in app_runs.items()}
    assert (plan["totals"]["runs"], plan["totals"]["checkpoints"]) == (run_count, stored)

    listed: Any = json.loads(run_command(capsys, "backends", *backends(fleet), "--json"))
    assert {b["name"]: b["runs"] for b in listed["backends"]} == {
        name: len(names) for name, names in app_runs.items()
    }
    assert sum(b["checkpoints"] for b in listed["backends"]) == stored
