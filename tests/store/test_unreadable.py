"""Fail closed: what the store cannot read, it never forgets, and an outer store never reaches
into a store of its own (issue 23, items 1 and 2).

Permissions are taken away for real (`chmod 000`), and the commands that meet them run without
root's power to ignore permission bits (`tests/support/privileges.py`): CI runs as root.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from ckpt_tui.cli import main as cli_main
from ckpt_tui.store import Store
from tests.support.clock import T0
from tests.support.layouts import (
    dcp_checkpoint,
    deepspeed_run,
    lightning_ckpt,
    written_long_ago,
)
from tests.support.privileges import ckpt_tui_as_a_user, python_as_a_user
from tests.support.small_disk import small_tmpfs

FIXTURE = Path(__file__).parents[1] / "fixtures" / "trainer_box"
TEN = "weights/checkpoint-10"


@pytest.fixture
def box(tmp_path: Path, quiet_environment: None) -> Path:
    box = Path(shutil.copytree(FIXTURE, tmp_path / "box"))
    return written_long_ago(box, T0 - timedelta(days=1))


def publish_ten(root: Path) -> None:
    with Store.open(root) as store:
        store.set_public("trainer-out", TEN, True)
        store.set_ttl("trainer-out", TEN, 7 * 86400)


@contextmanager
def unreadable(folder: Path) -> Iterator[None]:
    folder.chmod(0)
    try:
        yield
    finally:
        folder.chmod(0o755)


def checkpoints_of(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["tinker_path"]: c for run in document["runs"] for c in run["checkpoints"]}


def ls_in_process(root: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert cli_main(["ls", "--local", str(root), "--json"]) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


def test_an_unreadable_published_checkpoint_is_a_problem_not_an_absence(
    box: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    publish_ten(box)
    ten = "tinker://trainer-out/weights/checkpoint-10"
    with unreadable(box / "trainer-out" / "checkpoint-10"):
        listed = ckpt_tui_as_a_user(["ls", "--local", str(box), "--json"])
        pruned = ckpt_tui_as_a_user(["prune", "--local", str(box), "--keep-last", "1"])
    assert listed.returncode == 1, listed.stderr
    document = json.loads(listed.stdout)
    assert document["complete"] is False
    problems = "\n".join(document["problems"])
    assert "trainer-out/checkpoint-10: cannot be read: Permission denied" in problems
    assert f"{ten}: checkpoint-10: cannot be read" in problems  # named on the checkpoint
    assert checkpoints_of(document)[ten]["public"] is True  # still listed, as it was
    assert pruned.returncode != 0
    assert "Nothing was planned or deleted" in pruned.stderr
    assert (box / "trainer-out" / "checkpoint-5").is_dir()
    again = ls_in_process(box, capsys)  # readable again: nothing was forgotten
    assert again["complete"] is True and again["problems"] == []
    after = checkpoints_of(again)[ten]
    assert after["public"] is True and after["expires_at"] is not None


def test_an_unreadable_run_folder_keeps_its_checkpoints_metadata(box: Path) -> None:
    publish_ten(box)
    with unreadable(box / "trainer-out"):
        listed = ckpt_tui_as_a_user(["ls", "--local", str(box), "--json"])
    assert listed.returncode == 1
    document = json.loads(listed.stdout)
    assert document["complete"] is False
    assert "trainer-out: cannot be read: Permission denied" in document["problems"]
    with Store.open(box) as store:
        assert store.get_checkpoint("trainer-out", TEN).public


def test_a_store_open_through_a_change_of_permissions_forgets_nothing(box: Path) -> None:
    """The scan that finds a folder unreadable (after a trainer added a folder beside it) and
    the one that finds it readable again (a chmod changes no mtime) run in one server."""
    publish_ten(box)
    folder = box / "trainer-out" / "checkpoint-10"
    code = f"""
import os, json
from pathlib import Path
from ckpt_tui.store import Store
with Store.open(Path({str(box)!r})) as store:
    os.chmod({str(folder)!r}, 0)
    os.mkdir({str(box / "trainer-out" / "logs")!r})
    store.rescan()
    hidden = store.problems()
    os.chmod({str(folder)!r}, 0o755)
    store.rescan()
    ckpt = store.get_checkpoint("trainer-out", {TEN!r})
    print(json.dumps([hidden.complete, hidden.lines, store.problems().complete, ckpt.public]))
