"""The config file: backends by name, read with the standard library's TOML reader.

`$XDG_CONFIG_HOME/ckpt-tui/config.toml`, else `~/.config/ckpt-tui/config.toml`:

    [backends.box1]
    url = "http://127.0.0.1:8751"
    api_key_env = "BOX1_KEY"        # or api_key_file = "~/.config/ckpt-tui/box1.key"
    storage_rate = 0.04             # USD per GiB-month, optional
    readonly = false                # optional
    max_in_flight = 32              # most changes sent at once (bulk delete...), optional

    [backends.scratch]
    local = "/data/ckpts"

    [backends.bucket]
    local = "s3://my-bucket/checkpoints"    # or gs://, az://
    endpoint = "https://s3.example.com"      # optional (MinIO, R2...); region = "eu-west-1" too

A bucket's credentials are never in the file either: each cloud's client reads its standard
environment variables (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE...).

A key is never written in the file itself: `api_key_env` names an environment variable and
`api_key_file` a file that holds it; both are read only when the backend is opened, and
checked then (a missing key, or one no request can carry, is that backend's error, not the
file's; the key is held as a Secret and never shown). Anything else wrong is a ConfigError
naming the file, the line and key, and the fix.
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from ckpt_tui.backends.descriptor import NAME_PATTERN, NAME_RULE
from ckpt_tui.client import DEFAULT_MAX_IN_FLIGHT, InvalidUrlError
from ckpt_tui.client.endpoint import check_base_url, without_user_info
from ckpt_tui.client.secret import Secret, UnusableKey, checked_key
from ckpt_tui.locations import UnsupportedLocationError, has_scheme, parse_location
from ckpt_tui.regular_files import read_regular

MAX_CONFIG_BYTES = 1 << 20
MAX_KEY_FILE_BYTES = 1 << 16
KNOWN_KEYS = (
    "url",
    "local",
    "api_key_env",
    "api_key_file",
    "storage_rate",
    "readonly",
    "max_in_flight",
    "endpoint",
    "region",
)
MAX_IN_FLIGHT_CEILING = 1024
"""The largest `max_in_flight` accepted: beyond it, a typo (an extra zero) is likelier than a
wish."""
LITERAL_KEY = (
    "a key is never written in the config file: put it in an environment variable and name "
    'that with api_key_env = "BOX1_KEY", or in a file only you can read and name that with '
    'api_key_file = "~/.config/ckpt-tui/box1.key"; then remove api_key'
)


class ConfigError(Exception):
    """The config file cannot be used; the message names the file, where, and the fix."""


class KeyProblem(Exception):
    """A configured backend's key cannot be read (unset variable, unreadable file)."""


class ConfiguredBackend(msgspec.Struct, frozen=True, gc=False):
    """One `[backends.NAME]` table, checked."""

    name: str
    url: str | None = None
    local: Path | None = None
    bucket: str | None = None
    """`local = "s3://bucket/prefix"` (gs://, az://): a bucket location, with the client's
    `endpoint` and `region` (credentials come from the cloud's standard environment)."""
    endpoint: str | None = None
    region: str | None = None
    api_key_env: str | None = None
    api_key_file: Path | None = None
    storage_rate: float | None = None
    readonly: bool = False
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    """The most changes sent to it at once; bulk actions adapt below it (client.pacing)."""
    source: str = ""
    """Where it was configured, for messages: '[backends.box1] in /home/me/.config/...'."""
    problem: str | None = None
    """Why it cannot be opened (its url cannot work): shown as its error; the others open."""

    def key(self, env: Mapping[str, str]) -> tuple[Secret | None, str | None]:
        """(key, where it came from) as the config names it; (None, None) when it names none.

        KeyProblem saying what to do when the variable is unset, the file unreadable, or
        the key one that no request can carry (never what the key is).
        """
        if self.api_key_env is not None:
            where = f"${self.api_key_env} (the api_key_env of {self.source})"
            if not env.get(self.api_key_env, "").strip():
                raise KeyProblem(
                    f"${self.api_key_env} is not set (the api_key_env of {self.source}): "
                    "export it with this backend's key, or change the config"
                )
            return sendable(env[self.api_key_env].strip(), where), f"${self.api_key_env}"
        if self.api_key_file is not None:
            where = f"{self.api_key_file} (the api_key_file of {self.source})"
            key = sendable(read_key_file(self.api_key_file, self.source), where)
            return key, str(self.api_key_file)
        return None, None


class Config(msgspec.Struct, frozen=True, gc=False):
    """The backends a config file names, in file order (empty when there is no file)."""

    path: Path
    backends: tuple[ConfiguredBackend, ...] = ()


