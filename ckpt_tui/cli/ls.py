"""`ckpt-tui ls`: runs and checkpoints as a table or one JSON document, for scripts."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ckpt_tui.catalog import RunSummary
from ckpt_tui.catalog.snapshot import LogDirSettings, Snapshot, load_snapshot
from ckpt_tui.cli import options
from ckpt_tui.cli.clients import open_client
from ckpt_tui.cli.common import (
    NoBackendError,
    backend_from_args,
    describe_client_error,
    fail,
    log_settings_from_args,
    run_async,
)
from ckpt_tui.cli.documents.listing import table_lines, write_ls_json
from ckpt_tui.client import Backend, ClientError
from ckpt_tui.clock import Clock, clock_from_environ


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "ls",
        help="list runs and checkpoints (non-interactive)",
        description="List runs and their checkpoints with sizes, expiry, state and flags.",
    )
    options.add_global_options(parser, options.BACKEND, after_command=True)
    parser.add_argument(
        "--run",
        action="append",
        default=[],
        metavar="RUN",
        help="only this run: its id or its log dir name (repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, clock: Clock | None = None) -> int:
    try:
        backend = backend_from_args(args)
    except NoBackendError as exc:
        return fail(str(exc), 2)
    except ClientError as exc:
        return fail(describe_client_error(exc), 2)
    try:
        snapshot, described = run_async(fetch(backend, log_settings_from_args(args)))
    except ClientError as exc:
        return fail(describe_client_error(exc))
    runs = choose_runs(snapshot, args.run)
    if runs is None:
        known = ", ".join(run.display_name for run in snapshot.catalog.runs) or "none"
        return fail(f"no run matches {', '.join(args.run)}; known runs: {known}", 2)
    now = (clock or clock_from_environ()).now()
    problems = (
        [snapshot.incomplete, *snapshot.problems] if snapshot.incomplete else snapshot.problems
    )
    if args.json:
        sys.stdout.flush()
        write_ls_json(sys.stdout.buffer, described, runs, problems, now, snapshot.complete)
    else:
        lines = table_lines(runs, now) if snapshot.catalog.runs else [backend.nothing_found()]
        print("\n".join(lines).rstrip())
        for problem in snapshot.problems:
            print(f"warning: {problem}")
    if snapshot.incomplete:
        return fail(f"this list is not whole, {snapshot.incomplete}; run it again")
    return 0


async def fetch(backend: Backend, settings: LogDirSettings) -> tuple[Snapshot, str]:
    """The snapshot, and the backend as start-up settled it (e.g. 'JWTs for the key from ...')."""
    async with await open_client(backend) as client:
        return await load_snapshot(client, settings), client.describe()


def choose_runs(snapshot: Snapshot, wanted: list[str]) -> list[RunSummary] | None:
    """All runs, or those named by id or display name; None if a name matches nothing."""
    runs = snapshot.catalog.runs
    if not wanted:
        return runs
    chosen = [run for run in runs if run.run_id in wanted or run.display_name in wanted]
    matched = {run.run_id for run in chosen} | {run.display_name for run in chosen}
    return chosen if all(name in matched for name in wanted) else None
