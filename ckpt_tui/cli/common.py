"""Options shared by the TUI and `ls`: where to connect and where the training logs are."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from ckpt_tui.client import ApiError, Backend, ClientError, resolve_backend
from ckpt_tui.loader import LogDirSettings

NO_BACKEND_MESSAGE = """\
ckpt-tui: no backend configured. Any one of these gives it one:
  ckpt-tui demo                       try it on a demo store, no account needed
  ckpt-tui --local STORE              a local store folder (what `ckpt-tui serve` serves)
  ckpt-tui --url URL --api-key KEY    a checkpoint server (e.g. `ckpt-tui serve` elsewhere)
  TINKER_API_KEY=tml-... ckpt-tui     the hosted Tinker service (or `tinker auth login` once)
  TINKER_CREDENTIAL_CMD=CMD ckpt-tui  the hosted service, with a command that prints a credential
  TINKER_BASE_URL=URL                 another server, as the tinker SDK reads it"""


class NoBackendError(Exception):
    """Nothing says where to connect, or what it says cannot be used (a missing folder)."""


def add_backend_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("where to connect (first given wins)")
    group.add_argument("--local", metavar="STORE", help="a local store folder, served in-process")
    group.add_argument("--url", help="a checkpoint server's base URL (else $TINKER_BASE_URL)")
    group.add_argument(
        "--api-key",
        help="API key (else $TINKER_API_KEY, else the default key of `tinker auth login`)",
    )
    parser.add_argument(
        "--project",
        type=project_id,
        metavar="ID",
        help="only the training runs of this project (and their checkpoints and log dirs)",
    )
    parser.add_argument(
        "--log-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="a training log dir or a folder of them (repeatable); "
        "$TINKER_COOKBOOK_RUNS_DIR (else ~/tinker-runs) is always scanned too",
    )


def project_id(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("give a project id (an empty one would mean every run)")
    return text


def backend_from_args(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> Backend:
    """The backend the flags, the environment or the credentials file name.

    NoBackendError when none of them names one (no local store, URL or key anywhere).
    """
    env = os.environ if env is None else env
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
