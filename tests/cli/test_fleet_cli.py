"""`ls`, `prune` and `backends` across several backends at once, against real servers: two
`ckpt-tui serve` apps on loopback ports with different keys (box1 answers billing, box2 is
read-only in the config), one local store, and one URL where nothing listens."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ckpt_tui.cli import main
from ckpt_tui.client import retry
from ckpt_tui.server import create_app
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support.faulty_app import FaultyApp
from tests.support.live_server import bind_loopback_socket, run_server
from tests.support.seed import seed_backend
from tests.support.trickle_server import trickle_server

KEY1, KEY2 = "tml-key-of-box1", "tml-key-of-box2"
RATE1, RATE2 = 0.05, 0.25
PER_RUN = 3


def count(store: Store) -> int:
    return store.list_checkpoints(0, 1000)[1]


@dataclass
class Boxes:
    box1: FaultyApp
    box2: FaultyApp
    store1: Store
    store2: Store
    scratch: Path
    url1: str
    url2: str
    dead_url: str
    config: Path
    clock: FixedClock

    def scratch_count(self) -> int:
        with Store.open(self.scratch, self.clock, create=False, readonly=True) as store:
            return count(store)

    def write_config(self, *, dead: bool = True) -> None:
        text = f"""
[backends.box1]
url = "{self.url1}"
api_key_env = "BOX1_KEY"

[backends.box2]
url = "{self.url2}"
api_key_file = "{self.config.parent / "box2.key"}"
storage_rate = {RATE2}
readonly = true

