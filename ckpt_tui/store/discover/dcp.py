"""`torch.distributed.checkpoint` folders: `*.distcp` shards and a `.metadata` file.

`.metadata` is written last, after every rank's shard, so a folder without it is incomplete.
It is a pickle of the state dict's layout; its strings (decoded, never loaded) say whether
optimizer state was saved.
"""

from __future__ import annotations

import os

from ckpt_tui.store.discover.files import FILE, read_capped
from ckpt_tui.store.discover.model import FoundCheckpoint
from ckpt_tui.store.discover.pickle_scan import scan_pickle

METADATA = ".metadata"
SHARD_SUFFIX = ".distcp"


def match(listing: dict[str, str]) -> bool:
    return any(n.endswith(SHARD_SUFFIX) and k == FILE for n, k in listing.items())


def examine(path: str, name: str, listing: dict[str, str]) -> FoundCheckpoint:
    found = FoundCheckpoint(name, "dcp", training=False)
    found.facts["shards"] = str(sum(1 for n in listing if n.endswith(SHARD_SUFFIX)))
    if listing.get(METADATA) != FILE:
        found.incomplete = "no .metadata file (written after every shard)"
        return found
    try:
        summary = scan_pickle(read_capped(os.path.join(path, METADATA)))
    except (OSError, ValueError) as exc:
        found.facts["unreadable"] = f".metadata cannot be read: {exc}"
        return found
    found.training = any(s.startswith(("optim", "optimizer")) for s in summary.strings)
    if summary.unsafe_globals:
        found.facts["pickle_globals"] = ",".join(summary.unsafe_globals[:5])
    return found
