"""Downloads from a bucket, as from a folder: `ckpt-tui --local s3://… download`, and the
signed file route of `serve s3://…` (sizes, ranges, `If-Range`, a file replaced while it is
served). Against a real S3 server (moto)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ckpt_tui.locations import parse_location
from ckpt_tui.store import StoreError
from ckpt_tui.store.blobs.objects import ObjectStorage
from ckpt_tui.store.bucket import BucketStore
from ckpt_tui.store.bucket.files import WINDOW_BYTES
from tests.support import layouts as L
from tests.support.bucket_cli import run, serving
from tests.support.s3_server import S3Server

TRAINER = "tinker://trainer/weights/checkpoint-200"
LOOSE = "tinker://loose/weights/model.pt"
ADAPTER = "tinker://adapters/sampler_weights/lora-a"


@pytest.fixture
def box(tmp_path: Path, s3: S3Server, s3_bucket: str) -> Path:
    """A training box's folder (Trainer output, a PEFT adapter, a torch.save file), and the
    same files synced to s3://BUCKET/team/box, with a folder marker in a checkpoint."""
    root = tmp_path / "box"
    L.hf_trainer_output(root / "trainer", steps=(100, 200), best=100)
    L.peft_adapter(root / "adapters/lora-a")
    L.full_torch_checkpoint(root / "loose/model.pt")
    s3.upload(s3_bucket, "team/box", root)
    s3.put(s3_bucket, "team/box/trainer/checkpoint-200/logs/", b"")  # "Create folder"
    return root


