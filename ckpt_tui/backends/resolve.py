"""Which backends to open, from the command line, the config file and the environment.

- `--url [NAME=]URL` and `--local [NAME=]STORE` may repeat; an unnamed one gets a name made
  from its host and port or its folder's name (made unique with -2, -3, ...).
- With no --url, --local or --backend, every backend of the config file opens; `--backend
  NAME` (repeatable) opens only those ("tinker": the Tinker connection, which then joins only
  when named).
- The Tinker connection (`$TINKER_BASE_URL`, else the hosted service, with `--api-key`,
  `$TINKER_API_KEY`, `$TINKER_CREDENTIAL_CMD` or the key of `tinker auth login`) joins them as
  "tinker" when it has a credential or `$TINKER_BASE_URL` is set, unless `no_tinker`.
- `--api-key` is the key of the one --url given; with no --url it is the Tinker
  connection's. A --url server never gets the Tinker connection's key (that would hand the
  hosted service's key to another machine), unless it is the Tinker connection's own URL (it
  is then opened once, under the --url's name); a configured one gets its api_key_env or
  api_key_file.

Pure data: no client is made here (the command line does that).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit

import msgspec
from msgspec.structs import replace

from ckpt_tui.backends.config import Config, ConfiguredBackend, KeyProblem
from ckpt_tui.backends.descriptor import NAME_PATTERN, Backend
from ckpt_tui.backends.identity import nested_folders, place_key, same_place_message
from ckpt_tui.client import CredentialsError, Endpoint, InvalidUrlError, resolve_backend
from ckpt_tui.client.endpoint import check_base_url, without_user_info
from ckpt_tui.client.secret import Secret
from ckpt_tui.locations import PlaceKey, UnsupportedLocationError, has_scheme, parse_location

TINKER = "tinker"


class SetupError(Exception):
    """The options cannot name a usable set of backends (exit 2); the message says why."""


class Setup(msgspec.Struct, frozen=True, gc=False):
    """One backend to open: its description, where its client connects, and, when it cannot
    be opened (an unset key variable), why: shown as that backend's error."""

    backend: Backend
    endpoint: Endpoint
    problem: str | None = None

    def __repr__(self) -> str:
        return f"Setup(backend={self.backend!r}, problem={self.problem!r})"  # not the endpoint


class Wanted(msgspec.Struct, frozen=True):
    """What the options say (values as given; names parsed out by `resolve`)."""

    urls: Sequence[str] = ()
    locals: Sequence[str] = ()
    names: Sequence[str] = ()
    """--backend: only these of the config file ("tinker": the Tinker connection)."""
    api_key: Secret | None = None
    """--api-key, checked as it was read (ckpt_tui.cli.options)."""
    no_tinker: bool = False
    readonly: bool = False
    project: str | None = None
    storage_rate: float | None = None
    """--storage-rate or $CKPT_TUI_STORAGE_RATE: for every backend without its own rate."""


def split_named(text: str) -> tuple[str | None, str]:
    """`NAME=VALUE` -> (NAME, VALUE) when the part before `=` is a backend name; else the
    whole text is the value (`http://h/?a=b` and `/data/x=y` stay whole)."""
    name, sep, value = text.partition("=")
    if sep and NAME_PATTERN.fullmatch(name) and value:
        return name, value
    return None, text


def derived_name(kind: str, location: str) -> str:
    """A name for an unnamed backend: `127.0.0.1-8751` for a URL, the folder's name for a
    store ('local' if it has none usable)."""
    if kind == "local":
        base = Path(location).name
    else:
        parts = urlsplit(location)
        base = parts.hostname or "server"
        if parts.port is not None:
            base = f"{base}-{parts.port}"
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-._")[:60]
    return cleaned or ("local" if kind == "local" else "server")


