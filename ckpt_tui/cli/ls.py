"""`ckpt-tui ls`: runs and checkpoints of every backend as a table, or one JSON document."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import msgspec

from ckpt_tui.backends import BackendState, Fleet
from ckpt_tui.backends.identity import one_store_problem
from ckpt_tui.backends.load import failed_word, load_fleet
from ckpt_tui.backends.resolve import Setup
from ckpt_tui.catalog import RunSummary
from ckpt_tui.catalog.snapshot import LogDirSettings
from ckpt_tui.cli import options
from ckpt_tui.cli.common import (
    Refusal,
    described,
    fail,
    finish,
    log_settings_from_args,
    opened,
    run_async,
    setups_for,
)
from ckpt_tui.cli.documents.listing import Section, table_lines, write_ls_json
from ckpt_tui.sizes import format_total
from ckpt_tui.timekeeping.clock import Clock, clock_from_environ


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "ls",
        help="list runs and checkpoints (non-interactive)",
        description="List the runs of every backend and their checkpoints with sizes, expiry, "
        "state and flags.",
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


class Loaded(msgspec.Struct, frozen=True):
    """Every backend as it was loaded, and how each was talked to."""

    setups: list[Setup]
    fleet: Fleet
    described: dict[str, str]
    """By backend name: where, and with which credential, as start-up settled it."""
    one_store: str | None = None
    """Why two backends are one store (their store ids say so): refused (exit 2)."""

    def nothing_found(self, name: str) -> str:
        """What an empty backend says (where it looked, and for what)."""
        return next(s.endpoint.nothing_found() for s in self.setups if s.backend.name == name)


async def load(setups: list[Setup], settings: LogDirSettings) -> Loaded:
    """Every backend loaded side by side, each with its own client."""
    async with opened(setups) as connections:
        fleet, one_store = await asyncio.gather(
            load_fleet(connections, settings, costs=False),  # ls shows no cost
            one_store_problem(connections),  # side by side: no time added
        )
        return Loaded(setups, fleet, {c.name: described(c) for c in connections}, one_store)


def run(args: argparse.Namespace, clock: Clock | None = None) -> int:
    try:
        setups = setups_for(args)
    except Refusal as exc:
        return fail(str(exc), 2)
    loaded = run_async(load(setups, log_settings_from_args(args)))
    if loaded.one_store is not None:
        return fail(loaded.one_store, 2)
    fleet = loaded.fleet
    several = len(fleet.states) > 1
    if not several and fleet.states[0].error is not None:
        return fail(fleet.states[0].error)  # nothing to show
    chosen = fleet.choose_runs(args.run)
    if chosen is None:
        known = ", ".join(run.display_name for run in fleet.runs()) or "none"
        return fail(f"no run matches {', '.join(args.run)}; known runs: {known}", 2)
    now = (clock or clock_from_environ()).now()
    problems = [
        f"{state.name}: {problem}" if several else problem
        for state in fleet.states
        for problem in state_problems(state)
    ]
    if args.json:
        sections = [
            Section(
                state.backend,
                loaded.described[state.name],
                [run for run in chosen if run.backend == state.name],
                state.complete,
                state.error,
            )
            for state in fleet.states
        ]
        sys.stdout.flush()
        write_ls_json(sys.stdout.buffer, sections, problems, now)
    else:
        print("\n".join(text_lines(loaded, chosen, now)).rstrip())
        failed = {f"{name}: {error}" for name, error in fleet.errors().items()}
        for problem in problems:
            if problem not in failed:  # a failed backend's error is under its heading
                print(f"warning: {problem}")
    return finish(args, 0 if fleet.complete else fail(not_whole(fleet)))


def not_whole(fleet: Fleet) -> str:
    """Why the list is not whole: the one backend's reason, or each backend's by name."""
    if len(fleet.states) == 1:
        snapshot = fleet.states[0].snapshot
        return (
            f"this list is not whole, {snapshot.incomplete if snapshot else 'not loaded'}; "
            "run it again"
        )
    return f"this list is not whole: {'; '.join(fleet.incomplete())}; run it again"


def state_problems(state: BackendState) -> list[str]:
    """What a backend could not read: its error, its list being partial, its bad files."""
    if state.error is not None:
        return [state.error]
    snapshot = state.snapshot
    if snapshot is None:
        return []
    return [snapshot.incomplete, *snapshot.problems] if snapshot.incomplete else snapshot.problems


def text_lines(loaded: Loaded, chosen: Sequence[RunSummary], now: datetime) -> list[str]:
    """The table; with several backends, a heading per backend before its runs."""
    states = loaded.fleet.states
    if len(states) == 1:
        name = states[0].name
        return table_lines(chosen, now) if chosen else [loaded.nothing_found(name)]
    lines: list[str] = []
    totals = loaded.fleet.totals()
    for state in states:
        runs = [run for run in chosen if run.backend == state.name]
        total = totals[state.name]
        where = f"== {state.name}: {loaded.described[state.name]}"
        if state.error is not None:
            lines += [f"{where}: {failed_word(state.error_kind)} ==", f"  {state.error}", ""]
            continue
        count = f"{total.checkpoints} checkpoints, {format_total(total.size)}"
        lines += [f"{where}: {len(runs)} runs, {count} =="]
        lines += table_lines(runs, now) if runs else [loaded.nothing_found(state.name), ""]
    return lines
