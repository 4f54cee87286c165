"""Accelerate `save_state` folders: `checkpoints/checkpoint_<i>/` with the model, optimizer,
scheduler and random states of iteration i."""

from __future__ import annotations

import re

from ckpt_tui.store.discover.model import FoundCheckpoint
from ckpt_tui.store.discover.pretrained import apply_weights, has_weights
from ckpt_tui.store.discover.weights import folder_weights

NAME = re.compile(r"^checkpoint_(\d+)$")
STATE_PREFIXES = ("optimizer", "random_states", "scheduler")


def match(name: str, listing: dict[str, str]) -> bool:
    """A checkpoint_<i> folder holding weights or Accelerate's state files."""
    return NAME.match(name) is not None and (
        has_weights(listing) or any(n.startswith(STATE_PREFIXES) for n in listing)
    )


def examine(path: str, name: str, listing: dict[str, str]) -> FoundCheckpoint:
    found_name = NAME.match(name)
    assert found_name is not None
    has_optimizer = any(n.startswith("optimizer") for n in listing)
    found = FoundCheckpoint(name, "accelerate", has_optimizer)
    found.facts["checkpoint_index"] = found_name.group(1)
    return apply_weights(found, folder_weights(path, listing))
