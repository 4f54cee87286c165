"""What the commands share: the backend and log dirs their options name, and error output."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Coroutine, Mapping
from pathlib import Path
from typing import Any, TypeVar

from ckpt_tui.catalog.snapshot import LogDirSettings
from ckpt_tui.client import ApiError, Backend, ClientError, resolve_backend

NO_BACKEND_MESSAGE = """\
ckpt-tui: no backend configured. Any one of these gives it one:
  ckpt-tui demo                       try it on a demo store, no account needed
  ckpt-tui --local STORE              a local store folder (what `ckpt-tui serve` serves)
  ckpt-tui --url URL --api-key KEY    a checkpoint server (e.g. `ckpt-tui serve` elsewhere)
  TINKER_API_KEY=tml-... ckpt-tui     the hosted Tinker service (or `tinker auth login` once)
  TINKER_CREDENTIAL_CMD=CMD ckpt-tui  the hosted service, with a command that prints a credential
  TINKER_BASE_URL=URL                 another server, as the tinker SDK reads it"""


class NoBackendError(Exception):
    """Nothing says where to connect, what it says cannot be used (a missing folder), or the
    flags name two different places."""


def backend_from_args(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> Backend:
    """The backend the flags, the environment or the credentials file name.

    NoBackendError when none of them names one (no local store, URL or key anywhere).
    """
    env = os.environ if env is None else env
    if args.local and (args.url or args.api_key):
        other = "--url" if args.url else "--api-key"
        raise NoBackendError(
            f"ckpt-tui: --local names a local store and {other} a server: give one of them"
        )
    backend = resolve_backend(
        local=args.local, url=args.url, api_key=args.api_key, env=env, project=args.project
    )
    if backend.local_store is not None:
        check_local_folder(backend.local_store)
        return backend
    if args.url or env.get("TINKER_BASE_URL") or backend.credential():
        return backend
    raise NoBackendError(NO_BACKEND_MESSAGE)


def check_local_folder(folder: Path) -> None:
    """NoBackendError unless `folder` is an existing folder (looking creates nothing)."""
    if folder.is_dir():
        return
    what = "is not a folder" if folder.exists() else "does not exist"
    raise NoBackendError(
        f"--local {folder}: {what}. Give the folder that holds your checkpoints; "
        "browsing never creates one (`ckpt-tui serve FOLDER` makes a new store)"
    )


def log_settings_from_args(args: argparse.Namespace) -> LogDirSettings:
    return LogDirSettings.from_args(args.log_dir)


def fail(message: str, code: int = 1) -> int:
    """Print an error for people on stderr and return the exit code."""
    print(message if message.startswith("ckpt-tui") else f"ckpt-tui: {message}", file=sys.stderr)
    return code


def describe_client_error(exc: ClientError) -> str:
    """The message, plus the server's own words when a server answered and said more."""
    said = isinstance(exc, ApiError) and exc.detail and exc.detail not in exc.message
    detail = f" (server said: {exc.detail})" if said else ""
    return f"{exc.message}{detail}"


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
