"""`ckpt-tui demo`: write a realistic demo store and training logs, then open the app on them."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ckpt_tui.backends.resolve import local_endpoint
from ckpt_tui.catalog.actions_log import state_log_file
from ckpt_tui.catalog.snapshot import LogDirSettings
from ckpt_tui.cli import allocator, options
from ckpt_tui.cli.common import connection_to, fail
from ckpt_tui.cost import RateError, resolve_storage_rate
from ckpt_tui.timekeeping.clock import clock_from_environ

if TYPE_CHECKING:
    from ckpt_tui.demo import DemoPaths

DEMO_OPTIONS = ("readonly", "poll", "storage_rate")
"""The app's own options; the demo picks its backend and logs itself."""


def default_demo_dir(environ: dict[str, str] | None = None) -> Path:
    """`$XDG_CACHE_HOME/ckpt-tui/demo`, else `~/.cache/ckpt-tui/demo`."""
    env = dict(os.environ) if environ is None else environ
    cache = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "ckpt-tui" / "demo"


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "demo",
        help="try ckpt-tui on a demo store (no account needed)",
        description="Write a demo store and cookbook-style training logs, then open the app "
        "on them. Running it again rewrites the demo from scratch.",
    )
    parser.add_argument(
        "--dir",
        type=Path,
        help="where to write it (default: a folder under your cache dir, which is rewritten)",
    )
    parser.add_argument(
        "--no-tui", action="store_true", help="only write the data; print how to open or serve it"
    )
    parser.add_argument("--seed", type=int, help="which demo (default 7)")
    options.add_global_options(parser, DEMO_OPTIONS, after_command=True)
    parser.set_defaults(func=run)


def executable() -> str:
    """How to run this ckpt-tui from any shell, activated virtualenv or not: the full path
    of the `ckpt-tui` script beside this Python, else this Python with `-m ckpt_tui`."""
    script = Path(sys.executable).parent / "ckpt-tui"
    if script.is_file():
        return shlex.quote(str(script.absolute()))
    return f"{shlex.quote(str(Path(sys.executable).absolute()))} -m ckpt_tui"


def demo_backends(paths: DemoPaths) -> list[tuple[str, str]]:
    """The demo's three backends, by name and location: a Tinker-style store, a GPU box's
    folder of Hugging Face Trainer saves, and a team bucket (read as one: `file://`)."""
    from ckpt_tui.demo.bucket import bucket_location

    return [
        ("tinker-demo", str(paths.store)),
        ("gpu-box", str(paths.box)),
        ("team-bucket", bucket_location(paths.bucket)),
    ]


def open_commands(paths: DemoPaths) -> str:
    logs = shlex.quote(str(paths.logs))
    locals_ = " ".join(
        f"--local {name}={shlex.quote(place)}" for name, place in demo_backends(paths)
    )
    store = shlex.quote(str(paths.store))
    command = executable()
    return (
        f"  open it:   {command} {locals_} --log-dir {logs}\n"
        f"  serve it:  {command} serve {store}\n"
        f"  list it:   {command} ls {locals_} --log-dir {logs}"
    )


def run(args: argparse.Namespace) -> int:
    # Imported here: the store and the demo's writers are not needed by other commands.
    from ckpt_tui.demo import DEFAULT_SEED, DemoError, build_demo

    root = (args.dir or default_demo_dir()).expanduser()
    clock = clock_from_environ()
    try:
        rate = resolve_storage_rate(args.storage_rate)
    except RateError as exc:
        return fail(str(exc), 2)
    try:
        paths = build_demo(root, DEFAULT_SEED if args.seed is None else args.seed, clock)
    except (DemoError, OSError) as exc:
        return fail(f"cannot write the demo: {exc}", 2)
    print(f"Demo written to {paths.root}\n{open_commands(paths)}")
    if args.no_tui:
        return 0
    from ckpt_tui.tui.app import CkptApp

    allocator.map_big_blocks()  # memory stays flat over refreshes (see its docstring)
    # Only the demo's own logs: ~/tinker-runs may hold real runs that would mix in.
    settings = LogDirSettings((paths.logs,), runs_root=None, actions_log=state_log_file())
    connections = [
        connection_to(
            local_endpoint(place, None),
            name,
            readonly=args.readonly,
            storage_rate=rate,
            open_later=True,  # the stores open after the first frame (as in `tui.run`)
        )
        for name, place in demo_backends(paths)
    ]
    app = CkptApp(connections, settings, clock=clock, poll_interval=args.poll)
    app.run()
    print(f"The demo stays in {paths.root}; to open it again:\n{open_commands(paths)}")
    return 0
