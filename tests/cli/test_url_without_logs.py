"""`--url` with no training logs: the status line says none were found and how to add them,
and a run no log names shows its user_metadata name when the server has one."""

from __future__ import annotations

from pathlib import Path

import pytest

from ckpt_tui.cli import main as cli_main
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support.tui import make_app, runs, screen_text, settle


@pytest.fixture
def named_run(store: Store) -> Store:
    store.create_run("28aaca51-0b1c:train:0", "Qwen/Qwen3-8B", user_metadata={"name": "my-sft"})
    store.add_checkpoint("28aaca51-0b1c:train:0", "weights/0001", {"adapter.bin": b"x" * 16})
    store.create_run("unnamed-run", "Qwen/Qwen3-8B")
    store.add_checkpoint("unnamed-run", "weights/0001", {"adapter.bin": b"x" * 16})
    return store


async def test_no_logs_is_said_with_how_to_add_them(
    named_run: Store, server_url: str, clock: FixedClock, tmp_path: Path
) -> None:
    app = make_app(server_url, tmp_path / "no-logs-here", clock)
    async with app.run_test(size=(300, 36)) as pilot:
        await settle(pilot)
        text = screen_text(app)
        names = sorted(run.display_name for run in runs(app).rows)
    assert "no training logs found" in text
    assert "--log-dir" in text and "TINKER_COOKBOOK_RUNS_DIR" in text
    assert str(tmp_path / "no-logs-here") in text  # where it looked
    assert names == ["my-sft", "unnamed-run"]
    assert "my-sft" in text


async def test_the_hint_is_gone_when_logs_are_found(
    named_run: Store, server_url: str, clock: FixedClock, tmp_path: Path
) -> None:
    logs = tmp_path / "logs" / "some-run"
    logs.mkdir(parents=True)
    (logs / "checkpoints.jsonl").write_text('{"name": "0001", "batch": 1}\n')
    app = make_app(server_url, tmp_path / "logs", clock)
    async with app.run_test(size=(300, 36)) as pilot:
        await settle(pilot)
        assert "no training logs found" not in screen_text(app)


def test_ls_names_the_run_by_its_metadata(
    named_run: Store, server_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    env_free = ["--log-dir", str(tmp_path / "none")]
    assert (
        cli_main(["ls", "--url", server_url, "--api-key", "k", *env_free, "--run", "my-sft"]) == 0
    )
    assert "my-sft" in capsys.readouterr().out
