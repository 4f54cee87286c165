"""Hostile file contents in a store: a pickle or JSON file is at worst a problem on its row.

Bounds are checked by counts (opcodes, depth, bytes), never by the clock. A pickle that used to
crash the interpreter is run in a child process, so a regression fails this test instead of
killing the test run.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
import zipfile
from pathlib import Path
from typing import Any

import pytest

from ckpt_tui.bounded_json import MAX_JSON_BYTES, MAX_JSON_DEPTH
from ckpt_tui.server import create_app
from ckpt_tui.sizes import SafetensorsHeaderError
from ckpt_tui.sizes.safetensors_header import read_sharded
from ckpt_tui.store import Store, watcher
from ckpt_tui.store.discover import WalkedRuns, discover
from ckpt_tui.store.discover.pickle_scan import MAX_DEPTH, MAX_OPCODES, scan_pickle
from ckpt_tui.store.discover.torch_zip import MAX_PICKLE_BYTES, read_torch_file
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support import layouts as L
from tests.support.live_server import run_server
from tests.support.tui import make_app, runs, settle

DEEP_TUPLE = b"\x80\x02}N" + b"\x85" * 2_000_000 + b"Ns."
"""A dict keyed by a tuple nested two million deep: hashing it overflows the C stack."""


def deflated_zip(pickle_bytes: bytes, archive: str = "archive") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as out:
        out.writestr(f"{archive}/data.pkl", pickle_bytes)
        out.writestr(f"{archive}/version", "3\n")
    return buffer.getvalue()


def ls_json(root: Path) -> dict[str, object]:
    """`ckpt-tui ls --local ROOT --json` in a child process; fails on any non-zero exit."""
    done = subprocess.run(
        [sys.executable, "-m", "ckpt_tui", "ls", "--local", str(root), "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    document: dict[str, object] = json.loads(done.stdout)
    return document


def run_ids(document: dict[str, object]) -> set[str]:
    runs = document["runs"]
    assert isinstance(runs, list)
    return {run["run_id"] for run in runs}


def problems_text(document: dict[str, object]) -> str:
    problems = document["problems"]
    assert isinstance(problems, list)
    return "\n".join(problems)


# --- pickles ------------------------------------------------------------------------------
def test_a_two_million_deep_tuple_is_unreadable_not_a_crash(tmp_path: Path) -> None:
    root = tmp_path / "store"
    L.write(root / "deep.pt", deflated_zip(DEEP_TUPLE))
    L.full_torch_checkpoint(root / "good.pt")
    document = ls_json(root)
    assert "_root_" in run_ids(document)
    assert f"deep.pt: the pickle is not followed: containers are nested more than {MAX_DEPTH}" in (
        problems_text(document)
    )


def test_depth_is_bounded_in_the_scan() -> None:
    summary = scan_pickle(b"\x80\x02N" + b"\x85" * (MAX_DEPTH + 1) + b".")
    assert not summary.readable and "nested more than" in (summary.problem or "")
    within = scan_pickle(b"\x80\x02N" + b"\x85" * MAX_DEPTH + b".")
    assert within.readable


def test_opcodes_are_bounded() -> None:
    """60 MB of DUP took 44 s and 608 MB; the scan stops at MAX_OPCODES."""
    summary = scan_pickle(b"\x80\x02N" + b"2" * (MAX_OPCODES + 10) + b".")
    assert not summary.readable
    assert summary.problem == (
        f"the pickle is not followed: it has more than {MAX_OPCODES:,} opcodes"
    )


def test_a_data_pkl_over_the_byte_bound_is_not_decompressed(tmp_path: Path) -> None:
    path = L.write(tmp_path / "dup.pt", deflated_zip(b"\x80\x02N" + b"2" * MAX_PICKLE_BYTES + b"."))
    assert path.stat().st_size < MAX_PICKLE_BYTES // 100  # a small file that deflates to a lot
    facts = read_torch_file(str(path))
    assert facts.is_torch and facts.problem == (
        f"data.pkl is over {MAX_PICKLE_BYTES:,} bytes; not inspected"
    )


def test_a_lying_zip_header_does_not_lift_the_byte_bound(tmp_path: Path) -> None:
    """The member's declared size says 10 bytes; the bound holds on what is decompressed."""
    pickle = b"\x80\x02N" + b"2" * (MAX_PICKLE_BYTES + 10) + b"."
    data = bytearray(deflated_zip(pickle))
    true_size = len(pickle).to_bytes(4, "little")
    assert data.count(true_size) == 2  # local header and central directory
    path = L.write(tmp_path / "liar.pt", bytes(data.replace(true_size, (10).to_bytes(4, "little"))))
    facts = read_torch_file(str(path))
    assert facts.problem is not None or facts.truncated is not None
    assert facts.params is None


