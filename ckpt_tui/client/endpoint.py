"""Where the client connects (its endpoint: a URL or a local store), and with which key.

Resolution order (`resolve_backend`):
1. `--local STORE`: the server's app in-process, no port, no key;
2. URL: `--url`, else `$TINKER_BASE_URL`, else the hosted service;
   key: `--api-key`, else `$TINKER_API_KEY`, else (when `$TINKER_CREDENTIAL_CMD` is not set)
   the default key that `tinker auth login` stored in `~/.tinker/credentials.json`.
   `$TINKER_CREDENTIAL_CMD` is kept too: the server's client config may demand it, and it is
   the fallback when no key is given (see `Backend.credential`).
Empty values count as unset (as in the SDK). The key is never part of `repr`/`str`.

How the key is then used (sent as is, or exchanged for JWTs) is settled at start-up by
ckpt_tui.client.session, as the SDK does.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import msgspec

from ckpt_tui.client.credential_cmd import CREDENTIAL_CMD_ENV
from ckpt_tui.client.errors import CredentialsError, InvalidUrlError
from ckpt_tui.client.tokens import is_jwt
from ckpt_tui.regular_files import read_regular

DEFAULT_BASE_URL = "https://tinker.thinkingmachines.dev/services/tinker-prod"
"""The hosted service, as `tinker.lib.base_url.DEFAULT_BASE_URL` (SDK 0.38.0) names it."""

API_KEY_HEADER = "X-API-Key"
"""The header the SDK's auth provider sets."""

CREDENTIALS_DISPLAY_PATH = "~/.tinker/credentials.json"
MAX_CREDENTIALS_BYTES = 1 << 20
"""The most of it read: a few keys take a few hundred bytes."""
LOCAL_BASE_URL = "http://local-store"
"""The base URL requests carry in local mode; never reaches a network."""

LOCAL_KINDS = (
    "runs/<run>/ Tinker-style runs, HF Trainer checkpoint-<step>/ folders, save_pretrained and "
    "PEFT folders, torch.save files (.pt .pth .bin .ckpt), DeepSpeed global_step<N>/, "
    "torch.distributed.checkpoint and Accelerate folders, 6 levels deep"
)
"""What a local store is searched for (`ckpt_tui.store.discover`)."""


def default_credentials_path() -> Path:
    """Where `tinker auth login` keeps keys (the SDK has no environment override)."""
    return Path(CREDENTIALS_DISPLAY_PATH).expanduser()


class Credential(msgspec.Struct, frozen=True, gc=False):
    """One credential to present: a fixed key, or a command that prints a fresh one."""

    source: str
    """Where it comes from, for people: `--api-key flag`, `TINKER_CREDENTIAL_CMD`, ..."""
    key: str | None = None
    command: str | None = None

    def __repr__(self) -> str:
        return f"Credential(source={self.source!r})"  # never the key or the command

    @property
    def description(self) -> str:
        """'the API key from X' or 'the credential from TINKER_CREDENTIAL_CMD'."""
        kind = "credential" if self.command is not None else "API key"
        return f"the {kind} from {self.source}"

    @property
    def short(self) -> str:
        """'key from X' or 'credential from TINKER_CREDENTIAL_CMD', for a status line."""
        kind = "credential" if self.command is not None else "key"
        return f"{kind} from {self.source}"


