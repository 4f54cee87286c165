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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from typing import Any

from ckpt_tui.catalog.snapshot import LogDirSettings, Snapshot, load_snapshot
from ckpt_tui.cli import options
from ckpt_tui.cli.clients import open_client
from ckpt_tui.cli.common import (
    NoBackendError,
    backend_from_args,
    describe_client_error,
    fail,
    log_settings_from_args,
    run_async,
)
from ckpt_tui.cli.documents.prune_plan import outcome_lines, plan_lines, plural, write_plan_json
from ckpt_tui.cli.ls import choose_runs
from ckpt_tui.client import (
    Backend,
    ClientError,
    IncompleteListError,
    Outcome,
)
from ckpt_tui.clock import Clock, clock_from_environ
from ckpt_tui.cost import RateError, resolve_storage_rate
from ckpt_tui.policy import KeepPolicy, Plan, PolicyError, plan
from ckpt_tui.policy.rules import END_OF_DAY

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


def moment(text: str) -> datetime:
    """An ISO date (meaning the end of that UTC day) or an ISO time (UTC if no zone)."""
    try:
        if len(text.strip()) == 10:
            return datetime.combine(date.fromisoformat(text.strip()), END_OF_DAY, timezone.utc)
        at = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a date like 2026-12-31 or a time like 2026-12-31T18:00Z, got {text!r}"
        ) from None
    return at if at.tzinfo else at.replace(tzinfo=timezone.utc)


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
        {"type": moment, "metavar": "DATE", "help": "expiring after DATE or never"},
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


@dataclass(frozen=True)
class Job:
    """What to plan and whether to carry it out."""

    policy: KeepPolicy
    runs: Sequence[str]
    execute: bool
    now: datetime
    readonly: bool = False


@dataclass
class Result:
    snapshot: Snapshot
    plan: Plan
    outcomes: list[Outcome] | None
    backend: str
    """The backend as start-up settled it (e.g. 'JWTs for the key from ...')."""


def plan_snapshot(snapshot: Snapshot, job: Job) -> Plan:
    runs = choose_runs(snapshot, list(job.runs))
    if runs is None:
        known = ", ".join(run.display_name for run in snapshot.catalog.runs) or "none"
        raise UsageError(f"no run matches {', '.join(job.runs)}; known runs: {known}")
    rows = [row for run in runs for row in run.stored_rows]
    metric = job.policy.metric
    if metric is not None and not any(metric in row.metrics for row in rows):
        found = ", ".join(sorted({key for row in rows for key in row.metrics})) or "none"
        raise UsageError(f"no checkpoint has metric {metric!r}; metrics found: {found}")
    return plan(rows, job.policy, job.now)


async def prune(
    backend: Backend,
    settings: LogDirSettings,
    job: Job,
    before_acting: Callable[[Snapshot, Plan, str], None] | None = None,
) -> Result:
    """Load, plan, and (with `job.execute`) delete the plan's rows in the same session.

    `before_acting` sees the plan and where it acts before anything is deleted.
    """
    async with await open_client(backend, readonly=job.readonly) as client:
        snapshot = await load_snapshot(client, settings)
        if not snapshot.complete:
            raise IncompleteListError(
                f"{snapshot.incomplete}. Nothing was planned or deleted: a keep policy on a "
                "partial list would delete what it cannot see is needed. Run it again."
            )
        the_plan = plan_snapshot(snapshot, job)
        if before_acting is not None:
            before_acting(snapshot, the_plan, client.describe())
        outcomes = None
        if job.execute:
            targets = [row.tinker_path for row in the_plan.to_delete]
            outcomes = await client.bulk_delete(targets) if targets else []
        described = client.describe()
    return Result(snapshot, the_plan, outcomes, described)


def prepare(args: argparse.Namespace) -> tuple[KeepPolicy, float | None, Backend]:
    """Policy, rate and backend from the arguments; raises on a usage error."""
    if (args.keep_best is None) != (args.metric is None):
        raise UsageError("--keep-best K and --metric KEY go together (e.g. --metric eval_loss)")
    policy = policy_from_args(args)
    if not policy.selects_something and not args.delete_all_unprotected:
        raise UsageError(NOTHING_SELECTED)
    rate = resolve_storage_rate(args.storage_rate)
    if args.yes and args.readonly:
        raise UsageError(READONLY_REFUSAL)
    return policy, rate, backend_from_args(args)


def run(args: argparse.Namespace, clock: Clock | None = None) -> int:
    try:
        policy, rate, backend = prepare(args)
    except (UsageError, PolicyError, RateError, NoBackendError) as exc:
        return fail(str(exc), 2)
    except ClientError as exc:
        return fail(describe_client_error(exc), 2)
    now = (clock or clock_from_environ()).now()
    job = Job(policy, args.run, args.yes, now, args.readonly)

    def before_acting(snapshot: Snapshot, the_plan: Plan, where: str) -> None:
        show_plan(snapshot, the_plan, where, rate, args.json, args.yes)

    try:
        result = run_async(prune(backend, log_settings_from_args(args), job, before_acting))
    except UsageError as exc:
        return fail(str(exc), 2)
    except ClientError as exc:
        return fail(describe_client_error(exc))
    show(result, rate, args.json)
    failed = result.outcomes is not None and any(not o.ok for o in result.outcomes)
    return 1 if failed else 0


def acting_line(count: int, where: str) -> str:
    """What is about to happen and where, said before it happens."""
    return f"Deleting {plural(count, 'checkpoint')} on {where}"


def show_plan(
    snapshot: Snapshot,
    the_plan: Plan,
    where: str,
    rate: float | None,
    as_json: bool,
    execute: bool,
) -> None:
    """Before anything is deleted: the plan (text), and the target of the deletes."""
    acting = acting_line(the_plan.delete_count, where) if execute else None
    if as_json:
        if acting and the_plan.delete_count:
            print(acting, file=sys.stderr, flush=True)
        return
    for problem in snapshot.problems:
        print(f"warning: {problem}", file=sys.stderr)
    print("\n".join(plan_lines(the_plan, rate)))
    if acting and the_plan.delete_count:
        print(f"{acting}:", flush=True)


def show(result: Result, rate: float | None, as_json: bool) -> None:
    """After acting: the JSON document, or the outcome of the deletes (text)."""
    problems = result.snapshot.problems
    if as_json:
        sys.stdout.flush()
        plan = result.plan
        write_plan_json(sys.stdout.buffer, plan, result.backend, rate, result.outcomes, problems)
        return
    count = result.plan.delete_count
    if result.outcomes is None:
        hint = f"Run again with --yes to delete these {count} checkpoints."
        print(f"Dry run: nothing was deleted. {hint if count else 'Nothing to delete.'}")
    elif not result.outcomes:
        print("Nothing to delete.")
    else:
        print("\n".join(outcome_lines(result.outcomes)))