"""
    try:
        done = python_as_a_user(code)
    finally:
        folder.chmod(0o755)
    complete, lines, complete_after, public = json.loads(done.stdout)
    assert (complete, complete_after, public) == (False, True, True)
    assert lines == ["trainer-out/checkpoint-10: cannot be read: Permission denied"]


def test_an_unreadable_tinker_segment_folder_keeps_its_rows(tmp_path: Path) -> None:
    root = tmp_path / "s"
    with Store.open(root) as store:
        store.create_run("run-a", "base")
        store.add_checkpoint("run-a", "weights/1", {"a.bin": b"12345"}, public=True)
    with unreadable(root / "runs" / "run-a" / "weights"):
        listed = ckpt_tui_as_a_user(["ls", "--local", str(root), "--json"])
    assert listed.returncode == 1
    assert "runs/run-a/weights: cannot be read: Permission denied" in listed.stdout
    with Store.open(root) as store:
        assert store.get_checkpoint("run-a", "weights/1").public


def test_an_inner_store_is_not_walked_into_by_the_outer_one(
    tmp_path: Path, quiet_environment: None, capsys: pytest.CaptureFixture[str]
) -> None:
    outer = tmp_path / "ov"
    inner = outer / "inner"
    shutil.copytree(FIXTURE, inner)
    written_long_ago(outer, T0 - timedelta(days=1))
    publish_ten(inner)
    document = ls_in_process(outer, capsys)
    assert document["problems"] == ["inner: a separate store; open it with --local"]
    assert document["runs"] == []  # nothing of the inner store is the outer store's
    unprotected = ["--no-keep-flagged-best", "--no-keep-resume", "--no-keep-final"]
    args = ["prune", "--local", str(outer), "--keep-last", "1", *unprotected, "--yes"]
    assert cli_main(args) == 0
    capsys.readouterr()
    with Store.open(inner) as store:
        assert store.get_checkpoint("trainer-out", TEN).public
        assert store.list_checkpoints()[1] == 4


def test_an_unreadable_tinker_checkpoint_folder_is_a_problem(tmp_path: Path) -> None:
    root = tmp_path / "s"
    with Store.open(root) as store:
        store.create_run("run-a", "base")
        store.add_checkpoint("run-a", "weights/1", {"a.bin": b"12345"}, public=True)
    with unreadable(root / "runs" / "run-a" / "weights" / "1"):
        listed = ckpt_tui_as_a_user(["ls", "--local", str(root), "--json"])
    assert listed.returncode == 1
    document = json.loads(listed.stdout)
    assert (
        "runs/run-a/weights/1: the folder cannot be read: Permission denied"
        in (document["problems"])
    )
    assert checkpoints_of(document)["tinker://run-a/weights/1"]["public"] is True


def test_a_folder_unreadable_inside_a_checkpoint_makes_the_list_incomplete(box: Path) -> None:
    hidden = box / "trainer-out" / "checkpoint-5" / "extra"
    hidden.mkdir()
    (hidden / "shard.bin").write_bytes(b"x" * 100)
    with unreadable(hidden):
        listed = ckpt_tui_as_a_user(["ls", "--local", str(box), "--json"])
    assert listed.returncode == 1
    document = json.loads(listed.stdout)
    assert document["complete"] is False
    line = "trainer-out/checkpoint-5: extra cannot be read: Permission denied"
    assert line in document["problems"]


def test_a_tinker_run_folder_on_another_file_system_keeps_its_rows(
    tmp_path: Path, quiet_environment: None, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "s"
    with Store.open(root) as store:
        store.create_run("run-a", "base")
        store.add_checkpoint("run-a", "weights/1", {"a.bin": b"12345"}, public=True)
    with small_tmpfs(root / "runs" / "run-a"):
        assert cli_main(["ls", "--local", str(root), "--json"]) == 1
        document = json.loads(capsys.readouterr().out)
    assert document["complete"] is False
    assert any(p.startswith("runs/run-a: on another file system") for p in document["problems"])
    with Store.open(root) as store:
        assert store.get_checkpoint("run-a", "weights/1").public


@pytest.mark.parametrize("name", ["trainer_state.json", "model.safetensors", "config.json"])
def test_an_unreadable_file_in_a_checkpoint_makes_the_list_incomplete(box: Path, name: str) -> None:
    """Its kind, flags and facts depend on the file: unread, not absent, and no save."""
    ten = "tinker://trainer-out/weights/checkpoint-10"
    with unreadable(box / "trainer-out" / "checkpoint-10" / name):
        listed = ckpt_tui_as_a_user(["ls", "--local", str(box), "--json"])
        args = ["prune", "--local", str(box), "--keep-last", "1", "--dry-run"]
        pruned = ckpt_tui_as_a_user(args)
    assert listed.returncode == 1, listed.stderr
    document = json.loads(listed.stdout)
    assert document["complete"] is False
    line = f"trainer-out/checkpoint-10: {name} cannot be read: Permission denied"
    assert line in document["problems"]
    listed_ten = checkpoints_of(document)[ten]
    assert "incomplete" not in listed_ten["user_metadata"]  # unreadable is not "being written"
    assert listed_ten["size_kind"] == "exact"
    assert pruned.returncode != 0
    assert "Nothing was planned or deleted" in pruned.stderr


def test_an_unreadable_weight_file_in_a_tinker_checkpoint_is_a_problem(tmp_path: Path) -> None:
    root = tmp_path / "s"
    with Store.open(root) as store:
        store.create_run("run-a", "base")
        store.add_checkpoint("run-a", "weights/1", {"a.bin": b"12345"}, public=True)
    folder = root / "runs" / "run-a" / "weights" / "1"
    (folder / "model.safetensors").write_bytes(b"\x00" * 64)  # added since: looked at again
    written_long_ago(folder, T0 - timedelta(days=1))
    with unreadable(folder / "model.safetensors"):
        listed = ckpt_tui_as_a_user(["ls", "--local", str(root), "--json"])
    assert listed.returncode == 1, listed.stderr
    document = json.loads(listed.stdout)
    assert document["complete"] is False
    line = "runs/run-a/weights/1: model.safetensors cannot be read: Permission denied"
    assert line in document["problems"]
    assert "incomplete" not in checkpoints_of(document)["tinker://run-a/weights/1"]["user_metadata"]


def test_an_unreadable_store_root_is_named_with_what_to_do(box: Path) -> None:
    with unreadable(box):
        listed = ckpt_tui_as_a_user(["ls", "--local", str(box)])
    assert listed.returncode == 1
    said = f"{box} cannot be read: Permission denied; check its permissions, or run as its owner"
    assert said in listed.stderr
    assert "tunnel" not in listed.stderr  # a folder on this machine, no network in the way
    assert "runs" not in listed.stderr.replace(str(box), "")  # not a folder of a Trainer's box


LAYOUTS = {
    "ds/latest: cannot be read": lambda root: deepspeed_run(root / "ds") / "latest",
    "ds/global_step100: mp_rank_00_model_states.pt cannot be read": (
        lambda root: deepspeed_run(root / "ds") / "global_step100" / "mp_rank_00_model_states.pt"
    ),
    "dist/step-1: .metadata cannot be read": (
        lambda root: dcp_checkpoint(root / "dist" / "step-1") / ".metadata"
    ),
    "lit/epoch=3.ckpt: epoch=3.ckpt cannot be read": (
        lambda root: lightning_ckpt(root / "lit" / "epoch=3.ckpt")
    ),
}


@pytest.mark.parametrize("problem", sorted(LAYOUTS))
def test_an_unreadable_file_of_any_layout_makes_the_list_incomplete(
    tmp_path: Path, problem: str
) -> None:
    root = tmp_path / "s"
    hidden = LAYOUTS[problem](root)
    written_long_ago(root, T0 - timedelta(days=1))
    with unreadable(hidden):
        listed = ckpt_tui_as_a_user(["ls", "--local", str(root), "--json"])
    assert listed.returncode == 1, listed.stderr
    document = json.loads(listed.stdout)
    assert document["complete"] is False
    assert f"{problem}: Permission denied" in document["problems"]
    for checkpoint in checkpoints_of(document).values():  # unreadable is not "being written"
        assert "incomplete" not in (checkpoint["user_metadata"] or {})