class Backend(msgspec.Struct, frozen=True, gc=False):
    """A resolved place to talk to: a base URL with an optional key, or a local store folder.

    `project` narrows the training runs to one project (`GET /training_runs?project_id=`).
    """

    base_url: str
    api_key: str | None = None
    key_source: str | None = None
    local_store: Path | None = None
    credential_cmd: str | None = None
    project: str | None = None

    def __repr__(self) -> str:  # never the key or the credential command
        return (
            f"Backend(base_url={self.base_url!r}, key_source={self.key_source!r}, "
            f"local_store={self.local_store!r}, project={self.project!r})"
        )

    @classmethod
    def remote(
        cls,
        base_url: str,
        api_key: str | None = None,
        key_source: str | None = None,
        *,
        credential_cmd: str | None = None,
        project: str | None = None,
    ) -> Backend:
        """A server at `base_url` (a trailing `/` is dropped)."""
        if api_key and key_source is None:
            key_source = "the given API key"
        return cls(
            base_url.rstrip("/"),
            api_key or None,
            key_source if api_key else None,
            credential_cmd=credential_cmd or None,
            project=project or None,
        )

    def credential(self, *, command_required: bool = False) -> Credential | None:
        """The credential to present, as the SDK picks it (`resolve_auth_provider`).

        A JWT given as the key is used as is. When the server's client config demands the
        credential command (`command_required`), it is used instead of any other key, and
        CredentialsError says so when it is not set. Otherwise the key comes first and the
        command is the fallback. None: nothing is configured.
        """
        key = self.api_key
        if key and is_jwt(key):
            return Credential(self.key_source or "the given API key", key)
        command = Credential(CREDENTIAL_CMD_ENV, command=self.credential_cmd)
        if command_required:
            if self.credential_cmd is None:
                raise CredentialsError(
                    f"{self.base_url} requires dynamic credentials: set {CREDENTIAL_CMD_ENV} "
                    "to a command that prints a valid credential"
                )
            return command
        if key:
            return Credential(self.key_source or "the given API key", key)
        return command if self.credential_cmd is not None else None

    @classmethod
    def local(cls, store: Path, project: str | None = None) -> Backend:
        """The store at `store`, served in-process."""
        return cls(LOCAL_BASE_URL, local_store=Path(store), project=project or None)

    @property
    def is_local(self) -> bool:
        return self.local_store is not None

    @property
    def display_url(self) -> str:
        """What messages call this backend: the URL, or `local store PATH`."""
        return f"local store {self.local_store}" if self.local_store else self.base_url

    def describe(self, credential: str | None = None) -> str:
        """One line for a status bar: where, where the key came from (never the key), and the
        project. `credential` replaces the key's part once start-up has settled it."""
        project = f", project {self.project}" if self.project else ""
        if self.local_store is not None:
            return f"{self.display_url}{project}"
        if credential is None:
            configured = self.credential()
            credential = None if configured is None else configured.short
        return f"{self.base_url} ({credential or 'no API key'}{project})"

    def short_name(self) -> str:
        """A few words for a narrow screen: 'local store …/demo/store', 'Tinker (hosted)',
        or the server's host and port; and the project, when one is chosen."""
        project = f", project {self.project}" if self.project else ""
        return self._short_place() + project

    def _short_place(self) -> str:
        if self.local_store is not None:
            parts = self.local_store.parts
            tail = "/".join(parts[-2:]) if len(parts) > 2 else str(self.local_store)
            return f"local store {'…/' if len(parts) > 2 else ''}{tail}"
        if self.base_url == DEFAULT_BASE_URL:
            return "Tinker (hosted)"
        return urlsplit(self.base_url).netloc or self.base_url

    def nothing_found(self) -> str:
        """What an empty backend says: where it looked (and, for a folder, for what)."""
        if self.local_store is None:
            return f"no checkpoints on {self.base_url}"
        return f"no checkpoints found under {self.local_store} (looked for {LOCAL_KINDS})"

    def __str__(self) -> str:
        return self.describe()


def resolve_backend(
    *,
    local: str | Path | None = None,
    url: str | None = None,
    api_key: str | None = None,
    env: Mapping[str, str] | None = None,
    credentials_path: Path | None = None,
    project: str | None = None,
) -> Backend:
    """Pick the backend from flags, then the environment, then the credentials file."""
    if local:
        return Backend.local(Path(local), project)
    env = os.environ if env is None else env
    base_url = url or env.get("TINKER_BASE_URL") or DEFAULT_BASE_URL
    check_base_url(base_url, "--url" if url else "TINKER_BASE_URL")
    command = env.get(CREDENTIAL_CMD_ENV) or None
    key, source = _key_and_source(api_key, env, credentials_path, command)
    return Backend.remote(base_url, key, source, credential_cmd=command, project=project)