def held(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_download_from_a_bucket_gets_each_checkpoint_as_the_folder_holds_it(
    box: Path, s3_bucket: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    location = f"s3://{s3_bucket}/team/box"
    code, said, err = run(
        capsys, "--local", location, "download", TRAINER, LOOSE, ADAPTER, "-o", str(out)
    )
    assert code == 0, err
    assert held(out / "trainer_weights_checkpoint-200") == held(box / "trainer/checkpoint-200")
    assert held(out / "loose_weights_model.pt") == {
        "model.pt": (box / "loose/model.pt").read_bytes()
    }
    assert held(out / "adapters_sampler_weights_lora-a") == held(box / "adapters/lora-a")
    assert "1 file," in said  # the torch.save file: one file, said so


@pytest.fixture
def served(box: Path, s3: S3Server, s3_bucket: str, tmp_path: Path) -> Iterator[str]:
    """`ckpt-tui serve s3://BUCKET/team/box` in its own process; its URL."""
    with serving(f"s3://{s3_bucket}/team/box", s3.environment(), tmp_path) as (url, _):
        yield url


def test_serve_of_a_bucket_signs_its_files_and_serves_ranges_of_one_version(
    box: Path, served: str, s3: S3Server, s3_bucket: str
) -> None:
    route = f"{served}/api/v1/training_runs/trainer/checkpoints/weights/checkpoint-200"
    urls = httpx.get(f"{route}/external_weights_urls", timeout=30).json()["urls"]
    folder = box / "trainer/checkpoint-200"
    assert set(urls) == set(held(folder))  # the folder marker is no file
    weights = (folder / "model.safetensors").read_bytes()
    url = urls["model.safetensors"]
    head = httpx.head(url, timeout=30)
    assert head.status_code == 200 and int(head.headers["content-length"]) == len(weights)
    etag = head.headers["etag"]
    part = httpx.get(url, headers={"Range": "bytes=10-19", "If-Range": etag}, timeout=30)
    assert part.status_code == 206 and part.content == weights[10:20]
    assert httpx.get(url, timeout=30).content == weights
    # replaced in the bucket: the old version's range is not sent, the whole new one is
    s3.put(s3_bucket, "team/box/trainer/checkpoint-200/model.safetensors", b"new" + weights)
    again = httpx.get(url, headers={"Range": "bytes=10-19", "If-Range": etag}, timeout=30)
    assert again.status_code == 200 and again.content == b"new" + weights
    assert again.headers["etag"] != etag


def test_a_command_downloads_from_serve_of_a_bucket(
    box: Path, served: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    code, _said, err = run(capsys, "download", TRAINER, "--url", served, "-o", str(out))
    assert code == 0, err
    assert held(out / "trainer_weights_checkpoint-200") == held(box / "trainer/checkpoint-200")


def test_a_file_replaced_after_it_was_opened_is_not_sent_mixed(
    box: Path, s3: S3Server, s3_bucket: str
) -> None:
    location = parse_location(f"s3://{s3_bucket}/team/box")
    assert location is not None
    store = BucketStore.open_bucket(ObjectStorage.open(location), settle_seconds=0)
    try:
        served = store.open_checkpoint_file("trainer", "weights/checkpoint-200", "config.json")
        whole = (box / "trainer/checkpoint-200/config.json").read_bytes()
        assert b"".join(served.chunks(0, served.size, 7)) == whole  # in pieces of 7 bytes
        s3.put(s3_bucket, "team/box/trainer/checkpoint-200/config.json", b"{}")
        with pytest.raises(StoreError):
            list(served.chunks(0, served.size, 7))
        with pytest.raises(StoreError):  # a name that leaves the checkpoint is refused
            store.open_checkpoint_file(
                "trainer", "weights/checkpoint-200", "../checkpoint-100/config.json"
            )
    finally:
        store.close()


def test_a_file_url_bucket_downloads_through_the_folder_code_and_follows_no_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "box"
    L.hf_trainer_output(root / "trainer", steps=(200,), best=200)
    L.full_torch_checkpoint(root / "loose/model.pt")
    secret = tmp_path / "secret.txt"
    secret.write_text("not a checkpoint file")
    (root / "trainer/checkpoint-200/notes.txt").symlink_to(secret)
    out = tmp_path / "out"
    location = f"file://{root}"
    code, _said, err = run(capsys, "--local", location, "download", TRAINER, LOOSE, "-o", str(out))
    assert code == 0, err
    got = held(out / "trainer_weights_checkpoint-200")
    assert "notes.txt" not in got
    in_folder = held(root / "trainer/checkpoint-200")  # `held` follows the link
    assert got == {name: data for name, data in in_folder.items() if name != "notes.txt"}
    loose = (root / "loose/model.pt").read_bytes()
    assert held(out / "loose_weights_model.pt") == {"model.pt": loose}


def test_a_file_replaced_while_it_is_sent_ends_short_and_never_mixes(
    served: str, s3: S3Server, s3_bucket: str
) -> None:
    """A file of more than one window (files.WINDOW_BYTES): replaced in the bucket after the
    first window went out, the answer stops short of its Content-Length (the client's length
    check sees it) instead of going on with the new version's bytes."""
    key = "team/box/trainer/checkpoint-200/big.bin"
    old = os.urandom(WINDOW_BYTES + 1024 * 1024)
    s3.put(s3_bucket, key, old)
    route = f"{served}/api/v1/training_runs/trainer/checkpoints/weights/checkpoint-200"
    url = httpx.get(f"{route}/external_weights_urls", timeout=30).json()["urls"]["big.bin"]
    got = bytearray()
    with httpx.stream("GET", url, timeout=30) as answer:
        assert int(answer.headers["content-length"]) == len(old)
        pieces = answer.iter_raw()
        got += next(pieces)
        s3.put(s3_bucket, key, b"x" * len(old))
        with pytest.raises(httpx.HTTPError):
            for piece in pieces:
                got += piece
    assert len(got) < len(old) and bytes(got) == old[: len(got)]


def test_a_file_url_bucket_serves_nothing_reached_through_a_linked_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """obstore's local store lists through links; a download opens each folder on the way
    without following one (as a link swapped in after any check would be met)."""
    outside = tmp_path / "outside"
    L.hf_trainer_output(outside / "trainer", steps=(200,), best=200)
    root = tmp_path / "box"
    root.mkdir()
    (root / "trainer").symlink_to(outside / "trainer")
    out = tmp_path / "out"
    code, _said, err = run(capsys, "--local", f"file://{root}", "download", TRAINER, "-o", str(out))
    assert code == 1
    assert "symbolic link (never followed)" in err and not out.exists()


def test_a_key_no_folder_can_hold_fails_the_listing_naming_it(
    served: str, s3: S3Server, s3_bucket: str
) -> None:
    """Refused as the store's problem (409, naming the key), not the client's bad input, and
    never left out unsaid."""
    s3.put(s3_bucket, "team/box/trainer/checkpoint-200/back\\slash.bin", b"x")
    route = f"{served}/api/v1/training_runs/trainer/checkpoints/weights/checkpoint-200"
    answer = httpx.get(f"{route}/external_weights_urls", timeout=30)
    assert answer.status_code == 409
    assert "back\\\\slash.bin" in answer.text and "cannot be downloaded" in answer.text
