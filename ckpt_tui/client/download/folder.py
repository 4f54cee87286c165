"""The target folder of a download: new, an unfinished download of the same checkpoint
(resumed), a finished one (refused without force), or anything else (refused).

The state file names the checkpoint and each file's ETag; it exists only while a download
is unfinished, so a folder without one that holds exactly the checkpoint's files is done.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from ckpt_tui.client.download.targets import STATE_FILE

MAX_STATE_BYTES = 4 * 1024 * 1024


class FolderRefused(Exception):
    """The target folder cannot take this download; the message says what to do."""


class DownloadState(msgspec.Struct):
    """What `.ckpt-tui-download.json` holds while a download is unfinished."""

    tinker_path: str
    etags: dict[str, str] = msgspec.field(default_factory=dict)


def prepare(folder: Path, tinker_path: str, targets: dict[str, Path], force: bool) -> DownloadState:
    """The state to go on from (resumed, or fresh); FolderRefused when the folder must not be
    written. Creates the folder and writes a fresh state file."""
    state_file = folder / STATE_FILE
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise FolderRefused(f"{folder} exists and is not a folder: give another --output")
    if state_file.exists():
        state = _read_state(state_file)
        if state.tinker_path != tinker_path:
            raise FolderRefused(
                f"{folder} holds an unfinished download of {state.tinker_path}: "
                "finish that one there, or give another --output"
            )
        return state
    present = _files_in(folder) if folder.exists() else set()
    wanted = {str(path) for path in targets.values()}
    if present and present == wanted and not force:
        raise FolderRefused(
            f"{folder} already holds this checkpoint's files: "
            "pass --force to download them again, or give another --output"
        )
    if present - wanted:
        extra = sorted(present - wanted)[0]
        raise FolderRefused(
            f"{folder} holds other files ({extra}, ...): give an empty or new --output folder"
        )
    folder.mkdir(parents=True, exist_ok=True)
    state = DownloadState(tinker_path)
    save(folder, state)
    return state


def save(folder: Path, state: DownloadState) -> None:
    """Write the state file whole (a new file renamed over the old); on OSError (a full
    disk), the old one is left as it was and the new one removed."""
    temp = folder / (STATE_FILE + ".new")
    try:
        temp.write_bytes(msgspec.json.encode(state))
        os.replace(temp, folder / STATE_FILE)
    except OSError:
        temp.unlink(missing_ok=True)
        raise


def finish(folder: Path) -> None:
    """The download is whole: it has no state any more."""
    (folder / STATE_FILE).unlink(missing_ok=True)


def _read_state(path: Path) -> DownloadState:
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_STATE_BYTES + 1)
        if len(raw) > MAX_STATE_BYTES:
            raise ValueError("too large")
        return msgspec.json.decode(raw, type=DownloadState)
    except (OSError, ValueError) as exc:
        raise FolderRefused(
            f"{path} cannot be read ({exc}): remove it to download into this folder again"
        ) from exc


def _files_in(folder: Path) -> set[str]:
    """Every file under `folder` (links count as files, never followed)."""
    found: set[str] = set()
    for root, dirs, files in os.walk(folder):
        found.update(os.path.join(root, name) for name in files)
        found.update(
            os.path.join(root, name) for name in dirs if os.path.islink(os.path.join(root, name))
        )
    return found
