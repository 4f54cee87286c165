"""Where the client connects (its endpoint: a URL or a local store), and with which key.

Resolution order (`resolve_backend`):
1. `--local STORE`: the server's app in-process, no port, no key;
2. URL: `--url`, else `$TINKER_BASE_URL`, else the hosted service;
   key: `--api-key`, else `$TINKER_API_KEY`, else (when `$TINKER_CREDENTIAL_CMD` is not set)
   the default key that `tinker auth login` stored in `~/.tinker/credentials.json`.
   `$TINKER_CREDENTIAL_CMD` is kept too: the server's client config may demand it, and it is
   the fallback when no key is given (see `Endpoint.credential`).
Empty values count as unset (as in the SDK). A key is checked as it is read (printable
ASCII, see ckpt_tui.client.secret) and held as a `Secret`: it is never part of a `repr`,
`str` or message. A URL with user info (`http://user:password@host`) is refused: a key goes
in --api-key, TINKER_API_KEY or the config file, never in a URL that messages show.

How the key is then used (sent as is, or exchanged for JWTs) is settled at start-up by
ckpt_tui.client.session, as the SDK does.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import msgspec

from ckpt_tui.client.credential_cmd import CREDENTIAL_CMD_ENV
from ckpt_tui.client.errors import CredentialsError, InvalidUrlError
from ckpt_tui.client.secret import Secret, UnusableKey, as_secret, checked_key
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
    key: Secret | None = None
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


class Endpoint(msgspec.Struct, frozen=True, gc=False):
    """A resolved place to talk to: a base URL with an optional key, or a local store folder.

    `project` narrows the training runs to one project (`GET /training_runs?project_id=`).
    """

    base_url: str
    api_key: Secret | None = None
    key_source: str | None = None
    local_store: Path | None = None
    local_bucket: str | None = None
    """A bucket location (`s3://bucket/prefix`) served in-process, as `local_store` is."""
    bucket_endpoint: str | None = None
    bucket_region: str | None = None
    credential_cmd: str | None = None
    project: str | None = None
    tinker_connection: bool = False
    """The environment's Tinker connection (`resolve_backend`): the only one that runs
    `$TINKER_CREDENTIAL_CMD`."""

    def __repr__(self) -> str:  # never the key or the credential command
        return (
            f"Endpoint(base_url={self.base_url!r}, key_source={self.key_source!r}, "
            f"local_store={self.local_store!r}, local_bucket={self.local_bucket!r}, "
            f"project={self.project!r})"
        )

    @classmethod
    def remote(
        cls,
        base_url: str,
        api_key: str | Secret | None = None,
        key_source: str | None = None,
        *,
        credential_cmd: str | None = None,
        project: str | None = None,
        tinker_connection: bool = False,
    ) -> Endpoint:
        """A server at `base_url` (a trailing `/` is dropped)."""
        key = as_secret(api_key)
        if key and key_source is None:
            key_source = "the given API key"
        return cls(
            base_url.rstrip("/"),
            key,
            key_source if api_key else None,
            credential_cmd=credential_cmd or None,
            project=project or None,
            tinker_connection=tinker_connection,
        )

    def credential(self, *, command_required: bool = False) -> Credential | None:
        """The credential to present, as the SDK picks it (`resolve_auth_provider`).

        A JWT given as the key is used as is. When the server's client config demands the
        credential command (`command_required`), it is used instead of any other key, and
        CredentialsError says so when it is not set. Otherwise the key comes first and the
        command is the fallback. None: nothing is configured.
        """
        key = self.api_key
        if key and is_jwt(key.reveal()):
            return Credential(self.key_source or "the given API key", key)
        command = Credential(CREDENTIAL_CMD_ENV, command=self.credential_cmd)
        if command_required:
            if self.credential_cmd is None:
                raise CredentialsError(command_wanted(self.base_url, self.tinker_connection))
            return command
        if key:
            return Credential(self.key_source or "the given API key", key)
        return command if self.credential_cmd is not None else None

    @classmethod
    def local(cls, store: Path, project: str | None = None) -> Endpoint:
        """The store at `store`, served in-process."""
        return cls(LOCAL_BASE_URL, local_store=Path(store), project=project or None)

    @classmethod
    def bucket(
        cls,
        url: str,
        project: str | None = None,
        *,
        endpoint: str | None = None,
        region: str | None = None,
    ) -> Endpoint:
        """The store on bucket location `url` (`s3://bucket/prefix`), served in-process;
        `endpoint` and `region` are the client's (credentials come from the environment)."""
        return cls(
            LOCAL_BASE_URL,
            local_bucket=url,
            bucket_endpoint=endpoint,
            bucket_region=region,
            project=project or None,
        )

    @property
    def is_local(self) -> bool:
        return self.local_store is not None or self.local_bucket is not None

    @property
    def local_place(self) -> str | None:
        """The store folder's path or the bucket location; None for a server."""
        if self.local_bucket is not None:
            return self.local_bucket
        return None if self.local_store is None else str(self.local_store)

    @property
    def display_url(self) -> str:
        """What messages call this backend: the URL, or `local store PATH`."""
        return f"local store {self.local_place}" if self.is_local else self.base_url

    def describe(self, credential: str | None = None) -> str:
        """One line for a status bar: where, where the key came from (never the key), and the
        project. `credential` replaces the key's part once start-up has settled it."""
        project = f", project {self.project}" if self.project else ""
        if self.is_local:
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
        if self.local_bucket is not None:
            return f"local store {self.local_bucket}"
        if self.local_store is not None:
            parts = self.local_store.parts
            tail = "/".join(parts[-2:]) if len(parts) > 2 else str(self.local_store)
            return f"local store {'…/' if len(parts) > 2 else ''}{tail}"
        if self.base_url == DEFAULT_BASE_URL:
            return "Tinker (hosted)"
        return urlsplit(self.base_url).netloc or self.base_url

    def nothing_found(self) -> str:
        """What an empty backend says: where it looked (and, for a folder, for what)."""
        if not self.is_local:
            return f"no checkpoints on {self.base_url}"
        return f"no checkpoints found under {self.local_place} (looked for {LOCAL_KINDS})"

    def __str__(self) -> str:
        return self.describe()


