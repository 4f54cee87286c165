"""DeepSpeed: `global_step<N>/` folders and a `latest` file naming the last complete one.

DeepSpeed writes `latest` after every file of a save; a folder newer than the tag it names (or
any, when there is no `latest`) may still be being written.
"""

from __future__ import annotations

import os
import re

from ckpt_tui.store.discover.model import FoundCheckpoint, WeightFacts
from ckpt_tui.store.discover.pretrained import apply_weights
from ckpt_tui.store.discover.torch_zip import read_torch_file
from ckpt_tui.store.files import FILE, read_capped
from ckpt_tui.store.unread import is_gone

NAME = re.compile(r"^global_step(\d+)$")
LATEST = "latest"
MODEL_STATES = "mp_rank_00_model_states.pt"

UNREAD_TAG = ""
"""The tag when `latest` could not be read: no sign either way (the walk records the file)."""


def match(name: str) -> bool:
    return NAME.match(name) is not None


def latest_tag(run_folder: str, listing: dict[str, str]) -> str | None:
    """The folder name in `latest`, None without one; OSError when it cannot be read (the
    caller records it: unreadable is not absent)."""
    if listing.get(LATEST) != FILE:
        return None
    try:
        return read_capped(os.path.join(run_folder, LATEST), 4096).decode("utf-8").strip()
    except OSError as exc:
        if is_gone(exc):
            return None
        raise
    except ValueError:
        return None


def examine(path: str, name: str, listing: dict[str, str], tag: str | None) -> FoundCheckpoint:
    """One global_step<N> folder."""
    found_name = NAME.match(name)
    assert found_name is not None
    step = int(found_name.group(1))
    has_optimizer = any(n.endswith("optim_states.pt") for n in listing)
    found = FoundCheckpoint(name, "deepspeed", has_optimizer, step=step)
    tag_match = NAME.match(tag or "")
    if tag is None:
        found.incomplete = "no 'latest' file beside it (DeepSpeed writes it after a save)"
    elif tag_match and name != tag and step > int(tag_match.group(1)):
        found.incomplete = f"newer than the 'latest' tag {tag}: still being written"
    return apply_weights(found, _model_weights(path, listing))


def _model_weights(path: str, listing: dict[str, str]) -> WeightFacts:
    weights = WeightFacts()
    if listing.get(MODEL_STATES) != FILE:
        return weights
    try:
        facts = read_torch_file(os.path.join(path, MODEL_STATES))
    except OSError as exc:
        weights.failed(MODEL_STATES, exc)
        return weights
    weights.add(facts.params, facts.bytes_by_dtype)
    weights.truncated, weights.problem = facts.truncated, facts.problem
    return weights
