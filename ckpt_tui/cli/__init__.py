"""The `ckpt-tui` command line: the TUI by default, plus subcommands.

Each subcommand lives in its own module with `register(subparsers)`; the module sets
`func` on its parser, a callable taking the parsed namespace and returning an exit code.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ckpt_tui import __version__
from ckpt_tui.cli import serve

SUBCOMMANDS = (serve,)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ckpt-tui",
        description="A terminal checkpoint manager for Tinker, PyTorch and Hugging Face checkpoints.",
    )
    parser.add_argument("--version", action="version", version=f"ckpt-tui {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    result: int = func(args)
    return result
