"""`ckpt-tui ls --json`: one strict JSON document in the published schema (`ckpt-tui.ls/1`)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from typing import Any

import pytest

from ckpt_tui.api_types import format_time
from ckpt_tui.catalog.snapshot import Snapshot
from ckpt_tui.cli import main
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support.demo_fixture import ServedDemo
from tests.support.live_server import bind_loopback_socket

TOP_KEYS = [
    "schema", "backend", "generated_at", "complete", "totals", "backends", "runs", "problems"
]  # fmt: skip
BACKEND_KEYS = ["name", "kind", "url", "described", "complete", "error", "totals"]
TOTAL_KEYS = ["runs", "checkpoints", "missing", "size_bytes", "size_is_exact", "size_unknown_count"]
RUN_KEYS = [
    "backend", "run_id", "display_name", "base_model", "is_lora", "lora_rank", "log_dir",
    "on_server", "checkpoint_count", "missing_count", "size_bytes", "size_is_exact",
    "size_unknown_count", "soonest_expiry", "checkpoints",
]  # fmt: skip
CHECKPOINT_KEYS = [
    "checkpoint_id", "name", "kind", "tinker_path", "state", "step", "epoch", "metrics",
    "size_bytes", "size_kind", "size_basis", "created", "expires_at", "public", "final", "best",
    "resume_point", "rolling", "user_metadata",
]  # fmt: skip


pytestmark = pytest.mark.usefixtures("quiet_environment")


def strict_json(text: str) -> Any:
    """Parse as standard JSON: NaN and Infinity are not JSON and fail here."""

    def refuse(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def ls_json(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    assert main(["ls", "--json", *args]) == 0
    return strict_json(capsys.readouterr().out)


def test_the_document_has_the_published_keys_in_order(
    demo: ServedDemo, capsys: pytest.CaptureFixture[str], clock: FixedClock
) -> None:
    document = ls_json(capsys, "--url", demo.url, "--log-dir", str(demo.paths.logs))
    assert list(document) == TOP_KEYS
    assert document["schema"] == "ckpt-tui.ls/1"
    assert document["generated_at"] == format_time(clock.now()) and document["complete"] is True
    assert list(document["totals"]) == TOTAL_KEYS
    [backend] = document["backends"]
    assert list(backend) == BACKEND_KEYS and list(backend["totals"]) == TOTAL_KEYS
    assert backend["totals"] == document["totals"] and backend["url"] == demo.url
    assert all(list(run) == RUN_KEYS for run in document["runs"])
    assert all(run["backend"] == {"name": backend["name"], "kind": "url", "url": demo.url}
               for run in document["runs"])  # fmt: skip
    rows = [row for run in document["runs"] for row in run["checkpoints"]]
    assert all(list(row) == CHECKPOINT_KEYS for row in rows)
    stored = [row for row in rows if row["state"] != "missing"]
    live = demo.store.list_checkpoints(0, 10_000)[0]
    assert sorted(row["tinker_path"] for row in stored) == sorted(c.tinker_path for c in live)
    assert document["totals"]["checkpoints"] == len(stored)
    assert document["totals"]["size_bytes"] == sum(row["size_bytes"] for row in stored)
    by_path = {c.tinker_path: c for c in live}
    for row in stored:
        assert row["created"] == format_time(by_path[row["tinker_path"]].time)


def test_a_nan_metric_is_null_so_the_document_stays_json(
    store: Store, server_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store.create_run("run-a", "Qwen/Qwen3-8B", lora_rank=32)
    store.add_checkpoint("run-a", "weights/000001", user_metadata={"eval_loss": "nan"})
    store.add_checkpoint("run-a", "weights/000002", user_metadata={"eval_loss": "0.5"})
    document = ls_json(capsys, "--url", server_url)
    metrics = [row["metrics"] for row in document["runs"][0]["checkpoints"]]
    assert metrics == [{"eval_loss": None}, {"eval_loss": 0.5}]


def test_ls_and_prune_never_format_the_snapshot(
    demo: ServedDemo, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """repr() of 100,000 checkpoints takes seconds and hundreds of MB (asyncio.run used to make
    one on its way out)."""
    formatted: list[str] = []

    def spy(snapshot: Snapshot) -> str:
        formatted.append("repr")
        return "<snapshot>"

    monkeypatch.setattr(Snapshot, "__repr__", spy)
    ls_json(capsys, "--url", demo.url, "--log-dir", str(demo.paths.logs))
    assert main(["prune", "--json", "--url", demo.url, "--keep-last", "1"]) == 0
    assert formatted == []


class TerminalBytes(io.BytesIO):
    def isatty(self) -> bool:
        return True


def test_piped_the_document_is_one_line_and_on_a_terminal_indented_alike(
    demo: ServedDemo, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ["ls", "--json", "--url", demo.url, "--log-dir", str(demo.paths.logs)]
    assert main(args) == 0
    piped = capsys.readouterr().out
    terminal = TerminalBytes()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(terminal, write_through=True))
    assert main(args) == 0
    shown = terminal.getvalue().decode()
    assert piped.count("\n") == 1 and piped.endswith("}\n")
    assert shown.startswith('{\n  "schema": ') and shown.count("\n") > 100
    assert strict_json(piped) == strict_json(shown)


def test_the_executable_prints_what_main_does_and_exits_alike(
    demo: ServedDemo, capsys: pytest.CaptureFixture[str]
) -> None:
    """The executable ends the process as soon as its output is out (`cli.common.finish`):
    the same whole document and exit code, and an incomplete list still fails, saying why."""
    argv = ["ls", "--json", "--url", demo.url, "--log-dir", str(demo.paths.logs)]
    in_process = ls_json(capsys, *argv[2:])
    buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    ran = subprocess.run(
        [sys.executable, "-m", "ckpt_tui", *argv], capture_output=True, text=True, env=buffered
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.endswith("}\n") and strict_json(ran.stdout) == in_process
    assert in_process["runs"]
    nothing = bind_loopback_socket()  # bound, never listening: connections are refused
    try:
        dead = f"dead=http://127.0.0.1:{nothing.getsockname()[1]}"
        ran = subprocess.run(
            [sys.executable, "-m", "ckpt_tui", *argv, "--url", dead],
            capture_output=True,
            text=True,
            env=buffered,
        )
    finally:
        nothing.close()
    assert ran.returncode == 1
    assert strict_json(ran.stdout)["complete"] is False
    assert "this list is not whole" in ran.stderr and "dead:" in ran.stderr
