"""The `ckpt-tui` command line: the TUI by default, plus subcommands.

Each subcommand lives in its own module with `register(subparsers)`; the module sets
`func` on its parser, a callable taking the parsed namespace and returning an exit code.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ckpt_tui import __version__
from ckpt_tui.cli import demo, ls, prune, serve, tui

SUBCOMMANDS = (demo, serve, ls, prune)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ckpt-tui",
        description="A terminal checkpoint manager for Tinker, PyTorch and Hugging Face "
        "checkpoints.",
    )
    parser.add_argument("--version", action="version", version=f"ckpt-tui {__version__}")
    tui.add_tui_args(parser)
    parser.set_defaults(func=tui.run)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    result: int = args.func(args)
    return result
