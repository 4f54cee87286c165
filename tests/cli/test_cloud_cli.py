"""`--local az://…` and `gs://…`, and the config file's `local` with `endpoint`, against the
clouds' local emulators (Azurite, fake-gcs-server), with credentials only from each cloud's
standard environment, never shown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support import layouts as L
from tests.support.bucket_cli import checkpoints, listed_in_both, run, write_config
from tests.support.cloud_emulators import AZURE_KEY, Emulator


@pytest.fixture
def box(tmp_path: Path, clock: FixedClock) -> Path:
    """A box's folder: a Trainer output and a Tinker-layout run."""
    root = tmp_path / "box"
    L.hf_trainer_output(root / "trainer", steps=(100, 200), best=100)
    with Store.open(root, clock) as store:
        store.create_run("tinker-run", "Qwen/Qwen3-8B", lora_rank=32)
        store.add_checkpoint("tinker-run", "weights/0001", {"adapter.bin": b"x" * 1000})
    return root


def test_ls_json_of_a_cloud_bucket_lists_what_the_folder_lists(
    box: Path, cloud: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    bucket = cloud.make_bucket()
    cloud.upload(bucket, "team/box", box, skip=(".ckpt-tui",))
    place = f"{cloud.scheme}://{bucket}/team/box"
    on_disk, document = listed_in_both(capsys, box, place)
    assert len(on_disk) == 3 and checkpoints(document) == on_disk
    shown = json.dumps(document)
    for command in (["ls"], ["backends"], ["backends", "--json"]):
        shown += "".join(run(capsys, "--local", place, *command)[1:])
    assert AZURE_KEY not in shown and "checkpoint-200" in shown


def test_the_config_file_takes_a_cloud_bucket_with_its_endpoint(
    box: Path,
    cloud: Emulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The endpoint only in the config file; the credentials only in the environment."""
    for name in cloud.environment():
        monkeypatch.delenv(name)
    for name, value in cloud.credentials.items():
        monkeypatch.setenv(name, value)
    bucket = cloud.make_bucket()
    cloud.upload(bucket, "team/box", box, skip=(".ckpt-tui",))
    write_config(
        tmp_path,
        f'[backends.team]\nlocal = "{cloud.scheme}://{bucket}/team/box"\n'
        f'endpoint = "{cloud.endpoint}"\n',
    )
    code, out, err = run(capsys, "ls", "--json")
    assert code == 0, err
    document = json.loads(out)
    assert [b["name"] for b in document["backends"]] == ["team"]
    assert document["complete"] is True
    assert "tinker://trainer/weights/checkpoint-100" in checkpoints(document)
