"""The `ckpt-tui` command line: the TUI by default, plus subcommands.

Each subcommand lives in its own module with `register(subparsers)`; the module sets
`func` on its parser, a callable taking the parsed namespace and returning an exit code.
Global options (ckpt_tui.cli.options) may stand before or after the subcommand.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence

from ckpt_tui import __version__
from ckpt_tui.cli import demo, download, list_backends, ls, options, prune, serve, tui
from ckpt_tui.cli.common import end_process

SUBCOMMANDS = (demo, serve, ls, prune, download, list_backends)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ckpt-tui",
        description="A terminal checkpoint manager for Tinker, PyTorch and Hugging Face "
        "checkpoints.",
        epilog="Options of ckpt-tui itself (--local, --url, --api-key, --no-tinker, --log-dir, "
        "--readonly, ...) mean the same before or after COMMAND; one COMMAND does not use is "
        "refused. --url and --local repeat (NAME=URL, NAME=STORE); with neither, the backends "
        "of the config file open (`ckpt-tui backends` lists them).",
    )
    parser.add_argument("--version", action="version", version=f"ckpt-tui {__version__}")
    options.add_global_options(parser, options.ALL, after_command=False)
    parser.set_defaults(func=tui.run, hard_exit=False)
    subparsers = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=options.CommandParser
    )
    for module in SUBCOMMANDS:
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None, *, hard_exit: bool = False) -> int:
    """Run the command `argv` names; its exit code. With `hard_exit` (the executable), a
    listing may end the process itself once its output is out (`common.finish`)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    options.settle(args, parser)
    args.hard_exit = hard_exit
    result: int = args.func(args)
    return result


CLOSED_PIPE_EXIT = 128 + signal.SIGPIPE
"""141: what a shell reports for `ls` killed by SIGPIPE, so `set -o pipefail` and scripts see a
listing cut short by its reader just as they see any other tool's."""


def console_main() -> int:
    """The `ckpt-tui` executable. A reader that goes away (`ckpt-tui ls | head -1`) ends it
    quietly, with CLOSED_PIPE_EXIT: Python ignores SIGPIPE, so a write to a closed pipe
    raises BrokenPipeError, which would otherwise print a traceback."""
    try:
        return end_process(main(hard_exit=True))  # here, where a closed pipe can be told apart
    except BrokenPipeError:
        # What stdout still buffers would fail again at exit ("Exception ignored ..."):
        # point it at /dev/null, as the `signal` module's documentation advises.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return end_process(CLOSED_PIPE_EXIT)
