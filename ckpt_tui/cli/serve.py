"""STUB: `ckpt-tui serve STORE` (the server helper replaces this)."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser("serve", help="serve a local store")
    parser.add_argument("store")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    raise NotImplementedError
