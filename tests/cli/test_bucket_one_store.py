"""One store is one backend, for buckets: two `local = "s3://…"` backends are compared by what
they are (their endpoints, then the store ids the opened stores report), not by how the
location is spelled. Two real S3 servers (moto), a real proxy in front of one, the real
command line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ckpt_tui.store.bucket.metadata import BucketMeta
from tests.support import layouts as L
from tests.support.bucket_cli import run, write_config
from tests.support.bucket_places import bucket_place
from tests.support.live_server import run_server
from tests.support.s3_faults import S3Faults
from tests.support.s3_server import S3Server, s3_server_in_child

PREFIX = "team/box"
NOW_US = 1_700_000_000_000_000


@pytest.fixture
def other_s3() -> Iterator[S3Server]:
    """A second S3 server, at another endpoint, with buckets of its own."""
    with s3_server_in_child() as server:
        yield server


@pytest.fixture
def saved(tmp_path: Path, s3: S3Server, s3_bucket: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Two Trainer saves under `s3_bucket/PREFIX` on the test S3 server; no endpoint in the
    environment (each backend of the config file names its own)."""
    L.hf_trainer_output(tmp_path / "saves" / "out", steps=(100, 200))
    s3.upload(s3_bucket, PREFIX, tmp_path / "saves")
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    return s3_bucket


def two_backends(tmp_path: Path, bucket: str, first: str, second: str) -> None:
    """A config file of backends `a` and `b`: `s3://bucket/PREFIX` at two endpoints."""
    write_config(
        tmp_path,
        "".join(
            f'[backends.{name}]\nlocal = "s3://{bucket}/{PREFIX}"\nendpoint = "{endpoint}"\n'
            for name, endpoint in (("a", first), ("b", second))
        ),
    )


def keys_after_prune(capsys: pytest.CaptureFixture[str], s3: S3Server, bucket: str) -> list[str]:
    """Run `prune --keep-last 1 --yes` over the config's backends: it must be refused as one
    store (exit 2, naming both); the bucket's checkpoint keys after it."""
    code, _out, err = run(capsys, "prune", "--keep-last", "1", "--yes")
    assert code == 2 and ("are one store" in err or "given twice" in err), err
    return [key for key in s3.keys(bucket, PREFIX) if "/.ckpt-tui/" not in key]


def test_one_bucket_name_and_prefix_on_two_servers_are_two_backends(
    saved: str,
    s3: S3Server,
    other_s3: S3Server,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    other_s3.make_bucket(saved)
    L.hf_trainer_output(tmp_path / "other" / "out", steps=(300,))
    other_s3.upload(saved, PREFIX, tmp_path / "other")
    two_backends(tmp_path, saved, s3.endpoint, other_s3.endpoint)
    code, out, err = run(capsys, "ls", "--json")
    assert code == 0, err
    document = json.loads(out)
    assert [backend["name"] for backend in document["backends"]] == ["a", "b"]
    listed = {
        (run["backend"]["name"], checkpoint["checkpoint_id"])
        for run in document["runs"]
        for checkpoint in run["checkpoints"]
    }
    assert listed == {
        ("a", "weights/checkpoint-100"),
        ("a", "weights/checkpoint-200"),
        ("b", "weights/checkpoint-300"),
    }


def test_one_bucket_at_two_spellings_of_its_endpoint_is_refused(
    saved: str, s3: S3Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = s3.endpoint.rsplit(":", 1)[1]
    two_backends(tmp_path, saved, f"http://127.0.0.1:{port}", f"HTTP://LocalHost:{port}/")
    before = s3.keys(saved, PREFIX)
    assert len(keys_after_prune(capsys, s3, saved)) == len(before) > 0
    code, _out, err = run(capsys, "ls")
    assert code == 2 and "given twice" in err, err


def test_one_bucket_through_a_proxy_is_refused_by_its_store_id(
    saved: str, s3: S3Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A proxy's endpoint is another endpoint; the store id kept in the bucket says that
    the bucket behind it is the one the other backend opens."""
    kept = BucketMeta(bucket_place(s3.endpoint, saved, PREFIX), False, NOW_US).ensure_store_id()
    before = s3.keys(saved, PREFIX)
    with run_server(S3Faults(s3.endpoint)) as proxy:
        two_backends(tmp_path, saved, s3.endpoint, proxy)
        assert keys_after_prune(capsys, s3, saved) == [
            key for key in before if "/.ckpt-tui/" not in key
        ]
        for command in (["ls", "--json"], ["backends"]):
            code, _out, err = run(capsys, *command)
            assert code == 2 and f"store id {kept}" in err and "a (" in err and "b (" in err, err


def test_a_bucket_that_keeps_no_store_id_yet_is_one_store_to_every_command(
    saved: str, s3: S3Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No ckpt-tui changed this bucket before (no `.ckpt-tui/` in it), and it is reached
    directly and through a proxy. Both backends list the same objects, so both report the
    id made from them: every command refuses the pair, a look writes nothing, and a prune
    that deletes deletes nothing (it keeps that id in the bucket before comparing)."""
    before = s3.keys(saved, PREFIX)
    assert not any("/.ckpt-tui/" in key for key in before)
    with run_server(S3Faults(s3.endpoint)) as proxy:
        two_backends(tmp_path, saved, s3.endpoint, proxy)
        for look in (["ls", "--json"], ["backends"], ["prune", "--keep-last", "1"]):
            code, _out, err = run(capsys, *look)
            assert code == 2 and "are one store (store id " in err, (look, err)
            assert "a (" in err and "b (" in err, err
            assert s3.keys(saved, PREFIX) == before  # the look wrote nothing
        reported = err.split("store id ", 1)[1][:32]
        assert keys_after_prune(capsys, s3, saved) == before
        # the prune kept the id the looks reported: a reader before and after sees one id
        kept = BucketMeta(bucket_place(s3.endpoint, saved, PREFIX), True, NOW_US).store_id
        assert kept == reported
