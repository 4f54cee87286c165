"""A bucket prefix as a backend on the command line: `--local s3://…`, the config file's
`local = "s3://…"`, `serve s3://…`; a scheme this build cannot open is refused (exit 2) and
never made a folder; the cloud's credentials never show. Against a real S3 server (moto)."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import httpx
import pytest

from tests.support import layouts as L
from tests.support.bucket_cli import checkpoints, listed_in_both, run, serving, write_config
from tests.support.s3_server import DUMMY_SECRET, S3Server


@pytest.fixture
def box(tmp_path: Path, s3: S3Server, s3_bucket: str) -> Path:
    """A training box's folder (Trainer output, a PEFT adapter, a torch.save file), and the
    same files synced to s3://BUCKET/team/box."""
    root = tmp_path / "box"
    L.hf_trainer_output(root / "trainer", steps=(100, 200), best=100)
    L.peft_adapter(root / "adapters/lora-a")
    L.full_torch_checkpoint(root / "loose/model.pt")
    s3.upload(s3_bucket, "team/box", root)
    return root


def test_ls_json_of_a_bucket_lists_what_the_folder_lists(
    box: Path, s3_bucket: str, capsys: pytest.CaptureFixture[str]
) -> None:
    on_disk, document = listed_in_both(capsys, box, f"s3://{s3_bucket}/team/box")
    assert len(on_disk) == 4 and checkpoints(document) == on_disk


def test_ls_and_backends_show_a_named_bucket(
    box: Path, s3_bucket: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "--local", f"team=s3://{s3_bucket}/team/box", "ls")
    assert code == 0, err
    assert "checkpoint-200" in out and "lora-a" in out
    code, out, err = run(capsys, "--local", f"team=s3://{s3_bucket}/team/box", "backends")
    assert code == 0, err
    line = next(line for line in out.splitlines() if line.startswith("team "))
    assert f"s3://{s3_bucket}/team/box" in line and "reachable" in line


@pytest.mark.parametrize("command", [["ls"], ["backends"], []])
def test_a_scheme_this_build_cannot_open_is_refused_and_never_a_folder(
    command: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _out, err = run(capsys, *command, "--local", "ftp://host/ckpts")
    assert code == 2
    assert "cannot open ftp://host/ckpts" in err and "s3://" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("store", ["s3x://bucket/prefix", "webdav://host/p"])
def test_serve_refuses_a_scheme_it_cannot_open_and_makes_no_folder(
    store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _out, err = run(capsys, "serve", store, "--port", "0")
    assert code == 2
    assert "cannot open" in err and list(tmp_path.iterdir()) == []


def test_serve_serves_a_bucket_over_the_rest_api_and_makes_no_folder(
    box: Path, s3: S3Server, s3_bucket: str, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    with serving(f"s3://{s3_bucket}/team/box", s3.environment(), work) as (url, line):
        assert f"store s3://{s3_bucket}/team/box" in line
        answer = httpx.get(f"{url}/api/v1/checkpoints", timeout=30).json()
    paths = {c["tinker_path"] for c in answer["checkpoints"]}
    assert "tinker://trainer/weights/checkpoint-200" in paths and len(paths) == 4
    assert list(work.iterdir()) == []


def test_the_config_file_takes_a_bucket_with_its_endpoint_and_region(
    box: Path,
    s3: S3Server,
    s3_bucket: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("AWS_ENDPOINT_URL")  # the config file's endpoint is the one used
    write_config(
        tmp_path,
        f'[backends.team]\nlocal = "s3://{s3_bucket}/team/box"\n'
        f'endpoint = "{s3.endpoint}"\nregion = "us-east-1"\n',
    )
    code, out, err = run(capsys, "ls", "--json")
    assert code == 0, err
    document = json.loads(out)
    assert [b["name"] for b in document["backends"]] == ["team"]
    assert "tinker://trainer/weights/checkpoint-100" in checkpoints(document)


@pytest.mark.parametrize(
    "setting", ['aws_secret_access_key = "x"', 'endpoint = "http://user:pw@127.0.0.1:9"']
)
def test_the_config_file_never_holds_a_bucket_credential(
    setting: str, s3_bucket: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(tmp_path, f'[backends.team]\nlocal = "s3://{s3_bucket}/p"\n{setting}\n')
    code, out, err = run(capsys, "ls")
    assert code == 2
    assert "pw" not in out + err.replace("api_key_file", "")


def test_the_clouds_credentials_never_show(
    box: Path, s3_bucket: str, capsys: pytest.CaptureFixture[str]
) -> None:
    shown = ""
    for place in (f"s3://{s3_bucket}/team/box", "s3://no-such-bucket/p"):
        for command in (["ls"], ["ls", "--json"], ["backends"], ["backends", "--json"]):
            _code, out, err = run(capsys, "--local", place, *command)
            shown += out + err
    assert "no-such-bucket" in shown and "checkpoint-200" in shown
    assert DUMMY_SECRET not in shown and os.environ["AWS_ACCESS_KEY_ID"] not in shown


def test_an_aws_profile_gives_the_keys(
    box: Path,
    s3_bucket: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    aws = tmp_path / "home" / ".aws"
    aws.mkdir(parents=True)
    (aws / "credentials").write_text(
        "[team]\naws_access_key_id = profile-key-id\naws_secret_access_key = profile-secret\n"
    )
    (aws / "config").write_text("[profile team]\nregion = us-east-1\n")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_PROFILE", "team")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance role to fall back on
    code, out, err = run(capsys, "--local", f"s3://{s3_bucket}/team/box", "ls", "--json")
    assert code == 0, err
    assert len(checkpoints(json.loads(out))) == 4
    assert "profile-secret" not in out + err


def test_an_aws_profile_that_does_not_exist_is_said_by_name(
    s3_bucket: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.setenv("AWS_PROFILE", "nobody")
    code, _out, err = run(capsys, "--local", f"s3://{s3_bucket}/p", "ls")
    assert code != 0
    assert "AWS_PROFILE=nobody: ProfileNotFound" in err


def test_an_endpoint_s_user_info_never_shows_in_a_failure(
    s3_bucket: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A request that fails before any answer (nothing listens) is said by obstore with its
    whole URL, user info included: the reason kept says where, without the secret."""
    with socket.socket() as closed:  # a port nothing listens on once the socket is closed
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://proxy-user:pr0xy-s3cret@127.0.0.1:{port}")
    _code, out, err = run(capsys, "--local", f"s3://{s3_bucket}/p", "ls", "--json")
    shown = out + err
    assert f"127.0.0.1:{port}" in shown  # the failure is said, and where
    assert "pr0xy-s3cret" not in shown and "proxy-user" not in shown