def resolve_backend(
    *,
    local: str | Path | None = None,
    url: str | None = None,
    api_key: str | Secret | None = None,
    env: Mapping[str, str] | None = None,
    credentials_path: Path | None = None,
    project: str | None = None,
) -> Endpoint:
    """Pick the backend from flags, then the environment, then the credentials file."""
    if local:
        return Endpoint.local(Path(local), project)
    env = os.environ if env is None else env
    base_url = url or env.get("TINKER_BASE_URL") or DEFAULT_BASE_URL
    check_base_url(base_url, "--url" if url else "TINKER_BASE_URL")
    command = env.get(CREDENTIAL_CMD_ENV) or None
    key, source = _key_and_source(api_key, env, credentials_path, command)
    return Endpoint.remote(
        base_url, key, source, credential_cmd=command, project=project, tinker_connection=True
    )


def _key_and_source(
    flag: str | Secret | None,
    env: Mapping[str, str],
    credentials_path: Path | None,
    command: str | None,
) -> tuple[Secret | None, str | None]:
    if flag:
        return usable_key(flag, "the key of --api-key"), "--api-key flag"
    if env.get("TINKER_API_KEY"):
        return usable_key(env["TINKER_API_KEY"], "the key in $TINKER_API_KEY"), "TINKER_API_KEY"
    # As in the SDK, the stored default must not shadow the credential command.
    stored = None if command else read_default_key(credentials_path)
    if stored is None:
        return None, None
    _name, key, source = stored
    return key, source


