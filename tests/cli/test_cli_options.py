"""Global options mean the same before or after the subcommand, checked by which backend
really got the calls: two real servers (A is the environment's, B needs a key) and a local
store, each holding runs of its own. --readonly refuses every change in every command."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ckpt_tui.cli import main
from ckpt_tui.client import CheckpointClient, Endpoint, ReadOnlyError
from ckpt_tui.server import create_app
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from ckpt_tui.tui.app import CkptApp
from tests.support.faulty_app import FaultyApp
from tests.support.live_server import run_server
from tests.support.seed import seed_backend
from tests.support.tui import screen_of, settle

KEY_B = "tml-key-of-b"
PER_RUN = 4


def run_ids(store: Store) -> set[str]:
    return {c.run_id for c in store.list_checkpoints(0, 1000)[0]}


def count(store: Store) -> int:
    return store.list_checkpoints(0, 1000)[1]


@dataclass
class Backends:
    a: FaultyApp
    b: FaultyApp
    store_a: Store
    store_b: Store
    store_l: Store
    url_a: str
    url_b: str
    local: Path

    def calls(self) -> tuple[int, int]:
        return len(self.a.requests), len(self.b.requests)


@pytest.fixture
def backends(
    tmp_path: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Backends]:
    """Servers A (named by TINKER_BASE_URL/TINKER_API_KEY) and B (needs KEY_B), store L."""
    stores = {name: Store.open(tmp_path / name, clock) for name in ("a", "b", "l")}
    for name, store in stores.items():
        seed_backend(store, name, PER_RUN)
    stores["l"].close()  # a local store is opened by the command itself
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TINKER_COOKBOOK_RUNS_DIR", str(tmp_path / "no-runs"))
    for name in ("CKPT_TUI_READONLY", "CKPT_TUI_STORAGE_RATE"):
        monkeypatch.delenv(name, raising=False)
    a = FaultyApp(create_app(stores["a"], sweep_interval=None))
    b = FaultyApp(create_app(stores["b"], api_key=KEY_B, sweep_interval=None))
    try:
        with run_server(a) as url_a, run_server(b) as url_b:
            monkeypatch.setenv("TINKER_BASE_URL", url_a)
            monkeypatch.setenv("TINKER_API_KEY", "tml-key-of-a")
            local = tmp_path / "l"
            yield Backends(a, b, stores["a"], stores["b"], stores["l"], url_a, url_b, local)
    finally:
        stores["a"].close()
        stores["b"].close()


def local_run_ids(backends: Backends, clock: FixedClock) -> set[str]:
    with Store.open(backends.local, clock, create=False) as store:
        return run_ids(store)


def local_count(backends: Backends, clock: FixedClock) -> int:
    with Store.open(backends.local, clock, create=False, readonly=True) as store:
        return count(store)


def line(command: str, position: str, options: list[str], extra: list[str]) -> list[str]:
    """The command line with `options` before or after the subcommand (none for the TUI)."""
    if command == "tui":
        return [*options, *extra]
    if position == "before":
        return [*options, command, *extra]
    return [command, *options, *extra]


COMMAND_EXTRA = {
    "ls": ["--json"],
    "prune": ["--keep-last", "1", "--yes"],
    "tui": ["--poll", "0"],
}


@dataclass
class Ran:
    code: int
    out: str
    err: str
    runs_seen: set[str]


def run_command(
    argv: list[str],
    command: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    keys: tuple[str, ...] = (),
) -> Ran:
    """Run the real command line; the TUI runs headless (Pilot) until its first load is in."""
    seen: set[str] = set()

    def run_headless(app: CkptApp) -> None:
        async def drive() -> None:
            async with app.run_test(size=(120, 36)) as pilot:
                await settle(pilot)
                if keys:
                    await pilot.press(*keys)
                    await settle(pilot)
                catalog = screen_of(app).catalog
                seen.update(run.run_id for run in (catalog.runs if catalog else []))
                seen.add(f"readonly={app.readonly}")

        asyncio.run(drive())

    monkeypatch.setattr(CkptApp, "run", run_headless)
    code = main(argv)
    out, err = capsys.readouterr()
    if command == "ls" and code == 0:
        seen = {run["run_id"] for run in json.loads(out)["runs"]}
    return Ran(code, out, err, seen)


CASES = [("ls", "before"), ("ls", "after"), ("prune", "before"), ("prune", "after"), ("tui", "-")]
"""Each command with its options before and after the subcommand (the TUI has none)."""


@pytest.mark.parametrize(("command", "position"), CASES)
def test_local_goes_to_the_local_store_only(
    backends: Backends,
    clock: FixedClock,
    command: str,
    position: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    options = ["--local", str(backends.local), "--no-tinker"]
    ran = run_command(
        line(command, position, options, COMMAND_EXTRA[command]), command, capsys, monkeypatch
    )
    assert ran.code == 0, ran.err
    assert backends.calls() == (0, 0)  # neither server heard of it
    assert count(backends.store_a) == count(backends.store_b) == 2 * PER_RUN
    if command == "prune":
        assert local_count(backends, clock) == 2  # keep-last 1 in each of 2 runs
        assert f"Deleting 6 checkpoints on l at local store {backends.local}:" in ran.out
    else:
        assert {"l-run-0", "l-run-1"} <= ran.runs_seen
        assert not any(run.startswith(("a-", "b-")) for run in ran.runs_seen)


@pytest.mark.parametrize("position", ["before", "after"])
@pytest.mark.parametrize("named", ["--local", "--url"])
def test_prune_deletes_only_on_the_backends_its_command_line_names(
    backends: Backends,
    clock: FixedClock,
    named: str,
    position: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The environment names a Tinker connection (server A); `prune --local L` or `prune
    --url B` deletes there and nowhere else, with or without --no-tinker."""
    if named == "--local":
        options = ["--local", str(backends.local)]
    else:
        options = ["--url", backends.url_b, "--api-key", KEY_B]
    ran = run_command(
        line("prune", position, options, COMMAND_EXTRA["prune"]), "prune", capsys, monkeypatch
    )
    assert ran.code == 0, ran.err
    assert backends.a.count("DELETE") == 0 and len(backends.a.requests) == 0
    assert count(backends.store_a) == 2 * PER_RUN
    pruned = local_count(backends, clock) if named == "--local" else count(backends.store_b)
    assert pruned == 2  # keep-last 1 in each of 2 runs
    assert "tinker" not in ran.out.split("Deleting", 1)[1].split("\n", 1)[0]