def config_path(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_CONFIG_HOME/ckpt-tui/config.toml`, else `~/.config/ckpt-tui/config.toml` (a
    relative XDG_CONFIG_HOME is ignored, as the XDG spec says)."""
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME", "")
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".config"
    return root / "ckpt-tui" / "config.toml"


def load_config(path: Path | None = None, env: Mapping[str, str] | None = None) -> Config:
    """The config at `path` (default: `config_path()`); empty when the file does not exist."""
    path = config_path(env) if path is None else path
    try:
        raw = read_regular(path, MAX_CONFIG_BYTES)  # a FIFO would hang every command
    except FileNotFoundError:
        return Config(path)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror}); fix or remove it") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_CONFIG_BYTES} bytes; is it the right file?")
    return parse_config(raw, path)


def parse_config(raw: bytes, path: Path) -> Config:
    """The backends `raw` (a config file's bytes) names; ConfigError on anything wrong."""
    if sys.version_info >= (3, 11):  # imported here: 2 ms of every start, for a config file
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        text = raw.decode("utf-8")
        data = tomllib.loads(text)
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text; save it as UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}; fix that line") from None
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply to be a ckpt-tui config") from None
    where = Locator(path, text)
    unknown = sorted(set(data) - {"backends"})
    if unknown:
        raise where.error(
            None, unknown[0], "unknown setting; the file holds [backends.NAME] tables"
        )
    tables = data.get("backends", {})
    if not isinstance(tables, dict):
        raise where.error(None, "backends", "must be tables: [backends.NAME]")
    return Config(path, tuple(checked(name, table, where) for name, table in tables.items()))


def checked(name: str, table: Any, where: Locator) -> ConfiguredBackend:
    """One backend's table, checked key by key."""
    if NAME_PATTERN.fullmatch(name) is None:
        raise where.error(name, None, f"not a usable backend name: use {NAME_RULE} characters")
    if not isinstance(table, dict):
        raise where.error(name, None, "must be a table of settings (url = ..., or local = ...)")
    if "api_key" in table:
        raise where.error(name, "api_key", LITERAL_KEY)
    for key in table:
        if key not in KNOWN_KEYS:
            raise where.error(name, key, f"unknown setting; known ones: {', '.join(KNOWN_KEYS)}")
    for key in ("url", "local", "api_key_env", "api_key_file", "endpoint", "region"):
        if key in table and (not isinstance(table[key], str) or not table[key].strip()):
            raise where.error(name, key, "must be a non-empty string in quotes")
    if ("url" in table) == ("local" in table):
        fix = 'give one: url = "http://127.0.0.1:8751" or local = "/data/ckpts"'
        raise where.error(name, "url" if "url" in table else None, fix)
    if "api_key_env" in table and "api_key_file" in table:
        raise where.error(name, "api_key_file", "give api_key_env or api_key_file, not both")
    source = f"[backends.{name}] in {where.path}"
    rate, readonly = rate_of(table, name, where), flag_of(table, name, where)
    in_flight = in_flight_of(table, name, where)
    if "local" in table:
        for key in ("api_key_env", "api_key_file"):
            if key in table:
                raise where.error(name, key, "a local store takes no key; remove it")
        if has_scheme(table["local"].strip()):
            return bucket_of(table, name, where, source, rate, readonly, in_flight)
        for key in ("endpoint", "region"):
            if key in table:
                raise where.error(name, key, 'only a bucket (local = "s3://…") takes it')
        folder = local_of(table["local"], name, where)
        return ConfiguredBackend(
            name,
            local=folder,
            storage_rate=rate,
            readonly=readonly,
            max_in_flight=in_flight,
            source=source,
        )
    url, problem = url_of(table["url"], name, where)
    key_file = table.get("api_key_file")
    return ConfiguredBackend(
        name,
        url=url,
        problem=problem,
        api_key_env=table.get("api_key_env"),
        api_key_file=None if key_file is None else Path(key_file).expanduser(),
        storage_rate=rate,
        readonly=readonly,
        max_in_flight=in_flight,
        source=source,
    )


def url_of(text: str, name: str, where: Locator) -> tuple[str, str | None]:
    """(the url, None), or, for a url that cannot work (no http://, a port above 65535, a
    control character), (the url as it may be shown, why): that backend's own error; the
    others still open."""
    url = text.strip()
    try:
        check_base_url(url, f"url of [backends.{name}]")
    except InvalidUrlError as exc:
        shown = without_user_info(ascii(url)[1:-1])  # no password, no control character
        return shown, f"{where.error(name, 'url', exc.message)}; or fix the config"
    return url.rstrip("/"), None


def rate_of(table: dict[str, Any], name: str, where: Locator) -> float | None:
    rate = table.get("storage_rate")
    if rate is None:
        return None
    usable = isinstance(rate, (int, float)) and not isinstance(rate, bool)
    if not usable or not math.isfinite(rate) or rate < 0:
        raise where.error(name, "storage_rate", "must be a number >= 0 (USD per GiB-month)")
    return float(rate)


def flag_of(table: dict[str, Any], name: str, where: Locator) -> bool:
    value = table.get("readonly", False)
    if not isinstance(value, bool):
        raise where.error(name, "readonly", "must be true or false (no quotes)")
    return value


def in_flight_of(table: dict[str, Any], name: str, where: Locator) -> int:
    value = table.get("max_in_flight", DEFAULT_MAX_IN_FLIGHT)
    if not isinstance(value, int) or isinstance(value, bool):
        raise where.error(name, "max_in_flight", "must be a whole number (no quotes), e.g. 32")
    if not 1 <= value <= MAX_IN_FLIGHT_CEILING:
        fix = f"must be from 1 to {MAX_IN_FLIGHT_CEILING} (changes sent at once), e.g. 32"
        raise where.error(name, "max_in_flight", fix)
    return value


def bucket_of(
    table: dict[str, Any],
    name: str,
    where: Locator,
    source: str,
    rate: float | None,
    readonly: bool,
    in_flight: int,
) -> ConfiguredBackend:
    """A backend whose `local` is a bucket location; never a credential from this file."""
    try:
        location = parse_location(table["local"].strip())
    except UnsupportedLocationError as exc:
        raise where.error(name, "local", str(exc)) from None
    assert location is not None
    endpoint = table.get("endpoint")
    if endpoint is not None:
        if without_user_info(endpoint) != endpoint:
            raise where.error(name, "endpoint", "no credentials in the endpoint: " + CLOUD_ENV)
        try:
            check_base_url(endpoint, f"endpoint of [backends.{name}]")
        except InvalidUrlError as exc:
            raise where.error(name, "endpoint", exc.message) from None
    return ConfiguredBackend(
        name,
        bucket=location.url,
        endpoint=endpoint,
        region=table.get("region"),
        storage_rate=rate,
        readonly=readonly,
        max_in_flight=in_flight,
        source=source,
    )


CLOUD_ENV = (
    "credentials come from the cloud's environment (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, "
    "AWS_PROFILE; GOOGLE_APPLICATION_CREDENTIALS; AZURE_STORAGE_*)"
)


def local_of(text: str, name: str, where: Locator) -> Path:
    folder = Path(text.strip()).expanduser()
    if not folder.is_absolute():
        raise where.error(name, "local", "give the store folder's absolute path (or ~/...)")
    return folder


def sendable(key: str, where: str) -> Secret:
    """A key read from `where` as a Secret; KeyProblem saying what is wrong with it."""
    try:
        return checked_key(key)
    except UnusableKey as exc:
        raise KeyProblem(
            f"the key in {where} cannot be sent: {exc}; put only this backend's key there, "
            "exactly as it was issued"
        ) from None


def read_key_file(path: Path, source: str) -> str:
    """The key a key file holds (surrounding whitespace dropped); KeyProblem if none.

    Only a regular file (a link to one too), opened without blocking and read to a bound: a
    FIFO or a device named here would otherwise hang every command."""
    try:
        raw = read_regular(path, MAX_KEY_FILE_BYTES)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise KeyProblem(
            f"{path} (the api_key_file of {source}) cannot be read ({reason}): "
            "put this backend's key in it, or change the config"
        ) from None
    try:
        key = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        key = ""
    if not key or len(raw) > MAX_KEY_FILE_BYTES or any(c.isspace() for c in key):
        raise KeyProblem(
            f"{path} (the api_key_file of {source}) does not hold one key: "
            "put only this backend's key in it"
        )
    return key


class Locator:
    """Finds the line of a table or key in the file's text, for messages (best effort)."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = text.splitlines()

    def error(self, table: str | None, key: str | None, fix: str) -> ConfigError:
        line = self.line_of(table, key)
        at = f", line {line}" if line else ""
        what = f"[backends.{table}]" if table is not None else ""
        if key is not None:
            what = f"{what} {key}".strip()
        return ConfigError(f"{self.path}{at}: {what}: {fix}")

    def line_of(self, table: str | None, key: str | None) -> int | None:
        inside = table is None
        header = re.compile(rf"\s*\[\s*backends\s*\.\s*(\"?){re.escape(table or '')}\1\s*\]")
        for number, line in enumerate(self.lines, 1):
            if line.lstrip().startswith("["):
                inside = table is not None and header.match(line) is not None
                if inside and key is None:
                    return number
                continue
            if inside and key is not None and re.match(rf"\s*{re.escape(key)}\s*=", line):
                return number
        return None
