"""`ckpt-tui prune`: apply a keep policy; a dry run by default, `--yes` deletes.

Safety: a policy must select something to keep beyond the protections (final, resume point,
published): one of --keep-last, --keep-best, --keep-every or --keep-expiring-after; otherwise
it would delete every unprotected checkpoint, which needs an explicit
--delete-all-unprotected. A --metric that no checkpoint of the chosen runs has is refused
(a typo would otherwise keep nothing by it).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from ckpt_tui.actions.bulk_action import summary_text
from ckpt_tui.actions.fleet_action import FleetProgress
from ckpt_tui.actions.keep_policy import carry_out
from ckpt_tui.backends import BackendState, Fleet
from ckpt_tui.backends.identity import one_store_problem
from ckpt_tui.backends.load import load_fleet
from ckpt_tui.backends.resolve import Setup
from ckpt_tui.catalog.actions_log import LogEntry, LogItem, append_entry
from ckpt_tui.catalog.snapshot import LogDirSettings
from ckpt_tui.cli import common, options
from ckpt_tui.cli.common import (
    fail,
    log_settings_from_args,
    opened,
    run_async,
)
from ckpt_tui.cli.documents.prune_plan import (
    fleet_plan_lines,
    outcome_lines,
    plan_lines,
    write_plan_json,
)
from ckpt_tui.cli.progress import ProgressLine, progress_line
from ckpt_tui.client import Outcome
from ckpt_tui.policy import KeepPolicy, PolicyError
from ckpt_tui.policy.fleet_plan import Part, plan_fleet
from ckpt_tui.timekeeping.clock import Clock, clock_from_environ
from ckpt_tui.timekeeping.dates import DateError, parse_instant
from ckpt_tui.words import count_of

NOTHING_SELECTED = (
    "this policy keeps nothing but the protected checkpoints (final, best, resume point, "
    "published) and would delete every other one. Add a keep rule (--keep-last M, --keep-best K "
    "--metric KEY, --keep-every N, --keep-expiring-after DATE), or pass --delete-all-unprotected "
    "if that is really what you want."
)


READONLY_REFUSAL = (
    "read-only mode (--readonly or CKPT_TUI_READONLY) refuses every change: nothing was "
    "deleted. Drop --yes for a dry run, or run without --readonly to delete."
)


class UsageError(Exception):
    """Arguments that only turn out wrong once the data is loaded (exit 2)."""


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def expiry_bound(text: str) -> datetime:
    """--keep-expiring-after: a bare date bounds "after" at the end of that UTC day."""
    try:
        return parse_instant(text, bare_date="end")
    except DateError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


POLICY_FLAGS: tuple[tuple[str, dict[str, Any]], ...] = (
    (
        "--keep-last",
        {"type": positive_int, "metavar": "M", "help": "the M latest per run and kind"},
    ),
    ("--keep-best", {"type": positive_int, "metavar": "K", "help": "the K best per run and kind"}),
    ("--metric", {"metavar": "KEY", "help": "what --keep-best ranks by, e.g. eval_loss"}),
    ("--higher-is-better", {"action": "store_true", "help": "rank --metric high first"}),
    (
        "--keep-every",
        {"type": positive_int, "metavar": "N", "help": "steps that are multiples of N"},
    ),
    (
        "--keep-expiring-after",
        {"type": expiry_bound, "metavar": "DATE", "help": "expiring after DATE or never"},
    ),
    ("--no-keep-final", {"action": "store_true", "help": "do not protect final checkpoints"}),
    (
        "--no-keep-flagged-best",
        {"action": "store_true", "help": "do not protect the trainer's best checkpoint"},
    ),
    ("--no-keep-resume", {"action": "store_true", "help": "do not protect resume points"}),
    ("--no-keep-published", {"action": "store_true", "help": "do not protect published ones"}),
    ("--delete-all-unprotected", {"action": "store_true", "help": "allow a policy with no rule"}),
)


def add_policy_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("keep rules (a checkpoint any rule keeps is kept)")
    for flag, settings in POLICY_FLAGS:
        group.add_argument(flag, **settings)


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "prune",
        help="delete checkpoints a keep policy does not keep (dry run unless --yes)",
        description="Plan which checkpoints to keep (and why) and which to delete. Nothing is "
        "deleted without --yes.",
    )
    options.add_global_options(parser, (*options.BACKEND, "storage_rate"), after_command=True)
    parser.add_argument(
        "--run", action="append", default=[], metavar="RUN", help="only this run (repeatable)"
    )
    add_policy_args(parser)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="only print the plan (the default)")
    mode.add_argument("--yes", action="store_true", help="delete what the plan deletes")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.set_defaults(func=run)


def policy_from_args(args: argparse.Namespace) -> KeepPolicy:
    return KeepPolicy(
        keep_final=not args.no_keep_final,
        keep_flagged_best=not args.no_keep_flagged_best,
        keep_resume_point=not args.no_keep_resume,
        keep_published=not args.no_keep_published,
        keep_best=args.keep_best,
        metric=args.metric,
        higher_is_better=args.higher_is_better,
        keep_last=args.keep_last,
        keep_every=args.keep_every,
        keep_expiring_after=args.keep_expiring_after,
    )


class Job(msgspec.Struct, frozen=True):
    """What to plan and whether to carry it out."""

    policy: KeepPolicy
    runs: Sequence[str]
    execute: bool
    now: datetime


class Result(msgspec.Struct, frozen=True):
    parts: list[Part]
    described: dict[str, str]
    """By backend name: where, and with which credential, as start-up settled it."""
    problems: list[str]

    @property
    def failed(self) -> bool:
        """A delete failed, or a part with deletions was refused or not planned."""
        outcomes = [o for part in self.parts for o in part.outcomes or ()]
        return any(not o.ok for o in outcomes) or any(
            part.refused or part.not_planned for part in self.parts
        )


class NotWhole(Exception):
    """A backend's list is not whole (or it failed): --yes deletes nothing anywhere."""