def test_container_keys_are_not_hashed() -> None:
    """A key that shares its halves 60 levels down would take 2**60 steps to hash."""
    pickle = bytearray(b"\x80\x02}N")  # {} then None, the innermost value
    for _ in range(60):
        pickle += b"2\x86"  # DUP, TUPLE2: (x, x)
    pickle += b"Ns."
    summary = scan_pickle(bytes(pickle))
    assert summary.readable and summary.top == {}


def test_a_list_holding_itself_is_a_problem_not_a_loop() -> None:
    summary = scan_pickle(b"\x80\x02]q\x00h\x00a.")  # l = []; l.append(l)
    assert not summary.readable and "cycle" in (summary.problem or "")


def test_huge_numbers_in_a_pickle_do_not_stall_the_facts(tmp_path: Path) -> None:
    digits = 20_000
    huge = b"\x8b" + (digits // 2).to_bytes(4, "little") + b"\x7f" * (digits // 2)  # LONG4
    top = b"\x80\x02}(X\x04\x00\x00\x00step" + huge + b"u."
    path = L.write(tmp_path / "n.pt", deflated_zip(top))
    facts = read_torch_file(str(path))
    assert facts.step is None and facts.scalars == {}


def test_a_safetensors_shape_too_large_for_a_float_is_a_problem(
    tmp_path: Path, clock: FixedClock
) -> None:
    """8 dims of 10**60 elements used to raise OverflowError out of the header check."""
    header = json.dumps({"w": {"dtype": "F32", "shape": [10**60] * 8, "data_offsets": [0, 4]}})
    raw = header.encode()
    L.write(
        tmp_path / "store/exp/huge.safetensors", len(raw).to_bytes(8, "little") + raw + bytes(4)
    )
    with Store.open(tmp_path / "store", clock) as store:
        (checkpoint,) = store.list_checkpoints()[0]
    assert "is too large" in (checkpoint.user_metadata or {})["unreadable"]


def test_an_index_over_the_byte_bound_is_not_read_whole(tmp_path: Path) -> None:
    """A valid index padded past MAX_JSON_BYTES is refused, not read into memory and parsed."""
    index = tmp_path / "model.safetensors.index.json"
    index.write_bytes(b'{"weight_map": {}}' + b" " * MAX_JSON_BYTES)
    with pytest.raises(SafetensorsHeaderError, match="byte limit"):
        read_sharded(index)


def test_a_dcp_metadata_past_the_opcode_bound_still_shows_optimizer_state(
    tmp_path: Path, clock: FixedClock
) -> None:
    """A large sharded save's .metadata has millions of opcodes; its strings still tell."""
    folder = L.dcp_checkpoint(tmp_path / "store/exp/step-10", with_metadata=False)
    writer = L.PickleWriter()
    writer.global_("torch.distributed.checkpoint.metadata", "Metadata")
    writer.out += b")\x81"
    filler = L.Raw(b"N0" * (MAX_OPCODES // 2 + 1))  # None, POP: past the bound
    writer.dict({"state_dict_metadata": {"model.w": filler, "optim.state.0.exp_avg": 2}})
    writer.out += b"b"
    L.write(folder / ".metadata", writer.finish())
    with Store.open(tmp_path / "store", clock) as store:
        (checkpoint,) = store.list_checkpoints()[0]
    assert (checkpoint.user_metadata or {})["has_optimizer"] == "true"


# --- JSON files -----------------------------------------------------------------------------
DEEP_JSON = "[" * 100_000


def tinker_run(store: Store, run_id: str, run_json: str) -> None:
    store.create_run(run_id, "base")
    store.add_checkpoint(run_id, "weights/0001", {"a.bin": b"x"})
    (store.root / "runs" / run_id / "run.json").write_text(run_json)


def bad_json_store(root: Path, clock: FixedClock) -> None:
    with Store.open(root, clock) as store:
        tinker_run(store, "deep", DEEP_JSON)
        tinker_run(store, "list", "[]")
        tinker_run(store, "huge-rank", '{"base_model": "b", "lora_rank": 1e999, "created": '
                   '"2025-01-01T00:00:00Z"}')  # fmt: skip
    L.peft_adapter(root / "peft/a1")
    L.write(root / "peft/a1/adapter_config.json", DEEP_JSON)
    L.sharded_pretrained(root / "sharded/m1")
    L.write(root / "sharded/m1/config.json", DEEP_JSON)
    L.sharded_pretrained(root / "indexed/m1")
    L.write(root / "indexed/m1/model.safetensors.index.json", DEEP_JSON)
    L.hf_trainer_output(root / "trainer", steps=(100,))
    L.write(root / "trainer/checkpoint-100/trainer_state.json", DEEP_JSON)


def test_malformed_json_gives_problems_and_every_run_stays(
    tmp_path: Path, clock: FixedClock
) -> None:
    root = tmp_path / "store"
    bad_json_store(root, clock)
    with Store.open(root, clock) as store:
        runs = {run.training_run_id: run for run in store.list_runs()[0]}
        facts = {c.tinker_path: c.user_metadata or {} for c in store.list_checkpoints()[0]}
    assert {"deep", "list", "huge-rank", "peft", "sharded", "indexed", "trainer"} <= runs.keys()
    assert runs["deep"].corrupted and runs["list"].corrupted and runs["huge-rank"].corrupted
    nested = f"nests arrays or objects 100000 deep (at most {MAX_JSON_DEPTH})"
    assert facts["tinker://peft/sampler_weights/a1"]["unreadable"] == (
        f"adapter_config.json cannot be read: adapter_config.json {nested}"
    )
    assert facts["tinker://sharded/sampler_weights/m1"]["unreadable"].startswith("config.json")
    assert "index.json cannot be read" in facts["tinker://indexed/sampler_weights/m1"]["unreadable"]
    trainer = facts["tinker://trainer/weights/checkpoint-100"]
    assert trainer["incomplete"] == "true" and "trainer_state.json" in trainer["incomplete_reason"]


def test_ls_json_lists_the_problems(tmp_path: Path, clock: FixedClock) -> None:
    root = tmp_path / "store"
    bad_json_store(root, clock)
    document = ls_json(root)
    assert {"deep", "list", "huge-rank", "peft", "sharded", "indexed"} <= run_ids(document)
    text = problems_text(document)
    for run_id in ("deep", "list", "huge-rank"):
        assert f"training run {run_id}: run.json is missing or unreadable" in text
    assert "tinker://peft/sampler_weights/a1: adapter_config.json cannot be read" in text


# --- reading files without the store lock ------------------------------------------------------
def test_reading_discovered_files_holds_up_no_other_call(
    tmp_path: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the walk reads a slow folder (held here until released), a delete and a list of
    other runs go through; the walk's result still arrives."""
    root = tmp_path / "store"
    with Store.open(root, clock) as store:
        store.create_run("r", "base")
        store.add_checkpoint("r", "weights/0001", {"f.bin": b"x"})
        L.full_torch_checkpoint(root / "exp" / "model.pt")  # a new folder: the walk runs again
        reading, release = threading.Event(), threading.Event()
        walk_outcome: list[bool] = []

        def held_walk(*args: Any, **kwargs: Any) -> WalkedRuns:
            reading.set()
            walk_outcome.append(release.wait(timeout=120))
            return discover(*args, **kwargs)

        monkeypatch.setattr(watcher, "discover", held_walk)
        walker = threading.Thread(target=store.rescan)
        walker.start()
        assert reading.wait(timeout=120)
        store.delete_checkpoint("r", "weights/0001")
        listed = {run.training_run_id for run in store.list_runs()[0]}
        answered_while_walking = not walk_outcome
        release.set()
        walker.join()
        after = {run.training_run_id for run in store.list_runs()[0]}
    assert answered_while_walking and walk_outcome[0]
    assert listed == {"r"} and after == {"r", "exp"}


# --- the TUI says what could not be read --------------------------------------------------------
async def test_the_tui_reports_unreadable_files_once(tmp_path: Path, clock: FixedClock) -> None:
    root = tmp_path / "store"
    bad_json_store(root, clock)
    L.write(root / "deep.pt", deflated_zip(DEEP_TUPLE))
    with (
        Store.open(root, clock) as store,
        run_server(create_app(store, sweep_interval=None)) as url,
    ):
        app = make_app(url, tmp_path / "logs", clock)
        async with app.run_test(size=(120, 36)) as pilot:
            await settle(pilot)
            await pilot.press("r")  # a refresh with the same problems says nothing new
            await settle(pilot)
            notices = [n for n in app._notifications if "reading the backend" in n.title]
            run_ids = {row.run_id for row in runs(app).rows}
    assert len(notices) == 1 and notices[0].severity == "warning"
    assert notices[0].title == "7 problems reading the backend's files"
    assert "run.json is missing or unreadable" in notices[0].message
    assert notices[0].message.endswith("... and 4 more: `ckpt-tui ls` lists them all")
    assert {"deep", "list", "huge-rank", "peft", "sharded", "indexed", "_root_"} <= run_ids