def _key_and_source(
    flag: str | None, env: Mapping[str, str], credentials_path: Path | None, command: str | None
) -> tuple[str | None, str | None]:
    if flag:
        return flag, "--api-key flag"
    if env.get("TINKER_API_KEY"):
        return env["TINKER_API_KEY"], "TINKER_API_KEY"
    # As in the SDK, the stored default must not shadow the credential command.
    stored = None if command else read_default_key(credentials_path)
    if stored is None:
        return None, None
    _name, key, source = stored
    return key, source


def check_base_url(url: str, source: str = "the server URL") -> None:
    """InvalidUrlError unless `url` is http:// or https:// with a host (`source` names where
    it came from, e.g. "--url")."""
    try:
        parts = urlsplit(url)
        usable = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # e.g. an unclosed IPv6 bracket
        usable = False
    if usable:
        return
    raise InvalidUrlError(
        f"{url!r} (from {source}) is not a server URL: give one that starts with http:// or "
        "https:// and names a host, e.g. --url http://127.0.0.1:8750"
    )


def read_default_key(path: Path | None = None) -> tuple[str, str, str] | None:
    """(name, key, source) of the stored default key; None when there is none.

    A missing or unreadable file, or one that is not a regular file (a FIFO would hang every
    command), means no key; a file that is not the SDK's format raises CredentialsError
    naming the file.
    """
    shown = CREDENTIALS_DISPLAY_PATH if path is None else str(path)
    path = default_credentials_path() if path is None else path
    try:
        raw = read_regular(path, MAX_CREDENTIALS_BYTES)
    except OSError:
        return None
    if len(raw) > MAX_CREDENTIALS_BYTES:
        raise _parse_error(shown, f"larger than {MAX_CREDENTIALS_BYTES // 1024} KiB")
    record = _default_record(_parse_credentials(raw, shown))
    if record is None:
        return None
    name = str(record.get("name") or "")
    return name, record["key"], f"default key '{name}' in {shown}"


def _parse_error(shown: str, reason: str) -> CredentialsError:
    return CredentialsError(
        f"{shown} is not a valid tinker credentials file ({reason}); "
        "fix or remove it, or run `tinker auth login` again"
    )


def _parse_credentials(raw: bytes, shown: str) -> dict[str, Any]:
    def bad(reason: str) -> CredentialsError:
        return _parse_error(shown, reason)

    try:
        data = json.loads(raw.decode("utf-8"))
    except ValueError as exc:  # UnicodeDecodeError is a ValueError too
        raise bad(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise bad("not a JSON object")
    if data.get("version", 1) != 1:
        raise bad(f"unknown version {data.get('version')!r}")
    keys = data.get("keys", {})
    default = data.get("default")
    if not isinstance(keys, dict) or not (default is None or isinstance(default, str)):
        raise bad("'keys' must be an object and 'default' a string")
    for key_id, record in keys.items():
        problem = _record_problem(record)
        if problem:
            raise bad(f"key {key_id!r}: {problem}")
    return data


def _record_problem(record: Any) -> str:
    if not isinstance(record, dict):
        return "not an object"
    if record.get("type", "manual") not in ("manual", "generated"):
        return f"unknown type {record.get('type')!r}"
    if not isinstance(record.get("key"), str) or not isinstance(record.get("name"), str):
        return "'key' and 'name' must be strings"
    return ""


def _default_record(data: dict[str, Any]) -> dict[str, Any] | None:
    """The default key's record; None when no default is set or it names no stored key."""
    default = data.get("default")
    keys: dict[str, Any] = data.get("keys", {})
    if default is None or default not in keys:
        return None
    record: dict[str, Any] = keys[default]
    return record
