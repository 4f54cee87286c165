"""`ckpt-tui` with no subcommand: open the app on the backends the options name."""

from __future__ import annotations

import argparse
from functools import partial

from ckpt_tui.cli.clients import open_client
from ckpt_tui.cli.common import Refusal, fail, log_settings_from_args, setups_for
from ckpt_tui.clock import clock_from_environ


def run(args: argparse.Namespace) -> int:
    try:
        setups = setups_for(args, rate=True)
    except Refusal as exc:
        return fail(str(exc), 2)
    from ckpt_tui.tui.app import CkptApp

    # Until the app shows several backends side by side, it opens the first one.
    first = setups[0]
    app = CkptApp(
        first.endpoint,
        log_settings_from_args(args),
        clock=clock_from_environ(),
        poll_interval=args.poll,
        readonly=first.backend.readonly,
        storage_rate=first.backend.storage_rate,
        connect=partial(open_client, first.endpoint, readonly=first.backend.readonly),
    )
    app.run()
    return 0