[backends.scratch]
local = "{self.scratch}"
"""
        if dead:
            text += f'\n[backends.dead]\nurl = "{self.dead_url}"\n'
        self.config.write_text(text)


@pytest.fixture
def boxes(tmp_path: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch) -> Iterator[Boxes]:
    stores = {name: Store.open(tmp_path / name, clock) for name in ("box1", "box2", "scratch")}
    for name, store in stores.items():
        seed_backend(store, name, PER_RUN, size=2**20)
    stores["scratch"].close()  # a local store is opened by the command itself
    monkeypatch.setenv("TINKER_COOKBOOK_RUNS_DIR", str(tmp_path / "no-runs"))
    monkeypatch.setenv("BOX1_KEY", KEY1)
    for name in ("CKPT_TUI_READONLY", "CKPT_TUI_STORAGE_RATE"):
        monkeypatch.delenv(name, raising=False)
    config_home = tmp_path / "config-home"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config_home))
    config = config_home / "ckpt-tui" / "config.toml"
    config.parent.mkdir(parents=True)
    (config.parent / "box2.key").write_text(KEY2 + "\n")
    box1 = FaultyApp(
        create_app(stores["box1"], api_key=KEY1, sweep_interval=None, storage_rate=RATE1)
    )
    box2 = FaultyApp(create_app(stores["box2"], api_key=KEY2, sweep_interval=None))
    nothing = bind_loopback_socket()  # bound, never listening: connections are refused
    dead_url = f"http://127.0.0.1:{nothing.getsockname()[1]}"
    try:
        with run_server(box1) as url1, run_server(box2) as url2:
            found = Boxes(
                box1, box2, stores["box1"], stores["box2"], tmp_path / "scratch",
                url1, url2, dead_url, config, clock,
            )  # fmt: skip
            found.write_config()
            yield found
    finally:
        nothing.close()
        stores["box1"].close()
        stores["box2"].close()


def run_json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, Any, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def keys_seen(app: FaultyApp) -> set[str | None]:
    """The keys sent, but to the open health check (which asks for none: it says which
    store a server serves, and several backends are compared by it)."""
    sent = zip(app.requests, app.headers, strict=True)
    return {headers.get("x-api-key") for (_, path), headers in sent if "/healthz" not in path}


def test_ls_json_spans_every_configured_backend(
    boxes: Boxes, capsys: pytest.CaptureFixture[str]
) -> None:
    code, document, err = run_json(capsys, ["ls", "--json"])
    assert code == 1  # the dead one makes the list not whole
    assert "dead: could not connect" in err and "SSH tunnel" in err
    assert document["complete"] is False
    backends = {b["name"]: b for b in document["backends"]}
    assert list(backends) == ["box1", "box2", "scratch", "dead"]
    assert backends["box1"]["url"] == boxes.url1 and backends["scratch"]["kind"] == "local"
    assert backends["scratch"]["path"] == str(boxes.scratch) and "url" not in backends["scratch"]
    assert backends["dead"]["error"] and backends["dead"]["complete"] is False
    assert all(backends[name]["complete"] for name in ("box1", "box2", "scratch"))
    assert "$BOX1_KEY" in backends["box1"]["described"]
    runs = {(run["backend"]["name"], run["run_id"]) for run in document["runs"]}
    assert runs == {
        (name, f"{name}-run-{r}") for name in ("box1", "box2", "scratch") for r in range(2)
    }
    for name in ("box1", "box2", "scratch"):
        assert backends[name]["totals"]["checkpoints"] == 2 * PER_RUN
    assert backends["dead"]["totals"]["checkpoints"] == 0
    assert document["totals"]["checkpoints"] == 3 * 2 * PER_RUN
    total_bytes = sum(b["totals"]["size_bytes"] for b in document["backends"])
    assert document["totals"]["size_bytes"] == total_bytes == 3 * 2 * PER_RUN * 2**20
    assert any(problem.startswith("dead: ") for problem in document["problems"])
    assert keys_seen(boxes.box1) == {KEY1} and keys_seen(boxes.box2) == {KEY2}


def test_ls_text_groups_by_backend(boxes: Boxes, capsys: pytest.CaptureFixture[str]) -> None:
    boxes.write_config(dead=False)
    assert main(["ls"]) == 0
    out = capsys.readouterr().out
    headings = [line for line in out.splitlines() if line.startswith("== ")]
    assert [heading.split(":")[0] for heading in headings] == ["== box1", "== box2", "== scratch"]
    assert "2 runs, 6 checkpoints, 6.0 MiB ==" in headings[0]
    boxes.write_config(dead=True)
    assert main(["ls"]) == 1
    out = capsys.readouterr().out
    assert f"== dead: {boxes.dead_url} (no API key): FAILED ==" in out
    assert out.count("could not connect") == 1  # under its heading, not again as a warning


def test_prune_dry_run_plans_each_backend_at_its_own_rate(
    boxes: Boxes, capsys: pytest.CaptureFixture[str]
) -> None:
    code, document, _ = run_json(capsys, ["prune", "--keep-last", "1", "--json"])
    assert code == 1  # dead is not planned, box2's part would be refused
    parts = {b["name"]: b for b in document["backends"]}
    assert parts["box1"]["rate_source"] == "billing endpoint"
    assert parts["box1"]["storage_rate_usd_per_gib_month"] == RATE1
    assert parts["box2"]["rate_source"] == "set by you"
    assert parts["box2"]["storage_rate_usd_per_gib_month"] == RATE2
    assert parts["scratch"]["rate_source"] == "default"
    assert parts["scratch"]["totals"]["monthly_saving"] is None
    assert parts["dead"]["planned"] is False and "could not connect" in parts["dead"]["not_planned"]
    assert parts["box2"]["refused"] and "read-only" in parts["box2"]["refused"]
    for name in ("box1", "box2", "scratch"):
        assert parts[name]["totals"]["delete"] == 2 * (PER_RUN - 1)
    assert document["totals"]["delete"] == 3 * 2 * (PER_RUN - 1)
    saving = parts["box1"]["totals"]["monthly_saving"]["usd_per_month"]
    assert saving == pytest.approx(4 * 2**20 / 2**30 * RATE1, abs=1e-6)
    overall = document["totals"]["monthly_saving"]
    assert overall["at_least"] is True  # scratch's share has no rate
    assert overall["usd_per_month"] == pytest.approx(4 * 2**20 / 2**30 * (RATE1 + RATE2), abs=1e-6)
    assert document["storage_rate_usd_per_gib_month"] is None  # the rates differ
    assert {run["backend"]["name"] for run in document["runs"]} == {"box1", "box2", "scratch"}
    assert document["mode"] == "dry-run" and document["outcomes"] is None
    assert count(boxes.store1) == count(boxes.store2) == boxes.scratch_count() == 2 * PER_RUN


def test_prune_yes_refuses_everything_while_one_list_is_not_whole(
    boxes: Boxes, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["prune", "--keep-last", "1", "--yes"]) == 1
    err = capsys.readouterr().err
    assert "not every backend's list is whole (dead: could not connect" in err
    assert "Nothing was deleted on any backend" in err
    assert boxes.box1.count("DELETE") == boxes.box2.count("DELETE") == 0
    assert count(boxes.store1) == count(boxes.store2) == boxes.scratch_count() == 2 * PER_RUN


def test_prune_yes_names_every_backend_and_deletes_through_each_owner(
    boxes: Boxes, capsys: pytest.CaptureFixture[str]
) -> None:
    boxes.write_config(dead=False)
    code, document, err = run_json(capsys, ["prune", "--keep-last", "1", "--yes", "--json"])
    assert code == 1  # box2's part was refused
    assert f"Deleting 4 checkpoints on box1 at {boxes.url1} (key from $BOX1_KEY)" in err
    assert "Refused: box2 is read-only: nothing is deleted there (4 planned, refused)" in err
    assert f"Deleting 4 checkpoints on scratch at local store {boxes.scratch}" in err
    assert count(boxes.store1) == 2 and boxes.scratch_count() == 2
    assert count(boxes.store2) == 2 * PER_RUN and boxes.box2.count("DELETE") == 0
    outcomes = document["outcomes"]
    assert sorted({o["backend"] for o in outcomes}) == ["box1", "scratch"]
    assert all(o["ok"] for o in outcomes) and len(outcomes) == 8
    assert all(o["tinker_path"].startswith(f"tinker://{o['backend']}-run-") for o in outcomes)
    parts = {b["name"]: b for b in document["backends"]}
    assert parts["box2"]["totals"]["deleted"] == 0 and parts["box1"]["totals"]["deleted"] == 4
    assert document["totals"]["deleted"] == 8 and document["totals"]["failed"] == 0


def test_prune_on_the_command_line_across_a_server_and_a_store(
    boxes: Boxes, capsys: pytest.CaptureFixture[str]
) -> None:
    """--url and --local given on the command line (the config is then not used)."""
    argv = ["--url", f"one={boxes.url1}", "--api-key", KEY1, "prune", "--local", str(boxes.scratch)]
    assert main([*argv, "--keep-last", "2", "--yes"]) == 0
    out = capsys.readouterr().out
    assert f"Deleting 2 checkpoints on one at {boxes.url1} (key from --api-key flag):" in out
    assert f"Deleting 2 checkpoints on scratch at local store {boxes.scratch}:" in out
    assert count(boxes.store1) == boxes.scratch_count() == 4
    assert boxes.box2.requests == []  # the configured box2 was not opened


def test_backends_lists_each_with_its_status(
    boxes: Boxes, capsys: pytest.CaptureFixture[str]
) -> None:
    code, document, _ = run_json(capsys, ["backends", "--json"])
    assert code == 1
    assert document["schema"] == "ckpt-tui.backends/1"
    assert document["config"] == str(boxes.config)
    found = {b["name"]: b for b in document["backends"]}
    assert [found[n]["reachable"] for n in ("box1", "box2", "scratch", "dead")] == [
        True,
        True,
        True,
        False,
    ]
    assert found["box1"]["checkpoints"] == 2 * PER_RUN and found["box1"]["runs"] == 2
    assert found["box1"]["latency_ms"] > 0 and found["dead"]["latency_ms"] is None
    assert found["box2"]["readonly"] is True and found["box1"]["rate_source"] == "billing endpoint"
    assert "could not connect" in found["dead"]["error"]
    assert main(["backends"]) == 1
    text = capsys.readouterr().out
    assert "reachable, read-only" in text and "FAILED" in text and "$0.05/GiB-month" in text


def test_a_backend_that_trickles_its_answers_is_an_error_and_the_others_load(
    boxes: Boxes, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that sent headers, then a byte now and then, hung `ls` and `backends` for good
    (each read came in time): now each attempt has a deadline (cut to 1 s here), past it that
    backend's entry is a timeout error, and the others are listed."""
    monkeypatch.setattr(retry, "ATTEMPT_DEADLINE", 1.0, raising=False)
    with trickle_server() as slow:
        boxes.write_config(dead=False)
        with boxes.config.open("a") as config:
            config.write(f'\n[backends.slow]\nurl = "{slow.url}"\n')
        code, document, _ = run_json(capsys, ["backends", "--json"])
        assert code == 1
        found = {b["name"]: b for b in document["backends"]}
        assert found["box1"]["reachable"] is True and found["slow"]["reachable"] is False
        assert f"{slow.url} did not finish answering" in found["slow"]["error"]
        code, document, err = run_json(capsys, ["ls", "--json"])
        assert code == 1 and "slow:" in err
        listed = {b["name"]: b for b in document["backends"]}
        assert listed["box1"]["complete"] and listed["box1"]["totals"]["checkpoints"] == 2 * PER_RUN
        assert listed["slow"]["complete"] is False and "did not finish" in listed["slow"]["error"]