def usable_key(
    key: str | Secret, what: str, fix: str = "give the key exactly as it was issued"
) -> Secret:
    """`key` (`what`: "the key in $TINKER_API_KEY", ...) checked as a Secret;
    CredentialsError saying what is wrong and `fix`, never what the key is."""
    try:
        return checked_key(key.reveal() if isinstance(key, Secret) else key)
    except UnusableKey as exc:
        raise CredentialsError(f"{what} cannot be sent: {exc}; {fix}") from None


def command_wanted(base_url: str, tinker_connection: bool) -> str:
    """What to do when a server demands a credential from the command and has none."""
    if tinker_connection:
        return (
            f"{base_url} requires dynamic credentials: set {CREDENTIAL_CMD_ENV} to a command "
            "that prints a valid credential"
        )
    return (
        f"{base_url} asks for a credential from {CREDENTIAL_CMD_ENV}: ckpt-tui runs that "
        "command for the Tinker connection only (so its credential never goes to another "
        f"server); to use it with this server, make it the Tinker connection: "
        f"TINKER_BASE_URL={base_url} {CREDENTIAL_CMD_ENV}=CMD ckpt-tui, with no --url and "
        "no config entry for it"
    )


SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:/*")
"""The scheme of a URL, with the slashes after it (`http://`)."""


def without_user_info(url: str) -> str:
    """`url` as it may be shown: everything from after its scheme through its last `@`
    dropped (`http://user:pass/word@host/` as `http://host/`): a password may hold an
    unencoded `/`, `?`, `#` or `@`, so no guess at where user info ends is safe. (Such a URL
    is refused as it is given; this keeps any that slips by off the screen.)"""
    if "@" not in url:
        return url
    scheme = SCHEME.match(url)
    return (scheme.group(0) if scheme else "") + url.rpartition("@")[2]


def check_base_url(url: str, source: str = "the server URL") -> None:
    """InvalidUrlError unless `url` is http:// or https:// with a host, a port from 1 to
    65535 (or none), no control character and no `@` (`source` names where it came from,
    e.g. "--url"): each of those would otherwise fail deep inside the connection, for every
    backend at once. A URL holding `@` anywhere is refused first and without being quoted: a
    base URL never needs one, and it may be user info whose password holds `/`, `?` or `#`."""
    if "@" in url:
        raise InvalidUrlError(
            f"the URL from {source} holds '@', as a user name or password does "
            "(user:password@host): give the URL without it, and the key with --api-key, "
            "api_key_env or api_key_file in the config file, or TINKER_API_KEY"
        )
    problem = url_problem(url)
    if problem is not None:
        raise InvalidUrlError(f"{url!r} (from {source}) is not a server URL: {problem}")


URL_EXAMPLE = "e.g. --url http://127.0.0.1:8750"


def url_problem(url: str) -> str | None:
    """What is wrong with `url` as a server's base URL, and the fix; None when nothing is."""
    if any(ord(char) < 0x20 or ord(char) == 0x7F or char.isspace() for char in url):
        # checked first: urlsplit silently drops tabs and newlines
        return f"it holds a control character or a space; give the URL alone, {URL_EXAMPLE}"
    try:
        parts = urlsplit(url)
        usable = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # e.g. an unclosed IPv6 bracket
        usable = False
    if not usable:
        return f"give one that starts with http:// or https:// and names a host, {URL_EXAMPLE}"
    try:
        port = parts.port
    except ValueError:  # not a number, or above 65535
        port = 0
    if port is not None and not 1 <= port <= 65535:
        return f"its port must be a number from 1 to 65535, {URL_EXAMPLE}"
    import httpx  # here: only a URL that got this far needs it

    try:
        httpx.URL(url)
    except httpx.InvalidURL:  # its text may quote the URL's user info: not shown
        return f"it cannot be parsed as a URL (check its host and path), {URL_EXAMPLE}"
    return None


def read_default_key(path: Path | None = None) -> tuple[str, Secret, str] | None:
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
    source = f"default key '{name}' in {shown}"
    key = usable_key(record["key"], f"the {source}", "run `tinker auth login` again")
    return name, key, source


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
