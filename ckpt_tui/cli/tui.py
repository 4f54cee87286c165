"""`ckpt-tui` with no subcommand: open the app on the backends the options name."""

from __future__ import annotations

import argparse

from ckpt_tui.cli import allocator
from ckpt_tui.cli.common import (
    Refusal,
    connect,
    fail,
    finish,
    log_settings_from_args,
    setups_for,
)
from ckpt_tui.timekeeping.clock import clock_from_environ

CTRL_C_EXIT = 130
"""What a shell reports for a command ended by ctrl+c (128 + SIGINT)."""


def run(args: argparse.Namespace) -> int:
    try:
        setups = setups_for(args, rate=True)
    except Refusal as exc:
        return fail(str(exc), 2)
    # Each backend with its own client; a folder store opens on its first request, in a worker
    # thread, so the first frame waits for none (benchmarks/bench_start.py); a bucket begins
    # opening now, before the app is imported, as its open waits on the network, not on this
    # process (`client_for`). The app closes the clients as it quits.
    connections = [connect(setup, open_later=True, begin_buckets=True) for setup in setups]
    try:
        from ckpt_tui.tui.app import CkptApp

        allocator.map_big_blocks()  # memory stays flat over refreshes (see its docstring)
        app = CkptApp(
            connections,
            log_settings_from_args(args),
            clock=clock_from_environ(),
            poll_interval=args.poll,
        )
    except KeyboardInterrupt:
        # ctrl+c before the app runs: a bucket's open may be waiting on the network in its
        # thread, which a normal exit would wait for. The executable ends here instead.
        return finish(args, CTRL_C_EXIT)
    app.run()
    return 0
