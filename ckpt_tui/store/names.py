"""Checks that keep run ids and checkpoint names from escaping a store.

Every id that reaches a file operation passes through here first.
"""

from __future__ import annotations

from ckpt_tui.api_types import SEGMENT_TO_TYPE


class UnsafeNameError(ValueError):
    """An id or name that could point outside the store."""


_MAX_NAME = 255


def climbs(path: str) -> bool:
    """Whether a `/`-separated path has an empty, `.` or `..` part (on a file system, one
    that may lead out of where it seems to be)."""
    return any(part in ("", ".", "..") for part in path.split("/"))


def check_name(value: str, what: str = "name") -> str:
    """Return `value` if it is one safe path component, else raise UnsafeNameError."""
    if not value:
        raise UnsafeNameError(f"{what} is empty")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise UnsafeNameError(
            f"{what} {value!r} is not valid Unicode text (it holds a lone surrogate); "
            "give the name as UTF-8"
        ) from None
    if "\x00" in value:
        raise UnsafeNameError(f"{what} contains a NUL byte")
    if "/" in value or "\\" in value:
        raise UnsafeNameError(f"{what} {value!r} contains a path separator")
    if value in (".", "..") or ".." in value:
        raise UnsafeNameError(f"{what} {value!r} contains '..'")
    if size > _MAX_NAME:
        raise UnsafeNameError(f"{what} is longer than {_MAX_NAME} bytes")
    if value.startswith(".ckpt-tui"):
        raise UnsafeNameError(f"{what} {value!r} is reserved")
    return value


def check_run_id(run_id: str) -> str:
    """A run id is one safe path component."""
    return check_name(run_id, "run id")


def split_checkpoint_id(checkpoint_id: str) -> tuple[str, str]:
    """Split `SEGMENT/NAME` into a known segment and a safe name, or raise UnsafeNameError."""
    if "\x00" in checkpoint_id or "\\" in checkpoint_id or checkpoint_id.startswith("/"):
        raise UnsafeNameError(f"checkpoint id {checkpoint_id!r} is not SEGMENT/NAME")
    segment, sep, name = checkpoint_id.partition("/")
    if not sep or segment not in SEGMENT_TO_TYPE:
        known = ", ".join(SEGMENT_TO_TYPE)
        raise UnsafeNameError(
            f"checkpoint id {checkpoint_id!r} must be SEGMENT/NAME with SEGMENT one of {known}"
        )
    return segment, check_name(name, "checkpoint name")
