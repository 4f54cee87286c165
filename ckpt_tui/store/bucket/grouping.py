"""Checkpoints of one delete batch that sit side by side in one folder, looked at through one
listing of that folder instead of one listing each (`deleting.BucketDeleter._look`).

Pure functions over keys: which folder a checkpoint's prefix is in, and which keys of a
folder's listing are a checkpoint's own: the objects under its prefix plus `/`, and the one
object named as the prefix itself (a `torch.save` file).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Literal

Want = Literal["either", "folder", "file"]
"""What of a checkpoint a look returns: the objects under its prefix plus `/` or, when there
is none, the object named as the prefix ("either": before a delete); after, as its intent
record says it was: only the former ("folder"), or the latter and the former ("file": a folder
of the file's name is not gone because the file is)."""


def by_folder(prefixes: Iterable[str]) -> dict[str, list[str]]:
    """The prefixes grouped by the folder they are in ("" for a prefix at the top)."""
    groups: dict[str, list[str]] = defaultdict(list)
    for prefix in prefixes:
        groups[prefix.rpartition("/")[0]].append(prefix)
    return dict(groups)


def split_listing(folder: str, listed: dict[str, int]) -> dict[str, dict[str, int]]:
    """A listing of `folder` + `/` (every key checked to be under it) by the name of the
    child each key is in or is: {name: {key: last modified}}."""
    children: dict[str, dict[str, int]] = defaultdict(dict)
    start = len(folder) + 1
    for key, modified_us in listed.items():
        children[key[start:].partition("/")[0]][key] = modified_us
    return children


def picked(children: dict[str, dict[str, int]], prefix: str, want: Want) -> dict[str, int]:
    """What `want` takes of the checkpoint at `prefix` from its folder's `split_listing`."""
    own = children.get(prefix.rpartition("/")[2], {})
    under = {key: modified_us for key, modified_us in own.items() if key != prefix}
    itself = {prefix: own[prefix]} if prefix in own else {}
    if want == "folder":
        return under
    if want == "file":
        return {**itself, **under}
    return under or itself
