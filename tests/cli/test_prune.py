"""`ckpt-tui prune` on the demo over a real server: dry run, --yes, failures, --json, refusals."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ckpt_tui.cli import main
from ckpt_tui.server import create_app
from ckpt_tui.store import Store
from tests.support.demo_fixture import ServedDemo
from tests.support.faulty_app import FaultyApp
from tests.support.live_server import run_server

SFT = "sl/llama-8b-tulu3"  # 9 periodic saves and a final, each a state and a sampler
TOP_KEYS = {
    "schema",
    "backend",
    "generated_at",
    "mode",
    "policy",
    "storage_rate_usd_per_gib_month",
    "totals",
    "backends",
    "runs",
    "outcomes",
    "problems",
}
TOTAL_KEYS = {"runs", "checkpoints", "keep", "delete", "freed", "kept", "monthly_saving"}
DECISION_KEYS = {"tinker_path", "checkpoint_id", "kind", "step", "keep", "reasons", "size_bytes"}


pytestmark = pytest.mark.usefixtures("quiet_environment")


def live_paths(store: Store) -> set[str]:
    return {c.tinker_path for c in store.list_checkpoints(0, 10_000)[0]}


def sft_prefix(demo: ServedDemo) -> str:
    """'tinker://RUN_ID/' of the SFT run, from the first record of its log dir."""
    first = (demo.paths.logs / SFT / "checkpoints.jsonl").read_text().splitlines()[0]
    state_path: str = json.loads(first)["state_path"]
    return state_path.rsplit("/", 2)[0] + "/"


def prune(url: str, demo: ServedDemo, *args: str) -> int:
    return main(["prune", "--url", url, "--log-dir", str(demo.paths.logs), *args])


def prune_json(
    url: str, demo: ServedDemo, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, dict[str, Any]]:
    code = prune(url, demo, "--json", *args)
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return code, document


def planned_deletes(document: dict[str, Any]) -> set[str]:
    return {d["tinker_path"] for run in document["runs"] for d in run["decisions"] if not d["keep"]}


def test_dry_run_prints_the_plan_and_changes_nothing(
    demo: ServedDemo, capsys: pytest.CaptureFixture[str]
) -> None:
    before = live_paths(demo.store)
    code = prune(demo.url, demo, "--run", SFT, "--keep-last", "2", "--storage-rate", "0.10")
    out = capsys.readouterr().out
    assert code == 0
    lines = out.splitlines()
    assert sum(line.startswith("  DELETE  ") for line in lines) == 16
    kept = [line for line in lines if line.startswith("  keep  ")]
    assert len(kept) == 4 and sum("final" in line for line in kept) == 2
    assert any("weights/final" in line and "resume point" in line for line in kept)
    total = next(line for line in lines if line.startswith("Total: delete 16 of 20 checkpoints"))
    assert "/mo)" in total and "$" in total
    assert lines[-1] == (
        "Dry run: nothing was deleted. Run again with --yes to delete these 16 checkpoints."
    )
    assert live_paths(demo.store) == before


def test_errors_found_after_loading_exit_2(
    demo: ServedDemo, capsys: pytest.CaptureFixture[str]
) -> None:
    before = live_paths(demo.store)
    assert prune(demo.url, demo, "--keep-best", "1", "--metric", "eval_los", "--yes") == 2
    assert "no checkpoint has metric 'eval_los'; metrics found: eval_loss" in (
        capsys.readouterr().err
    )
    assert prune(demo.url, demo, "--run", "nope", "--keep-last", "1", "--yes") == 2
    assert "no run matches nope; known runs:" in capsys.readouterr().err
    assert live_paths(demo.store) == before


def test_yes_deletes_exactly_the_plan_and_a_second_plan_is_empty(
    demo: ServedDemo, capsys: pytest.CaptureFixture[str]
) -> None:
    before = live_paths(demo.store)
    policy = ("--keep-last", "1", "--keep-best", "1", "--metric", "eval_loss")
    code, dry = prune_json(demo.url, demo, capsys, *policy)
    assert code == 0 and set(dry) == TOP_KEYS and set(dry["totals"]) >= TOTAL_KEYS
    assert dry["schema"] == "ckpt-tui.prune/1" and dry["mode"] == "dry-run"
    assert dry["outcomes"] is None and dry["totals"]["monthly_saving"] is None
    assert set(dry["runs"][0]["decisions"][0]) >= DECISION_KEYS
    planned = planned_deletes(dry)
    assert len(planned) == dry["totals"]["delete"] > 0 and live_paths(demo.store) == before

    code, done = prune_json(demo.url, demo, capsys, *policy, "--yes")
    assert code == 0 and done["mode"] == "delete" and planned_deletes(done) == planned
    assert {o["tinker_path"] for o in done["outcomes"]} == planned
    assert all(o["ok"] and o["status"] is None for o in done["outcomes"])
    assert done["totals"]["deleted"] == len(planned) and done["totals"]["failed"] == 0
    assert live_paths(demo.store) == before - planned

    code, again = prune_json(demo.url, demo, capsys, *policy)
    assert code == 0 and again["totals"]["delete"] == 0
    assert again["totals"]["keep"] == len(before) - len(planned)


def test_failed_deletes_are_reported_per_item_and_exit_1(
    demo: ServedDemo, capsys: pytest.CaptureFixture[str]
) -> None:
    faulty = FaultyApp(create_app(demo.store, sweep_interval=None))
    faulty.fail_names({"000300"}, status=403)  # refused, so not retried
    with run_server(faulty) as url:
        code = prune(url, demo, "--run", SFT, "--keep-last", "2", "--yes")
        out = capsys.readouterr().out
        assert code == 1
        failed = [line for line in out.splitlines() if line.startswith("FAILED  ")]
        assert len(failed) == 2 and all("/000300: " in line for line in failed)
        assert out.splitlines()[-1] == "Deleted 14 of 16 checkpoints; 2 failed."
        left = {path for path in live_paths(demo.store) if path.startswith(sft_prefix(demo))}
        assert {path.split("/", 3)[-1] for path in left} == {
            f"{segment}/{name}"
            for segment in ("weights", "sampler_weights")
            for name in ("000300", "000900", "final")
        }

        code, document = prune_json(url, demo, capsys, "--run", SFT, "--keep-last", "2", "--yes")
    assert code == 1 and document["totals"]["failed"] == 2 and document["totals"]["deleted"] == 0
    assert [(o["ok"], o["status"]) for o in document["outcomes"]] == [(False, 403), (False, 403)]
    assert all("000300" in o["message"] for o in document["outcomes"])


def test_a_prune_sends_no_request_it_does_not_need_before_deleting(demo: ServedDemo) -> None:
    """The one-item list request that measures a backend's latency (which the app and
    `backends` show, and no prune) is not sent: it cost a round trip before the first
    delete."""
    faulty = FaultyApp(create_app(demo.store, sweep_interval=None))
    with run_server(faulty) as url:
        assert prune(url, demo, "--run", SFT, "--keep-last", "2", "--yes") == 0
    asked = list(zip(faulty.requests, faulty.queries, strict=True))
    assert (("GET", "/api/v1/checkpoints"), "limit=1&offset=0") not in asked
    assert [method for (method, _), _ in asked].count("DELETE") == 16


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "this policy keeps nothing but the protected checkpoints"),
        (["--no-keep-final"], "pass --delete-all-unprotected"),
        (["--keep-best", "2"], "--keep-best K and --metric KEY go together"),
        (["--metric", "eval_loss"], "--keep-best K and --metric KEY go together"),
        (["--keep-last", "1", "--storage-rate", "cheap"], "--storage-rate must be a number"),
    ],
)
def test_refused_policies_exit_2_before_connecting(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # port 9 (discard) has no server: a refusal must come before any connection
    assert main(["prune", "--url", "http://127.0.0.1:9", *args]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "args",
    [
        ["--keep-last", "0"],
        ["--keep-every", "x"],
        ["--keep-last", "1", "--keep-expiring-after", "2026-13-01"],
        ["--keep-last", "1", "--dry-run", "--yes"],
    ],
)
def test_malformed_arguments_are_usage_errors(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["prune", "--url", "http://127.0.0.1:9", *args])
    assert exited.value.code == 2 and "ckpt-tui prune: error:" in capsys.readouterr().err
