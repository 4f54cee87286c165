"""`--project ID`: the server lists one project's runs (`project_id`, from run.json, else the
store's one project "default"); ls, prune and the TUI see only that project."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from textual.widgets import Static

from ckpt_tui.cli import main
from ckpt_tui.client import Endpoint
from ckpt_tui.server import create_app
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import SYSTEM_CLOCK
from tests.support.live_server import run_server
from tests.support.tui import app_on, connection, settle

PROJECTS = {"a1": "alpha", "a2": "alpha", "d1": None}


@pytest.fixture
def projects_url(store: Store) -> Iterator[str]:
    start = store.clock.now() - timedelta(hours=1)
    for n, (run_id, project) in enumerate(PROJECTS.items()):
        extra = {} if project is None else {"project_id": project}
        store.create_run(run_id, "Qwen/Qwen3-8B", lora_rank=8, created=start, extra=extra)
        for c in range(3):
            created = start + timedelta(minutes=10 * n + c)
            store.add_checkpoint(run_id, f"weights/{c:04d}", {"a.bin": b"x"}, created=created)
    with run_server(create_app(store, sweep_interval=None)) as url:
        yield url


pytestmark = pytest.mark.usefixtures("quiet_environment")


def listed(url: str, **params: str) -> httpx.Response:
    return httpx.get(f"{url}/api/v1/training_runs", params=params)


def test_the_server_lists_one_project_s_runs(projects_url: str) -> None:
    alpha = listed(projects_url, project_id="alpha").json()
    assert sorted(run["training_run_id"] for run in alpha["training_runs"]) == ["a1", "a2"]
    assert alpha["cursor"]["total_count"] == 2
    default = listed(projects_url, project_id="default").json()
    assert [run["training_run_id"] for run in default["training_runs"]] == ["d1"]
    assert listed(projects_url, project_id="nope").json()["training_runs"] == []
    assert listed(projects_url).json()["cursor"]["total_count"] == 3
    empty = listed(projects_url, project_id=" ")
    assert empty.status_code == 400 and "project_id" in empty.json()["detail"]


@pytest.mark.parametrize("before", [True, False])
def test_ls_shows_only_the_project(
    projects_url: str, capsys: pytest.CaptureFixture[str], before: bool
) -> None:
    project = ["--project", "alpha"]
    argv = [*project, "ls"] if before else ["ls", *project]
    assert main([*argv, "--url", projects_url, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["backend"] == f"{projects_url} (no API key, project alpha)"
    assert sorted(run["run_id"] for run in document["runs"]) == ["a1", "a2"]
    assert document["totals"]["checkpoints"] == 6


def test_prune_acts_only_inside_the_project(
    projects_url: str, store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["prune", "--url", projects_url, "--project", "alpha", "--keep-last", "1", "--yes"])
    assert code == 0, capsys.readouterr()
    left = {run: len(store.list_run_checkpoints(run)) for run in PROJECTS}
    assert left == {"a1": 1, "a2": 1, "d1": 3}


def test_an_empty_project_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["ls", "--url", "http://127.0.0.1:9", "--project", ""])
    assert caught.value.code == 2
    assert "--project" in capsys.readouterr().err


async def test_the_tui_names_the_project_in_its_header(projects_url: str, tmp_path: Path) -> None:
    backend = Endpoint.remote(projects_url, project="alpha")
    app = app_on([connection(backend)], None, SYSTEM_CLOCK)
    async with app.run_test(size=(160, 36)) as pilot:
        await settle(pilot)
        header = str(app.screen.query_one("#header-line", Static).content)
        assert header.startswith("ckpt-tui  2 runs · 6 checkpoints")
        assert header.endswith("(no API key, project alpha)")
