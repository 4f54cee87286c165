"""`ckpt-tui` with no subcommand: open the app on the configured backend."""

from __future__ import annotations

import argparse
from functools import partial

from ckpt_tui.cli.clients import open_client
from ckpt_tui.cli.common import (
    NoBackendError,
    backend_from_args,
    describe_client_error,
    fail,
    log_settings_from_args,
)
from ckpt_tui.client import ClientError
from ckpt_tui.clock import clock_from_environ
from ckpt_tui.cost import RateError, resolve_storage_rate


def run(args: argparse.Namespace) -> int:
    try:
        rate = resolve_storage_rate(args.storage_rate)
        backend = backend_from_args(args)
    except (NoBackendError, RateError) as exc:
        return fail(str(exc), 2)
    except ClientError as exc:
        return fail(describe_client_error(exc), 2)
    from ckpt_tui.tui.app import CkptApp

    app = CkptApp(
        backend,
        log_settings_from_args(args),
        clock=clock_from_environ(),
        poll_interval=args.poll,
        readonly=args.readonly,
        storage_rate=rate,
        connect=partial(open_client, backend, readonly=args.readonly),
    )
    app.run()
    return 0
