"""What the commands share: the backends their options name, their clients, the log dirs,
and error output."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import AsyncIterator, Coroutine, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx

from ckpt_tui.backends import Backend, BackendKind, Connection
from ckpt_tui.backends.config import ConfigError, load_config
from ckpt_tui.backends.load import describe_client_error, failure_text
from ckpt_tui.backends.resolve import TINKER, Setup, SetupError, Wanted, resolve, split_named
from ckpt_tui.catalog.snapshot import LogDirSettings
from ckpt_tui.cli.clients import client_for
from ckpt_tui.client import CheckpointClient, ClientError, Endpoint
from ckpt_tui.cost import RateError, resolve_storage_rate
from ckpt_tui.locations import has_scheme

NO_BACKEND_MESSAGE = """\
ckpt-tui: no backend configured. Any one of these gives it one:
  ckpt-tui demo                       try it on a demo store, no account needed
  ckpt-tui --local STORE              a local store folder (what `ckpt-tui serve` serves)
  ckpt-tui --url URL --api-key KEY    a checkpoint server (e.g. `ckpt-tui serve` elsewhere)
  TINKER_API_KEY=tml-... ckpt-tui     the hosted Tinker service (or `tinker auth login` once)
  TINKER_CREDENTIAL_CMD=CMD ckpt-tui  the hosted service, with a command that prints a credential
  TINKER_BASE_URL=URL                 another server, as the tinker SDK reads it
  ~/.config/ckpt-tui/config.toml      backends by name ([backends.NAME], see the README)"""


class NoBackendError(Exception):
    """Nothing says where to connect, or what it says cannot be used (a missing folder)."""


USAGE_ERRORS = (NoBackendError, SetupError, ConfigError)
"""What `setups_from_args` raises for options that cannot work (exit 2)."""


def setups_from_args(
    args: argparse.Namespace,
    env: Mapping[str, str] | None = None,
    storage_rate: float | None = None,
    *,
    named_only: bool = False,
) -> list[Setup]:
    """The backends the options, the config file (all of its backends without --url, --local
    and --backend; those --backend names otherwise) and the environment name, Tinker first.
    With `named_only` (a command that deletes), a --url or --local given means those backends
    and no other: the environment's Tinker connection joins only when `--backend tinker`
    names it. One of USAGE_ERRORS (exit 2) when they cannot work, or InvalidUrlError for a
    --url that is not one."""
    env = os.environ if env is None else env
    urls, folders, names = list(args.url), list(args.local), list(args.backend)
    tinker_left_out = named_only and bool(urls or folders) and TINKER not in names
    for text in folders:
        place = split_named(text)[1]
        if not has_scheme(place):  # a bucket location is checked when resolved
            check_local_folder(Path(place).expanduser())
    wanted = Wanted(
        urls=urls,
        locals=folders,
        names=names,
        api_key=args.api_key or None,
        no_tinker=args.no_tinker or tinker_left_out,
        readonly=args.readonly,
        project=args.project,
        storage_rate=storage_rate,
    )
    config = load_config(env=env) if names or not (urls or folders) else None
    setups = resolve(wanted, config, env)
    if not setups:
        raise NoBackendError(NO_BACKEND_MESSAGE)
    if len(setups) == 1 and setups[0].problem is not None:
        raise NoBackendError(f"ckpt-tui: {setups[0].problem}")
    return setups


class Refusal(Exception):
    """Options that cannot work, with the message to print (exit 2)."""


def setups_for(
    args: argparse.Namespace, *, rate: bool = False, named_only: bool = False
) -> list[Setup]:
    """`setups_from_args`, with --storage-rate / $CKPT_TUI_STORAGE_RATE read first when the
    command takes a rate; Refusal with the message for anything that cannot work."""
    try:
        storage_rate = resolve_storage_rate(args.storage_rate) if rate else None
        return setups_from_args(args, storage_rate=storage_rate, named_only=named_only)
    except (*USAGE_ERRORS, RateError) as exc:
        raise Refusal(str(exc)) from None
    except ClientError as exc:  # e.g. a --url that is not one
        raise Refusal(describe_client_error(exc)) from None


def check_local_folder(folder: Path) -> None:
    """NoBackendError unless `folder` is an existing folder (looking creates nothing)."""
    if folder.is_dir():
        return
    what = "is not a folder" if folder.exists() else "does not exist"
    raise NoBackendError(
        f"--local {folder}: {what}. Give the folder that holds your checkpoints; "
        "browsing never creates one (`ckpt-tui serve FOLDER` makes a new store)"
    )


def connect(
    setup: Setup, *, open_later: bool = False, changing: bool = False, begin_buckets: bool = False
) -> Connection:
    """The backend with its own client; when it cannot have one (its key is not there, its
    store does not open), a client that sends nothing and the reason as its problem. With
    `open_later` (the app), a local store opens on its first request (`client_for`), and
    one that does not open fails every request with the reason; with `begin_buckets` too, a
    bucket begins opening now, in a thread of its own. `changing`: the command is about to
    change the backends (a bucket keeps its store id first: `bucket_transport`)."""
    problem = setup.problem
    if problem is None:
        try:
            backend = setup.backend
            client = client_for(
                setup.endpoint,
                readonly=backend.readonly,
                max_in_flight=backend.max_in_flight,
                open_later=open_later,
                keep_store_id=changing,
                begin_bucket_now=begin_buckets,
            )
        except ClientError as exc:
            problem = failure_text(exc)
        else:
            return Connection(setup.backend, client)
    return Connection(setup.backend, refusing_client(problem), problem)


def connection_to(
    endpoint: Endpoint,
    name: str,
    *,
    readonly: bool = False,
    storage_rate: float | None = None,
    open_later: bool = False,
) -> Connection:
    """One backend named `name` where `endpoint` says (the demo's, a benchmark's), opened as
    `connect` opens every backend the options name."""
    local = endpoint.local_store
    kind: BackendKind = "local" if endpoint.is_local else "url"
    location = str(local.absolute()) if local is not None else endpoint.base_url
    location = endpoint.local_bucket or location
    backend = Backend(name, kind, location, readonly, storage_rate)
    return connect(Setup(backend, endpoint), open_later=open_later)


class RefusingTransport(httpx.AsyncBaseTransport):
    """Answers every request with a 400 carrying `problem`; nothing leaves the process."""

    def __init__(self, problem: str) -> None:
        self.problem = problem

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        headers = {"x-should-retry": "false"}
        return httpx.Response(400, json={"detail": self.problem}, headers=headers)


def refusing_client(problem: str) -> CheckpointClient:
    """A client every call of which fails with `problem`."""
    endpoint = Endpoint.remote("http://unusable.invalid")
    return CheckpointClient(endpoint, transport=RefusingTransport(problem))


@asynccontextmanager
async def opened(
    setups: Sequence[Setup], *, changing: bool = False
) -> AsyncIterator[list[Connection]]:
    """Every backend's connection, closed on the way out; local stores open side by side
    in worker threads. `changing`: see `connect`."""
    opening = (asyncio.to_thread(connect, s, changing=changing) for s in setups)
    connections = list(await asyncio.gather(*opening))
    try:
        yield connections
    finally:
        await asyncio.gather(*(connection.client.aclose() for connection in connections))


def described(connection: Connection) -> str:
    """Where a connection talks and with which credential, as start-up settled it (never the
    credential): 'http://127.0.0.1:8751 (key from $BOX1_KEY)', 'local store /data/ckpts'."""
    if connection.problem is not None:
        return connection.backend.place
    return connection.client.describe()


def log_settings_from_args(args: argparse.Namespace) -> LogDirSettings:
    return LogDirSettings.from_args(args.log_dir)


def finish(args: argparse.Namespace, code: int) -> int:
    """The end of a command that loaded whole lists: `code`, or with `args.hard_exit` (the
    executable), the process ended at once (`end_process`) before those lists are freed, as
    mypy's `--fast-exit` does: freeing 100,000 checkpoints' objects one by one, then the
    modules, took 110 ms of `ls --json`'s 1.1 s (benchmarks/bench_ls.py). Tests and callers
    of `main` get the code."""
    return end_process(code) if args.hard_exit else code


def end_process(code: int) -> int:
    """End the executable with `code` once its output is flushed, without finalizing the
    interpreter. obstore answers a bucket's requests from threads of its own that call into
    Python; one that does so while the interpreter finalizes is ended inside Rust code, and
    the process aborts (SIGABRT, "Aborted"): the demo did so once in CI, quit while its
    bucket was still being read. A script opening a `file://` bucket of 3,000 checkpoints,
    closing it 0-0.3 s later and exiting aborted 9 times in 150; ending this way, in none of
    300. Nothing of ckpt-tui's runs at exit, so nothing is skipped.

    BrokenPipeError when the reader went away (`console_main` ends quietly); `code` is
    returned, for the normal exit to report it, when the output cannot be flushed otherwise
    (a full disk). A stream that is closed (`2>&-`: None) has nothing to flush."""
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except BrokenPipeError:
        raise
    except OSError:
        return code
    os._exit(code)


def fail(message: str, code: int = 1) -> int:
    """Print an error for people on stderr and return the exit code."""
    print(message if message.startswith("ckpt-tui") else f"ckpt-tui: {message}", file=sys.stderr)
    return code


T = TypeVar("T")


def run_async(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)`, with the result handed back outside the main task.

    On its way out, `asyncio.run` puts back the SIGINT handler, and Python 3.11's `signal`
    module then formats repr() of the handler it replaces, which holds the main task and so
    its result: seconds and hundreds of MB for a result of 100,000 checkpoints.
    """
    results: list[T] = []

    async def without_result() -> None:
        results.append(await main)

    asyncio.run(without_result())
    return results[0]
