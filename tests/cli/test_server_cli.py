"""`ckpt-tui serve`: refusals, the start line, and a clean stop on Ctrl-C."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

import ckpt_tui
from ckpt_tui.cli import main
from ckpt_tui.cli.serve import API_KEY_ENV, bind_socket, is_loopback, resolve_api_key
from tests.support.live_server import bind_loopback_socket

REPO = Path(ckpt_tui.__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def no_key_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(API_KEY_ENV, raising=False)


def test_non_loopback_without_key_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", str(tmp_path / "s"), "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert "non-loopback" in err
    assert "--api-key" in err
    assert not (tmp_path / "s").exists()


def test_store_that_is_a_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "afile"
    target.write_text("not a store")
    assert main(["serve", str(target), "--port", "0"]) == 2
    assert "not a folder" in capsys.readouterr().err
    assert target.read_text() == "not a store"


def test_busy_port_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    busy = bind_loopback_socket()
    busy.listen()
    port = busy.getsockname()[1]
    try:
        assert main(["serve", str(tmp_path / "s"), "--port", str(port)]) == 2
    finally:
        busy.close()
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


def test_sockets_say_tcp_so_asyncio_sets_nodelay() -> None:
    for sock in (bind_socket("127.0.0.1", 0), bind_loopback_socket()):
        with sock:
            assert sock.proto == socket.IPPROTO_TCP


def test_loopback_and_key_helpers(monkeypatch: pytest.MonkeyPatch) -> None:
    assert all(map(is_loopback, ["127.0.0.1", "127.8.0.1", "::1", "[::1]", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "192.168.1.2", "::", "example.com"]))
    assert resolve_api_key(None) == (None, f"${API_KEY_ENV}")
    monkeypatch.setenv(API_KEY_ENV, "tml-from-env")
    assert resolve_api_key(None)[0] == "tml-from-env"
    assert resolve_api_key("tml-flag")[0] == "tml-flag"


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_serve_runs_and_stops_cleanly(tmp_path: Path, stop: signal.Signals) -> None:
    key = "tml-cli-secret"
    store = tmp_path / "new" / "store"
    command = [sys.executable, "-m", "ckpt_tui", "serve", str(store), "--port", "0"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(
        [*command, "--api-key", key], cwd=REPO, env=env, stdout=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        try:
            url = line.split("serving ", 1)[1].split(" ", 1)[0]
            assert httpx.get(f"{url}/api/v1/healthz", timeout=10).json()["status"] == "ok"
            assert httpx.get(f"{url}/api/v1/checkpoints", timeout=10).status_code == 401
        finally:
            proc.send_signal(stop)
            code = proc.wait(timeout=20)
    assert code == 0
    assert store.is_dir()
    assert key not in line
    assert "auth on" in line
    assert f"TINKER_BASE_URL={url}" in line


def test_jwt_needs_a_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for flag in ("--jwt", "--credential-cmd"):
        assert main(["serve", str(tmp_path / "s"), "--port", "0", flag]) == 2
        assert "--jwt needs an API key" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


def test_jwt_lifetime_must_be_whole_positive_seconds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for bad in ("0", "1.5"):
        with pytest.raises(SystemExit):
            main(["serve", str(tmp_path / "s"), "--jwt", "--jwt-lifetime", bad])
        assert "--jwt-lifetime" in capsys.readouterr().err


def test_serve_credential_cmd_exchanges_keys_for_jwts(tmp_path: Path) -> None:
    key = "tml-cli-secret"
    command = [sys.executable, "-m", "ckpt_tui", "serve", str(tmp_path / "store"), "--port", "0"]
    flags = ["--api-key", key, "--credential-cmd", "--jwt-lifetime", "5"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(
        [*command, *flags], cwd=REPO, env=env, stdout=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        try:
            url = line.split("serving ", 1)[1].split(" ", 1)[0]
            config = httpx.post(f"{url}/api/v1/client/config", json={}, timeout=10).json()
            token = httpx.post(
                f"{url}/api/v1/auth/token", json={}, headers={"X-API-Key": key}, timeout=10
            ).json()["jwt"]
            listed = httpx.get(f"{url}/api/v1/checkpoints", headers={"X-API-Key": token})
        finally:
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=20) == 0
    assert config == {"pjwt_auth_enabled": True, "credential_default_source": "credential_cmd"}
    assert listed.status_code == 200
    assert "5 s JWTs" in line and "TINKER_CREDENTIAL_CMD=" in line
    assert key not in line
