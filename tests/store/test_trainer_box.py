"""A training box's folder written by transformers' Trainer, PEFT and save_pretrained.

The files in tests/fixtures/trainer_box/ were written by the real libraries
(scripts/make_trainer_box.py, transformers 5.24, peft 0.21, torch 2.13); the tests only read
them, so torch and transformers are not test dependencies. Trainer saved checkpoint-5 (epoch
1.25, the best by its metric) and checkpoint-10 (epoch 2.5, the resume point)."""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from ckpt_tui.cli import main as cli_main
from ckpt_tui.client import Endpoint
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support.clock import T0
from tests.support.layouts import written_long_ago
from tests.support.tui import app_on, connection, screen_text, settle, shown

FIXTURE = Path(__file__).parents[1] / "fixtures" / "trainer_box"
LLAMA = "llama (LlamaForCausalLM)"


@pytest.fixture
def box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TINKER_COOKBOOK_RUNS_DIR", str(tmp_path / "no-runs"))
    box = Path(shutil.copytree(FIXTURE, tmp_path / "box"))
    return written_long_ago(box, T0 - timedelta(days=1))  # a checkout's files are new


def ls_json(box: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert cli_main(["ls", "--local", str(box), "--json"]) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return {run["run_id"]: run for run in document["runs"]}


def by_name(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {ckpt["name"]: ckpt for ckpt in run["checkpoints"]}


def test_the_trainers_best_is_best_not_final(box: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trainer = by_name(ls_json(box, capsys)["trainer-out"])
    first, last = trainer["checkpoint-5"], trainer["checkpoint-10"]
    assert (first["best"], first["final"], first["resume_point"]) == (True, False, False)
    assert (last["best"], last["final"], last["resume_point"]) == (False, False, True)


def test_fractional_epochs_are_shown_as_recorded(
    box: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trainer = by_name(ls_json(box, capsys)["trainer-out"])
    assert trainer["checkpoint-5"]["epoch"] == 1.25
    assert trainer["checkpoint-10"]["epoch"] == 2.5


def test_base_models_come_from_the_config_files(
    box: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = ls_json(box, capsys)
    assert runs["trainer-out"]["base_model"] == LLAMA  # config.json: model_type, architectures
    assert runs["models"]["base_model"] == LLAMA  # save_pretrained
    adapters = runs["adapters"]  # adapter_config.json: base_model_name_or_path
    assert (adapters["base_model"], adapters["is_lora"], adapters["lora_rank"]) == (
        "models/tiny-llama",
        True,
        4,
    )


def test_keep_policies_protect_the_best_by_default(
    box: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def decisions(*extra: str) -> dict[str, tuple[bool, list[str]]]:
        args = ["prune", "--local", str(box), "--run", "trainer-out", "--keep-last", "1"]
        assert cli_main([*args, "--json", *extra]) == 0
        document = json.loads(capsys.readouterr().out)
        return {
            d["tinker_path"].rsplit("/", 1)[1]: (d["keep"], d["reasons"])
            for run in document["runs"]
            for d in run["decisions"]
        }

    assert decisions()["checkpoint-5"] == (True, ["flagged best"])
    assert decisions("--no-keep-flagged-best")["checkpoint-5"][0] is False


async def test_the_tui_flags_best_and_the_delete_dialog_warns(box: Path, clock: FixedClock) -> None:
    app = app_on([connection(Endpoint.local(box))], None, clock)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await pilot.press("2", "slash", *"checkpoint-5", "enter")
        await settle(pilot)
        [row] = shown(app)
        assert row.best and "best" in row.flags()
        text = screen_text(app)
        assert "1.25" in text  # the Ep column
        assert "best untracked" in text  # the Flags column
        assert "trainer-out · llama (LlamaForCausalLM) · state · untracked · best" in text
        await pilot.press("d")
        await pilot.pause()
        assert "is the best checkpoint of its run" in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
    assert (box / "trainer-out" / "checkpoint-5").is_dir()
