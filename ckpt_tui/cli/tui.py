"""`ckpt-tui` with no subcommand: open the app on the configured backend."""

from __future__ import annotations

import argparse

from ckpt_tui.cli.common import (
    NoBackendError,
    add_backend_args,
    backend_from_args,
    describe_client_error,
    fail,
    log_settings_from_args,
)
from ckpt_tui.client import ClientError
from ckpt_tui.clock import clock_from_environ
from ckpt_tui.cost import STORAGE_RATE_ENV, RateError, resolve_storage_rate
from ckpt_tui.heap import manage_heap


def add_tui_args(parser: argparse.ArgumentParser) -> None:
    add_backend_args(parser)
    parser.add_argument(
        "--poll",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="re-read the server every SECONDS (default 30; 0 turns it off)",
    )
    parser.add_argument(
        "--readonly", action="store_true", help="browse only: publish, TTL and delete are off"
    )
    parser.add_argument(
        "--storage-rate",
        metavar="USD_PER_GIB_MONTH",
        help=f"show monthly storage costs at this rate (else ${STORAGE_RATE_ENV}; else none)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        rate = resolve_storage_rate(args.storage_rate)
        backend = backend_from_args(args)
    except (NoBackendError, RateError) as exc:
        return fail(str(exc), 2)
    except ClientError as exc:
        return fail(describe_client_error(exc), 2)
    if args.poll < 0:
        return fail("--poll must be 0 (off) or a number of seconds", 2)
    from ckpt_tui.tui.app import CkptApp

    app = CkptApp(
        backend,
        log_settings_from_args(args),
        clock=clock_from_environ(),
        poll_interval=args.poll,
        readonly=args.readonly,
        storage_rate=rate,
    )
    manage_heap()  # a long-lived process holding 100,000-row snapshots: see ckpt_tui.heap
    app.run()
    return 0
