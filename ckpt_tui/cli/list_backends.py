"""`ckpt-tui backends`: every backend the options and config open, and how each is doing."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

import msgspec

from ckpt_tui.backends.config import config_path
from ckpt_tui.backends.identity import one_store_problem
from ckpt_tui.backends.load import Status, failed_word, probe
from ckpt_tui.backends.resolve import Setup
from ckpt_tui.cli import options
from ckpt_tui.cli.common import Refusal, fail, opened, run_async, setups_for
from ckpt_tui.cli.documents.listing import aligned

SCHEMA = "ckpt-tui.backends/1"
COLUMNS = ("NAME", "KIND", "WHERE", "STATUS", "LATENCY", "RUNS", "CHECKPOINTS", "RATE")
OPTIONS = ("local", "url", "backend", "api_key", "no_tinker", "project", "readonly", "storage_rate")


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "backends",
        help="list the backends that open, and whether each can be reached",
        description="List every backend the options, the config file and the environment "
        "open (the same ones `ls`, `prune` and the app use), each with its status: reachable "
        "or what went wrong, latency, runs, checkpoints and storage rate. Exit 1 if one "
        "cannot be reached.",
    )
    options.add_global_options(parser, OPTIONS, after_command=True)
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.set_defaults(func=run)


async def probe_all(setups: list[Setup]) -> tuple[list[Status], str | None]:
    """Each backend's status, and why two are one store (None when no two are)."""
    async with opened(setups) as connections:
        one_store = asyncio.ensure_future(one_store_problem(connections))
        statuses = list(await asyncio.gather(*(probe(c) for c in connections)))
        return statuses, await one_store


def run(args: argparse.Namespace) -> int:
    try:
        setups = setups_for(args, rate=True)
    except Refusal as exc:
        return fail(str(exc), 2)
    statuses, one_store = run_async(probe_all(setups))
    if one_store is not None:
        return fail(one_store, 2)
    if args.json:
        document = {
            "schema": SCHEMA,
            "config": str(config_path()),
            "backends": [status_document(status) for status in statuses],
        }
        sys.stdout.buffer.write(msgspec.json.format(msgspec.json.encode(document)) + b"\n")
    else:
        print("\n".join(aligned([list(COLUMNS), *(cells(s) for s in statuses)])))
        for status in statuses:
            if status.error is not None:
                print(f"{status.backend.name}: {status.error}")
    return 0 if all(status.reachable for status in statuses) else 1


def milliseconds(seconds: float | None) -> str:
    return "-" if seconds is None else f"{max(1, round(seconds * 1000))} ms"


def rate_text(status: Status) -> str:
    if status.rate is None:
        return "none"
    return f"${status.rate:g}/GiB-month ({status.rate_source})"


def cells(status: Status) -> list[str]:
    backend = status.backend
    state = "reachable" if status.reachable else failed_word(status.error_kind)
    if backend.readonly:
        state += ", read-only"
    number = "-" if status.checkpoints is None else f"{status.checkpoints:,}"
    runs = "-" if status.runs is None else f"{status.runs:,}"
    return [
        backend.name,
        backend.kind,
        status.described,
        state,
        milliseconds(status.latency),
        runs,
        number,
        rate_text(status) if status.reachable else "-",
    ]


def status_document(status: Status) -> dict[str, Any]:
    latency = None if status.latency is None else round(status.latency * 1000, 3)
    return {
        **status.backend.document(),
        "described": status.described,
        "readonly": status.backend.readonly,
        "reachable": status.reachable,
        "error": status.error,
        "error_kind": None if status.reachable else status.error_kind,
        "latency_ms": latency,
        "runs": status.runs,
        "checkpoints": status.checkpoints,
        "storage_rate_usd_per_gib_month": status.rate,
        "rate_source": status.rate_source if status.reachable else None,
    }