async def prune(
    setups: Sequence[Setup],
    settings: LogDirSettings,
    job: Job,
    before_acting: Callable[[Result], None] | None = None,
    progress_for: Callable[[int], ProgressLine | None] | None = None,
) -> Result:
    """Load every backend, plan each, and (with `job.execute`) delete each plan's rows through
    its own backend's client, all backends at once.

    `before_acting` sees the plans and where each acts before anything is deleted. With
    `job.execute`, a backend whose list is not whole stops everything (NotWhole), and a
    read-only backend's part is refused. `progress_for(total)` gives the line that shows how
    the deletes of all backends together go (None: none).
    """
    # A bucket keeps its store id before a prune that deletes compares the backends: one
    # bucket at two endpoints is then refused as one store.
    async with opened(setups, changing=job.execute) as connections:
        fleet = await load_fleet(connections, settings)
        one_store = await one_store_problem(connections)  # after the load: just before acting
        if one_store is not None:
            raise UsageError(f"{one_store}. Nothing was planned or deleted.")
        described = {c.name: common.described(c) for c in connections}
        problems = fleet_problems(fleet)
        if len(fleet.states) == 1 and not fleet.complete:
            raise NotWhole(only_one_not_whole(fleet.states[0]))
        parts = plan_fleet(fleet, job.policy, job.runs, job.now)
        if job.execute and not fleet.complete:
            raise NotWhole(
                "not every backend's list is whole ("
                + "; ".join(fleet.incomplete())
                + "). Nothing was deleted on any backend: a keep policy on a partial list would "
                "delete what it cannot see is needed. Run it again, or leave that backend out "
                "(--backend NAME for each of the others, or --no-tinker)."
            )
        result = Result(parts, described, problems)
        if before_acting is not None:
            before_acting(result)
        if job.execute:
            clients = {connection.name: connection.client for connection in connections}
            total = sum(part.delete_count for part in parts if not part.refused)
            line = progress_for(total) if progress_for is not None else None
            try:
                parts = await carry_out(parts, clients.__getitem__, counter(line))
            finally:
                if line is not None:
                    line.finish()
            places = {connection.name: connection.backend.describe() for connection in connections}
            problems = [*problems, *log_deletions(parts, settings.actions_log, job.now, places)]
            result = Result(parts, described, problems)
    return result


def log_deletions(
    parts: Sequence[Part], file: Path | None, now: datetime, backends: Mapping[str, str]
) -> list[str]:
    """Each backend's deletions appended to the actions log, as the app appends its own (so a
    checkpoint pruned on purpose is not "missing" later); why the log could not be written."""
    problems: list[str] = []
    for part in parts:
        if file is None or part.plan is None or not part.outcomes:
            continue
        runs = {row.tinker_path: row.run_name for row in part.plan.to_delete}
        items = [LogItem(o.target, runs.get(o.target, "?"), o.ok, o.message) for o in part.outcomes]
        summary = f"{summary_text('delete', sum(item.ok for item in items), len(items))} · prune"
        entry = LogEntry(now, "delete", summary, items, backends[part.name])
        problem = append_entry(file, entry)
        if problem is not None:
            problems.append(f"actions log: {problem}")
    return problems


def counter(line: ProgressLine | None) -> FleetProgress | None:
    """One count over every backend's deletes, shown on `line`."""
    if line is None:
        return None
    done = 0

    def count(_backend: str, _outcome: Outcome) -> None:
        nonlocal done
        done += 1
        line.update(done)

    return count