def resolve(
    wanted: Wanted,
    config: Config | None,
    env: Mapping[str, str],
    credentials_path: Path | None = None,
) -> list[Setup]:
    """The backends to open, Tinker first, then in the order given; SetupError (exit 2) when
    the options conflict. An empty list: nothing names a backend."""
    from_command_line = bool(wanted.urls or wanted.locals)
    if wanted.names and wanted.no_tinker and TINKER in wanted.names:
        raise SetupError("--backend tinker asks for the Tinker connection, but --no-tinker")
    if wanted.api_key and len(wanted.urls) > 1:
        raise SetupError(
            f"--api-key is the key of one server, and {len(wanted.urls)} --url were given: "
            "name each server's key in the config file (api_key_env or api_key_file)"
        )
    if wanted.api_key and not wanted.urls and wanted.no_tinker:
        raise SetupError("--api-key names a key for the Tinker connection, but --no-tinker")
    setups: list[Setup] = []
    tinker_wanted = TINKER in wanted.names if wanted.names else not wanted.no_tinker
    if tinker_wanted:
        tinker = tinker_setup(wanted, env, credentials_path)
        if tinker is not None:
            setups.append(tinker)
        elif wanted.names:
            raise SetupError(
                "--backend tinker: the environment has no Tinker connection (set "
                "TINKER_API_KEY, TINKER_BASE_URL or TINKER_CREDENTIAL_CMD, or run "
                "`tinker auth login`)"
            )
    if wanted.names:
        setups += [configured_setup(c, wanted, env) for c in picked(wanted.names, config)]
    elif not from_command_line and config is not None:
        setups += [configured_setup(c, wanted, env) for c in config.backends]
    if from_command_line:
        setups += command_line_setups(wanted, {setup.backend.name for setup in setups})
    setups = tinker_named_again(setups)
    check_unique(setups)
    return setups


def tinker_named_again(setups: list[Setup]) -> list[Setup]:
    """The Tinker connection once: when a --url or the config names its URL too, that
    backend is the one kept, and without a key of its own it uses the Tinker connection's
    (it is the server that key is for: `TINKER_BASE_URL=URL ckpt-tui --url URL`)."""
    tinker = next((s for s in setups if s.backend.name == TINKER and s.problem is None), None)
    if tinker is None:
        return setups
    where = place_key(tinker.backend)
    same = [s for s in setups if s is not tinker and place_key(s.backend) == where]
    if not same:
        return setups
    kept = []
    for setup in setups:
        if setup is tinker:
            continue
        endpoint = setup.endpoint
        if setup in same and endpoint.credential() is None and setup.problem is None:
            endpoint = replace(tinker.endpoint, project=endpoint.project)
            setup = replace(setup, endpoint=endpoint)
        kept.append(setup)
    return kept


def picked(names: Sequence[str], config: Config | None) -> list[ConfiguredBackend]:
    """The configured backends `names` names, in that order ("tinker" is not in the file);
    SetupError naming the configured ones when a name is not among them."""
    configured = {c.name: c for c in (config.backends if config is not None else ())}
    unknown = [name for name in names if name != TINKER and name not in configured]
    if unknown:
        where = f"the config file {config.path}" if config is not None else "the config file"
        known = ", ".join([*configured, TINKER]) if configured else f"none (only {TINKER})"
        raise SetupError(f"--backend {unknown[0]}: {where} names no such backend; known: {known}")
    return [configured[name] for name in dict.fromkeys(names) if name != TINKER]


def tinker_setup(
    wanted: Wanted, env: Mapping[str, str], credentials_path: Path | None
) -> Setup | None:
    """The environment's Tinker connection, when it is there (a credential or a base URL)."""
    api_key = None if wanted.urls else wanted.api_key
    try:
        endpoint = resolve_backend(
            api_key=api_key, env=env, credentials_path=credentials_path, project=wanted.project
        )
        present = endpoint.credential() is not None
    except (CredentialsError, InvalidUrlError) as exc:
        # a broken ~/.tinker/credentials.json, a TINKER_BASE_URL that cannot work: this
        # backend's error, shown without its control characters; the others still open
        shown = without_user_info(ascii(env.get("TINKER_BASE_URL") or "https://invalid")[1:-1])
        endpoint = Endpoint.remote(shown, None)
        backend = Backend(TINKER, "tinker", endpoint.base_url, wanted.readonly, wanted.storage_rate)
        return Setup(backend, endpoint, exc.message)
    if not present and not env.get("TINKER_BASE_URL"):
        return None
    rate = wanted.storage_rate
    return Setup(Backend(TINKER, "tinker", endpoint.base_url, wanted.readonly, rate), endpoint)