def test_prune_takes_the_tinker_connection_when_backend_names_it(
    backends: Backends,
    clock: FixedClock,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`--backend tinker` next to `--local` is asked for, so both are pruned."""
    argv = ["--local", str(backends.local), "--backend", "tinker", *COMMAND_EXTRA["prune"]]
    ran = run_command(["prune", *argv], "prune", capsys, monkeypatch)
    assert ran.code == 0, ran.err
    assert count(backends.store_a) == 2 and local_count(backends, clock) == 2
    assert "on tinker at" in ran.out


@pytest.mark.parametrize(("command", "position"), CASES)
def test_url_and_api_key_go_to_that_server_with_that_key(
    backends: Backends,
    command: str,
    position: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    options = ["--url", backends.url_b, "--api-key", KEY_B, "--no-tinker"]
    ran = run_command(
        line(command, position, options, COMMAND_EXTRA[command]), command, capsys, monkeypatch
    )
    assert ran.code == 0, ran.err
    a_calls, b_calls = backends.calls()
    assert a_calls == 0 and b_calls > 0
    assert {headers.get("x-api-key") for headers in backends.b.headers} == {KEY_B}
    assert count(backends.store_a) == 2 * PER_RUN
    if command == "prune":
        assert count(backends.store_b) == 2
        name = backends.url_b.replace("http://", "").replace(":", "-")  # derived from the URL
        expected = (
            f"Deleting 6 checkpoints on {name} at {backends.url_b} (key from --api-key flag):"
        )
        assert expected in ran.out
    else:
        assert ran.runs_seen >= {"b-run-0", "b-run-1"}


@pytest.mark.parametrize(("command", "position"), CASES)
def test_readonly_refuses_every_change(
    backends: Backends,
    command: str,
    position: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    argv = line(command, position, ["--readonly"], COMMAND_EXTRA[command])
    keys = ("2", "d", "y") if command == "tui" else ()  # all checkpoints, delete, confirm
    ran = run_command(argv, command, capsys, monkeypatch, keys)
    assert count(backends.store_a) == 2 * PER_RUN
    assert backends.a.count("DELETE") == 0
    if command == "prune":
        assert ran.code == 2 and "read-only mode" in ran.err
        assert backends.calls() == (0, 0)  # refused before connecting
    elif command == "tui":
        assert "readonly=True" in ran.runs_seen
    else:
        assert ran.code == 0


@pytest.mark.parametrize("value", ["1", "true"])
def test_readonly_from_the_environment(
    backends: Backends,
    value: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CKPT_TUI_READONLY", value)
    ran = run_command(["prune", "--keep-last", "1", "--yes"], "prune", capsys, monkeypatch)
    assert ran.code == 2 and "read-only mode" in ran.err
    assert count(backends.store_a) == 2 * PER_RUN and backends.a.count("DELETE") == 0


def test_a_bad_readonly_environment_value_is_refused(
    backends: Backends, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CKPT_TUI_READONLY", "maybe")
    with pytest.raises(SystemExit) as exit_info:
        main(["prune", "--keep-last", "1", "--yes"])
    assert exit_info.value.code == 2
    assert "CKPT_TUI_READONLY must be 1 or 0" in capsys.readouterr().err
    assert count(backends.store_a) == 2 * PER_RUN


REFUSED: list[tuple[list[str], str]] = [
    (
        ["--api-key", "k1", "ls", "--api-key", "k2"],
        "--api-key was given twice with different values",
    ),
    (["--poll", "5", "ls"], "--poll does not apply to `ckpt-tui ls`"),
    (["--storage-rate", "0.1", "ls"], "--storage-rate does not apply to `ckpt-tui ls`"),
    (["--local", "LOCAL", "serve", "LOCAL"], "--local does not apply to `ckpt-tui serve`"),
    (["--api-key", "k", "serve", "LOCAL"], "--api-key does not apply to `ckpt-tui serve`"),
    (["--url", "URL_B", "demo", "--no-tui"], "--url does not apply to `ckpt-tui demo`"),
]


@pytest.mark.parametrize(("argv", "message"), REFUSED)
def test_options_a_command_cannot_honour_are_refused(
    backends: Backends, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    names = {"URL_A": backends.url_a, "URL_B": backends.url_b, "LOCAL": str(backends.local)}
    with pytest.raises(SystemExit) as exit_info:
        main([names.get(arg, arg) for arg in argv])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert backends.calls() == (0, 0)


CONFLICTS: list[tuple[list[str], str]] = [
    (
        ["--url", "URL_A", "ls", "--url", "URL_B", "--api-key", "k"],
        "--api-key is the key of one server, and 2 --url were given",
    ),
    (["--no-tinker", "ls", "--api-key", "k"], "--api-key names a key for the Tinker connection"),
    (["--no-tinker", "prune", "--keep-last", "1"], "no backend configured"),
    (["--url", "x=URL_B", "ls", "--local", "x=LOCAL"], "two backends are named 'x'"),
    (["--url", "a=URL_B", "ls", "--url", "b=URL_B"], "was given twice (as a and b)"),
]


@pytest.mark.parametrize(("argv", "message"), CONFLICTS)
def test_backends_that_cannot_open_together_are_refused(
    backends: Backends, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    names = {"URL_A": backends.url_a, "URL_B": backends.url_b, "LOCAL": str(backends.local)}
    argv = [next((arg.replace(k, v) for k, v in names.items() if k in arg), arg) for arg in argv]
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert backends.calls() == (0, 0)


@pytest.mark.parametrize("position", ["before", "after"])
def test_local_url_and_the_tinker_connection_open_together(
    backends: Backends, position: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """--local and --url add up, wherever they stand, and the environment's Tinker connection
    (here A) joins them; each server gets only its own key."""
    options = ["--local", f"scratch={backends.local}", "--url", f"b={backends.url_b}"]
    argv = line("ls", position, [*options, "--api-key", KEY_B], ["--json"])
    assert main(argv) == 0
    document = json.loads(capsys.readouterr().out)
    assert [b["name"] for b in document["backends"]] == ["tinker", "b", "scratch"]
    by_backend = {(run["backend"]["name"], run["run_id"]) for run in document["runs"]}
    assert by_backend == {
        ("tinker", "a-run-0"), ("tinker", "a-run-1"), ("b", "b-run-0"), ("b", "b-run-1"),
        ("scratch", "l-run-0"), ("scratch", "l-run-1"),
    }  # fmt: skip
    for app, key in ((backends.b, KEY_B), (backends.a, "tml-key-of-a")):
        sent = zip(app.requests, app.headers, strict=True)  # the health check asks for none
        assert {h.get("x-api-key") for (_, path), h in sent if "/healthz" not in path} == {key}


def test_the_same_value_on_both_sides_is_fine_and_log_dirs_add_up(
    backends: Backends, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = tmp_path / "logs-one", tmp_path / "logs-two"
    argv = ["--url", backends.url_b, "--log-dir", str(first), "ls", "--url", backends.url_b]
    argv += ["--no-tinker", "--api-key", KEY_B, "--log-dir", str(second), "--json"]
    assert main(argv) == 0
    document = json.loads(capsys.readouterr().out)
    assert len(document["backends"]) == 1  # the same --url on both sides is one backend
    problems = document["problems"]
    assert any(str(first) in problem for problem in problems)  # both were looked for
    assert any(str(second) in problem for problem in problems)
    assert backends.calls()[0] == 0


def test_json_prune_names_the_backend_before_deleting(
    backends: Backends, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["prune", "--keep-last", "1", "--yes", "--json"]) == 0
    out, err = capsys.readouterr()
    document: dict[str, Any] = json.loads(out)
    assert document["backend"] == f"{backends.url_a} (key from TINKER_API_KEY)"
    assert f"Deleting 6 checkpoints on tinker at {backends.url_a} (key from TINKER_API_KEY)" in err


async def test_a_readonly_client_sends_no_change(backends: Backends) -> None:
    async with CheckpointClient(Endpoint.remote(backends.url_a), readonly=True) as client:
        checkpoints = await client.list_all_checkpoints()
        for change in (
            client.delete_checkpoint(checkpoints[0]),
            client.publish(checkpoints[0]),
            client.unpublish(checkpoints[0]),
            client.set_ttl(checkpoints[0], 7200),
        ):
            with pytest.raises(ReadOnlyError, match="read-only mode"):
                await change
    assert backends.a.count("GET") > 0
    changes = [(m, p) for m, p in backends.a.requests if m != "GET" and "/checkpoints/" in p]
    assert changes == []


def test_readonly_serve_creates_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--readonly", "serve", str(tmp_path / "none"), "--port", "0"]) == 2
    assert "--readonly creates nothing" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()