def test_a_configured_key_that_is_not_there_is_that_backends_error(
    boxes: Boxes, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    boxes.write_config(dead=False)
    monkeypatch.delenv("BOX1_KEY")
    code, document, _ = run_json(capsys, ["ls", "--json"])
    assert code == 1
    backends = {b["name"]: b for b in document["backends"]}
    assert "$BOX1_KEY is not set" in backends["box1"]["error"]
    assert backends["box2"]["complete"] and backends["scratch"]["complete"]
    assert boxes.box1.requests == []  # nothing was sent without its key


def test_a_bad_config_is_exit_2_naming_file_line_and_fix(
    boxes: Boxes, capsys: pytest.CaptureFixture[str]
) -> None:
    boxes.config.write_text('[backends.box1]\nurl = "http://127.0.0.1:1"\napi_key = "tml-x"\n')
    assert main(["ls"]) == 2
    err = capsys.readouterr().err
    assert f"{boxes.config}, line 3: [backends.box1] api_key: a key is never written" in err
    assert "tml-x" not in err


def test_backend_picks_which_configured_backends_prune_acts_on(
    boxes: Boxes, capsys: pytest.CaptureFixture[str]
) -> None:
    """With a dead backend configured, --backend leaves it out so the others can be pruned."""
    argv = ["--backend", "box1", "prune", "--backend", "scratch", "--keep-last", "1", "--yes"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "Deleting 4 checkpoints on box1 at" in out and "on scratch at" in out
    assert "dead" not in out and boxes.box2.requests == []
    assert count(boxes.store1) == boxes.scratch_count() == 2
    assert main(["ls", "--backend", "nope"]) == 2
    assert "--backend nope: the config file" in capsys.readouterr().err