def command_line_setups(wanted: Wanted, taken: set[str]) -> list[Setup]:
    """--url and --local, in the order of each (URLs first), named or given a name."""
    given: list[tuple[str | None, str, str]] = []  # (name, kind, location)
    for text in wanted.urls:
        name, url = split_named(text)
        check_base_url(url, "--url")
        given.append((name, "url", url.rstrip("/")))
    for text in wanted.locals:
        name, folder = split_named(text)
        given.append((name, "local", local_location(folder)))
    named = [name for name, _, _ in given if name is not None]
    taken = taken | set(named)
    setups = []
    for name, kind, location in given:
        if name is None:
            name = unique(derived_name(kind, location), taken)
            taken.add(name)
        readonly, rate = wanted.readonly, wanted.storage_rate
        if kind == "local":
            backend = Backend(name, "local", location, readonly, rate)
            setups.append(Setup(backend, local_endpoint(location, wanted.project)))
            continue
        key = wanted.api_key if len(wanted.urls) == 1 else None
        source = "--api-key flag" if key else None
        endpoint = Endpoint.remote(location, key, source, project=wanted.project)
        setups.append(Setup(Backend(name, "url", location, readonly, rate), endpoint))
    return setups


def local_location(text: str) -> str:
    """A --local value as a location: a bucket's (`s3://bucket/prefix`), or the folder's
    absolute path. A scheme this build cannot open is refused, never taken as a folder."""
    try:
        bucket = parse_location(text)
    except UnsupportedLocationError as exc:
        raise SetupError(f"--local {exc}") from None
    return bucket.url if bucket is not None else str(Path(text).expanduser().absolute())


def local_endpoint(
    location: str, project: str | None, endpoint: str | None = None, region: str | None = None
) -> Endpoint:
    """The in-process endpoint of a local store: a bucket location or a folder."""
    if has_scheme(location):
        return Endpoint.bucket(location, project, endpoint=endpoint, region=region)
    return Endpoint.local(Path(location), project)


def configured_setup(
    configured: ConfiguredBackend, wanted: Wanted, env: Mapping[str, str]
) -> Setup:
    """A backend of the config file; a key it names but cannot read becomes its problem."""
    readonly = configured.readonly or wanted.readonly
    rate = configured.storage_rate if configured.storage_rate is not None else wanted.storage_rate
    ceiling = configured.max_in_flight
    if configured.bucket is not None:
        backend = Backend(configured.name, "local", configured.bucket, readonly, rate, ceiling)
        endpoint = local_endpoint(
            configured.bucket, wanted.project, configured.endpoint, configured.region
        )
        return Setup(backend, endpoint)
    if configured.local is not None:
        folder = str(configured.local)
        backend = Backend(configured.name, "local", folder, readonly, rate, ceiling)
        problem = None if configured.local.is_dir() else missing_folder(configured)
        return Setup(backend, Endpoint.local(configured.local, wanted.project), problem)
    url = str(configured.url)
    backend = Backend(configured.name, "url", url, readonly, rate, ceiling)
    if configured.problem is not None:
        return Setup(backend, Endpoint.remote(url, project=wanted.project), configured.problem)
    try:
        key, source = configured.key(env)
    except KeyProblem as exc:
        return Setup(backend, Endpoint.remote(url, project=wanted.project), str(exc))
    return Setup(backend, Endpoint.remote(url, key, source, project=wanted.project))


def missing_folder(configured: ConfiguredBackend) -> str:
    what = "is not a folder" if configured.local and configured.local.exists() else "does not exist"
    return (
        f"{configured.local} {what} (the local of {configured.source}): give the folder that "
        "holds your checkpoints, or change the config"
    )


def unique(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    number = 2
    while f"{name}-{number}" in taken:
        number += 1
    return f"{name}-{number}"


def check_unique(setups: Sequence[Setup]) -> None:
    """SetupError when two backends share a name or are one store however spelled (see
    `identity`: its checkpoints would be listed, and planned, twice)."""
    names: dict[str, Backend] = {}
    places: dict[PlaceKey, Backend] = {}
    for setup in setups:
        backend = setup.backend
        if backend.name in names:
            raise SetupError(
                f"two backends are named {backend.name!r} ({names[backend.name].place} and "
                f"{backend.place}): give each its own name (--url NAME=URL, --local NAME=STORE)"
                + (" or pass --no-tinker" if backend.name == TINKER else "")
            )
        names[backend.name] = backend
        if setup.problem is not None:
            continue  # never opened (its error is shown instead), so it cannot act twice
        place = place_key(backend, setup.endpoint.bucket_endpoint)
        if place in places:
            raise SetupError(same_place_message(places[place], backend))
        places[place] = backend
    nested = nested_folders([backend for backend in places.values() if backend.is_local])
    if nested is not None:
        raise SetupError(nested)
