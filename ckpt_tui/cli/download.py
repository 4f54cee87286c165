"""`ckpt-tui download TINKER_PATH…`: a checkpoint's files into a folder, resumable and
verified (ckpt_tui.client.download)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from ckpt_tui.api_types import TinkerPath
from ckpt_tui.cli import options
from ckpt_tui.cli.common import Refusal, fail, opened, run_async, setups_for
from ckpt_tui.cli.progress import TerminalLine
from ckpt_tui.client import CheckpointClient, ClientError
from ckpt_tui.client.download import DOWNLOAD_FAILURES, Progress, Result, download
from ckpt_tui.client.download.wording import ProgressView, folder_name
from ckpt_tui.sizes.size import format_bytes
from ckpt_tui.timekeeping.clock import clock_from_environ
from ckpt_tui.words import count_of

DESCRIPTION = """\
Download each checkpoint's files (TINKER_PATH: tinker://RUN/SEGMENT/NAME) through the signed
URLs its server hands out, into DIR/RUN_SEGMENT_NAME (DIR: --output, default the current
folder; e.g. ./run-1_external_weights_final, as the official CLI names it).
Several files are in flight at once; each is written to FILE.part and renamed only when
every file is whole and verified (length; safetensors headers and data). Run it again to
resume an interrupted download where it stopped. A folder that already holds the finished
checkpoint is refused without --force; a folder holding anything else is refused.
The hosted service signs only external_weights checkpoints; `ckpt-tui serve` signs every type.
"""


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "download",
        help="download checkpoints' files (resumable, verified)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", metavar="TINKER_PATH", help="checkpoints to download")
    parser.add_argument(
        "--output",
        "-o",
        metavar="DIR",
        help="the folder to download into: each checkpoint goes to DIR/RUN_SEGMENT_NAME "
        "(default: the current folder)",
    )
    parser.add_argument(
        "--force", action="store_true", help="download again into a folder that holds it already"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document, no progress")
    options.add_global_options(parser, options.BACKEND, after_command=True)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        paths = [_parsed(text) for text in args.paths]
        setups = setups_for(args)
        if len(setups) > 1:
            names = ", ".join(setup.backend.name for setup in setups)
            raise Refusal(f"several backends are open ({names}): name one with --backend NAME")
    except Refusal as exc:
        return fail(str(exc), 2)
    parent = Path(args.output or ".")
    folders = [parent / folder_name(path) for path in paths]
    show = None if args.json or not sys.stderr.isatty() else DownloadLine(sys.stderr)
    outcomes = run_async(_download_all(setups, paths, folders, args.force, show))
    failed = [text for text in outcomes if isinstance(text, str)]
    done = [result for result in outcomes if isinstance(result, Result)]
    if args.json:
        json.dump(
            {"downloads": [_as_json(r) for r in done], "errors": failed}, sys.stdout, indent=2
        )
        print()
    else:
        for result in done:
            print(_summary(result))
    for text in failed:
        fail(text)
    return 1 if failed else 0


def _parsed(text: str) -> TinkerPath:
    try:
        return TinkerPath.parse(text)
    except ValueError as exc:
        detail = f"{text!r} is not a checkpoint path ({exc}): give tinker://RUN/SEGMENT/NAME"
        raise Refusal(detail) from None


async def _download_all(
    setups: Any,
    paths: list[TinkerPath],
    folders: list[Path],
    force: bool,
    show: DownloadLine | None,
) -> list[Result | str]:
    outcomes: list[Result | str] = []
    async with opened(setups) as connections:
        connection = connections[0]
        if connection.problem is not None:
            return [f"{connection.name}: {connection.problem}"]
        for path, folder in zip(paths, folders, strict=True):
            outcomes.append(await _one(connection.client, path, folder, force, show))
    return outcomes


async def _one(
    client: CheckpointClient, path: TinkerPath, folder: Path, force: bool, show: DownloadLine | None
) -> Result | str:
    try:
        return await download(
            client,
            path,
            folder,
            force=force,
            clock=clock_from_environ(),
            on_progress=None if show is None else show.update,
        )
    except (*DOWNLOAD_FAILURES, ClientError) as exc:
        return f"{path}: {exc}"
    finally:
        if show is not None:
            show.clear()


def _summary(result: Result) -> str:
    again = (
        ""
        if result.fetched_bytes == result.bytes
        else f", {format_bytes(result.fetched_bytes)} fetched this run"
    )
    return (
        f"downloaded {result.tinker_path} to {result.folder}: {count_of(result.files, 'file')}, "
        f"{format_bytes(result.bytes)}{again}"
    )


def _as_json(result: Result) -> dict[str, object]:
    return {
        "tinker_path": result.tinker_path,
        "folder": result.folder,
        "files": result.files,
        "bytes": result.bytes,
        "fetched_bytes": result.fetched_bytes,
    }


class DownloadLine(TerminalLine):
    """The download's one line on a terminal (prune's, `TerminalLine`): bytes, rate, time
    left and files, in the words the TUI uses too (`ProgressView`)."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__(stream)
        self.view = ProgressView()

    def update(self, progress: Progress) -> None:
        self.view.update(progress)
        self.show(self.text, progress.done >= progress.total)

    def text(self) -> str:
        """'Downloading 1.2 GiB / 2.0 GiB · 45.0 MiB/s · 18s left · 3/8 files'."""
        return f"Downloading {self.view.whole_line()}"

    def clear(self) -> None:
        self.finish()