def only_one_not_whole(state: BackendState) -> str:
    """Why the one backend cannot be planned, as it was said before there were several."""
    if state.error is not None or state.snapshot is None:
        return state.error or "it was not loaded"
    return (
        f"{state.snapshot.incomplete}. Nothing was planned or deleted: a keep policy on a "
        "partial list would delete what it cannot see is needed. Run it again."
    )


def fleet_problems(fleet: Fleet) -> list[str]:
    """Every backend's problems; prefixed with its name when there are several."""
    several = len(fleet.states) > 1
    return [
        f"{state.name}: {problem}" if several else problem
        for state in fleet.states
        if state.snapshot is not None
        for problem in state.snapshot.problems
    ]


def prepare(args: argparse.Namespace) -> tuple[KeepPolicy, list[Setup]]:
    """Policy and backends from the arguments; raises on a usage error."""
    if (args.keep_best is None) != (args.metric is None):
        raise UsageError("--keep-best K and --metric KEY go together (e.g. --metric eval_loss)")
    policy = policy_from_args(args)
    if not policy.selects_something and not args.delete_all_unprotected:
        raise UsageError(NOTHING_SELECTED)
    if args.yes and args.readonly:
        raise UsageError(READONLY_REFUSAL)
    # A delete goes only where the command line points: `--local S prune` never also prunes
    # the Tinker connection the environment happens to name (issue 17's first finding).
    return policy, common.setups_for(args, rate=True, named_only=True)


def run(args: argparse.Namespace, clock: Clock | None = None) -> int:
    try:
        policy, setups = prepare(args)
    except (UsageError, PolicyError, common.Refusal) as exc:
        return fail(str(exc), 2)
    now = (clock or clock_from_environ()).now()
    job = Job(policy, args.run, args.yes, now)

    def before_acting(result: Result) -> None:
        show_plan(result, policy, args.json, args.yes)

    def progress_for(total: int) -> ProgressLine | None:
        return progress_line("Deleting", total, sys.stderr, args.json)

    try:
        result = run_async(
            prune(setups, log_settings_from_args(args), job, before_acting, progress_for)
        )
    except (UsageError, PolicyError) as exc:
        return fail(str(exc), 2)
    except NotWhole as exc:
        return fail(str(exc))
    show(result, policy, now, args.json, args.yes)
    return 1 if result.failed else 0


def acting_line(count: int, name: str, where: str) -> str:
    """What is about to happen and where, said before it happens."""
    return f"Deleting {count_of(count, 'checkpoint')} on {name} at {where}"


def acting_lines(result: Result) -> list[str]:
    """For each backend with deletions: where they go, or why they are refused."""
    lines = []
    for part in result.parts:
        if part.refused:
            lines.append(f"Refused: {part.refused}")
        elif part.delete_count:
            lines.append(acting_line(part.delete_count, part.name, result.described[part.name]))
    return lines


def show_plan(result: Result, policy: KeepPolicy, as_json: bool, execute: bool) -> None:
    """Before anything is deleted: the plans (text), and every backend deletes will reach."""
    acting = acting_lines(result) if execute else []
    if as_json:
        if acting:
            print("\n".join(acting), file=sys.stderr, flush=True)
        return
    for problem in result.problems:
        print(f"warning: {problem}", file=sys.stderr)
    parts = result.parts
    if len(parts) == 1 and parts[0].plan is not None:
        print("\n".join(plan_lines(parts[0].plan, parts[0].state.rate)))
    else:
        print("\n".join(fleet_plan_lines(parts, policy, result.described)))
    for line in acting:
        print(f"{line}:" if line.startswith("Deleting") else line, flush=True)


def show(result: Result, policy: KeepPolicy, now: datetime, as_json: bool, execute: bool) -> None:
    """After acting: the JSON document, or the outcome of the deletes (text)."""
    if as_json:
        sys.stdout.flush()
        out = sys.stdout.buffer
        write_plan_json(out, result.parts, result.described, policy, now, execute, result.problems)
        return
    count = sum(part.delete_count for part in result.parts if not part.refused)
    if not execute:
        hint = f"Run again with --yes to delete these {count} checkpoints."
        print(f"Dry run: nothing was deleted. {hint if count else 'Nothing to delete.'}")
        for part in result.parts:
            if part.refused or part.not_planned:
                print(f"  {part.refused or 'not planned: ' + part.not_planned}")
        return
    outcomes = [o for part in result.parts for o in part.outcomes or ()]
    print("\n".join(outcome_lines(outcomes)) if outcomes else "Nothing to delete.")
