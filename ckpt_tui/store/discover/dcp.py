"""`torch.distributed.checkpoint` folders: `*.distcp` shards and a `.metadata` file.

`.metadata` is written last, after every rank's shard, so a folder without it is incomplete.
It is a pickle of the state dict's layout; its strings (decoded, never loaded) say whether
optimizer state was saved.
"""

from __future__ import annotations

import os
import re

from ckpt_tui.store.discover.model import FoundCheckpoint
from ckpt_tui.store.discover.pickle_scan import scan_pickle
from ckpt_tui.store.files import FILE, read_capped

METADATA = ".metadata"
OPTIMIZER_STRING = re.compile(rb"(?:\x8c.|X.{4}|\x8d.{8})optim", re.DOTALL)
"""A pickled string that starts with "optim": what shows optimizer state when the scan stops
at its bounds (a 64-rank 70B checkpoint's .metadata has about 9.5 million opcodes)."""
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
        data = read_capped(os.path.join(path, METADATA))
    except (OSError, ValueError) as exc:
        found.facts["unreadable"] = f".metadata cannot be read: {exc}"
        if isinstance(exc, OSError):
            found.failed(METADATA, exc)
        return found
    summary = scan_pickle(data)
    found.training = any(s.startswith("optim") for s in summary.strings) or (
        not summary.readable and OPTIMIZER_STRING.search(data) is not None
    )
    if summary.unsafe_globals:
        found.facts["pickle_globals"] = ",".join(summary.unsafe_globals[:5])
    return found
