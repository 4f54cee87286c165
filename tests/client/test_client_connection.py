"""Where the client connects: flags, then environment, then `tinker auth login`'s file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ckpt_tui.client import (
    DEFAULT_BASE_URL,
    CredentialsError,
    Endpoint,
    read_default_key,
    resolve_backend,
)
from ckpt_tui.client.secret import Secret

ENV_KEY = "tml-from-env"
FILE_KEY = "tml-from-file"
FLAG_KEY = "tml-from-flag"


def write_credentials(path: Path, default: str | None = "laptop", **extra: object) -> Path:
    """The file `tinker auth login` writes (tinker/lib/credentials.py, version 1)."""
    data = {
        "version": 1,
        "default": default,
        "keys": {
            "laptop": {"type": "manual", "key": FILE_KEY, "name": "my laptop"},
            "old": {"type": "generated", "key": "tml-old", "name": "old", "details": {}},
        },
        **extra,
    }
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture
def creds(tmp_path: Path) -> Path:
    return write_credentials(tmp_path / "credentials.json")


def test_default_key_from_credentials_file(creds: Path) -> None:
    backend = resolve_backend(env={}, credentials_path=creds)
    assert backend.api_key == Secret(FILE_KEY)
    assert backend.key_source == f"default key 'my laptop' in {creds}"
    assert backend.base_url == DEFAULT_BASE_URL


def test_missing_credentials_file_means_no_key(tmp_path: Path) -> None:
    backend = resolve_backend(env={}, credentials_path=tmp_path / "absent.json")
    assert backend.api_key is None
    assert backend.key_source is None
    assert "no API key" in backend.describe()


def test_a_directory_in_place_of_the_file_means_no_key(tmp_path: Path) -> None:
    assert read_default_key(tmp_path) is None


def test_no_default_or_dangling_default_means_no_key(tmp_path: Path) -> None:
    assert read_default_key(write_credentials(tmp_path / "a.json", default=None)) is None
    assert read_default_key(write_credentials(tmp_path / "b.json", default="gone")) is None


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        "[1, 2]",
        '{"version": 2, "keys": {}}',
        '{"version": 1, "default": "a", "keys": {"a": {"type": "manual", "name": "a"}}}',
        '{"version": 1, "keys": {"a": {"type": "magic", "key": "k", "name": "a"}}}',
        '{"version": 1, "keys": []}',
        b"\xff\xfe not utf-8",
    ],
)
def test_malformed_credentials_file_is_reported_naming_it(
    tmp_path: Path, content: str | bytes
) -> None:
    path = tmp_path / "credentials.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(CredentialsError) as caught:
        resolve_backend(env={}, credentials_path=path)
    assert str(path) in caught.value.message
    assert "tinker auth login" in caught.value.message


def test_home_credentials_file_is_the_default_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".tinker").mkdir()
    write_credentials(tmp_path / ".tinker" / "credentials.json")
    backend = resolve_backend(env={})
    assert backend.api_key == Secret(FILE_KEY)
    assert backend.key_source == "default key 'my laptop' in ~/.tinker/credentials.json"


def test_env_beats_file(creds: Path) -> None:
    env = {"TINKER_API_KEY": ENV_KEY, "TINKER_BASE_URL": "http://127.0.0.1:9/"}
    backend = resolve_backend(env=env, credentials_path=creds)
    assert backend.api_key == Secret(ENV_KEY)
    assert backend.key_source == "TINKER_API_KEY"
    assert backend.base_url == "http://127.0.0.1:9"


def test_env_key_wins_even_over_a_malformed_file(tmp_path: Path) -> None:
    path = tmp_path / "credentials.json"
    path.write_text("{broken", encoding="utf-8")
    assert resolve_backend(env={"TINKER_API_KEY": ENV_KEY}, credentials_path=path).api_key


def test_flags_beat_env(creds: Path) -> None:
    env = {"TINKER_API_KEY": ENV_KEY, "TINKER_BASE_URL": "http://env.example"}
    backend = resolve_backend(
        url="http://flag.example/base/", api_key=FLAG_KEY, env=env, credentials_path=creds
    )
    assert backend.api_key == Secret(FLAG_KEY)
    assert backend.key_source == "--api-key flag"
    assert backend.base_url == "http://flag.example/base"


def test_empty_values_count_as_unset(creds: Path) -> None:
    env = {"TINKER_API_KEY": "", "TINKER_BASE_URL": ""}
    backend = resolve_backend(url="", api_key="", env=env, credentials_path=creds)
    assert backend.api_key == Secret(FILE_KEY)
    assert backend.base_url == DEFAULT_BASE_URL


def test_local_beats_everything(creds: Path, tmp_path: Path) -> None:
    env = {"TINKER_API_KEY": ENV_KEY}
    backend = resolve_backend(
        local=tmp_path / "store", url="http://x", api_key=FLAG_KEY, env=env, credentials_path=creds
    )
    assert backend.is_local
    assert backend.api_key is None
    assert backend.describe() == f"local store {tmp_path / 'store'}"


def test_key_never_shows_in_repr_or_str() -> None:
    backend = Endpoint.remote("http://h/", "tml-secret-value", "TINKER_API_KEY")
    for text in (repr(backend), str(backend), backend.describe()):
        assert "tml-secret-value" not in text
    assert "TINKER_API_KEY" in str(backend)
    assert backend.base_url == "http://h"


def test_credential_command_is_the_fallback_and_shadows_the_stored_key(creds: Path) -> None:
    env = {"TINKER_CREDENTIAL_CMD": "print-token"}
    backend = resolve_backend(env=env, credentials_path=creds)
    assert backend.api_key is None  # as in the SDK: the stored key does not shadow the command
    credential = backend.credential()
    assert credential is not None and credential.command == "print-token"
    assert backend.describe().endswith("(credential from TINKER_CREDENTIAL_CMD)")
    keyed = resolve_backend(env={**env, "TINKER_API_KEY": ENV_KEY}, credentials_path=creds)
    assert keyed.credential() == type(credential)("TINKER_API_KEY", Secret(ENV_KEY))
    demanded = keyed.credential(command_required=True)
    assert demanded is not None and demanded.command == "print-token"
    assert "print-token" not in repr(keyed) + str(keyed) + repr(demanded)


def test_a_demanded_command_that_is_unset_is_an_error_and_a_jwt_key_is_used_as_is() -> None:
    with pytest.raises(CredentialsError, match="TINKER_CREDENTIAL_CMD"):
        Endpoint.remote("http://127.0.0.1:1", ENV_KEY).credential(command_required=True)
    jwt_key = "eyJhbGciOiJIUzI1NiJ9.e30.x"
    given = Endpoint.remote("http://127.0.0.1:1", jwt_key, "TINKER_API_KEY", credential_cmd="c")
    credential = given.credential(command_required=True)
    assert credential is not None and credential.command is None
    assert credential.key == Secret(jwt_key)
