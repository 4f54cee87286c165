"""Hugging Face Trainer output: `checkpoint-<step>/` folders beside each other.

Each holds the model (save_pretrained files), and for resuming `optimizer.pt` (or
`optimizer.bin`, or DeepSpeed's `global_step*/`), `scheduler.pt`, `rng_state*.pth` and
`trainer_state.json`, which the Trainer writes last; a folder without it is incomplete. The
Trainer writes into `tmp-checkpoint-<step>` and renames it when done.
"""

from __future__ import annotations

import os
import re

from ckpt_tui.store.discover.model import FoundCheckpoint, number_text
from ckpt_tui.store.discover.pretrained import apply_weights
from ckpt_tui.store.discover.weights import config_facts, folder_weights
from ckpt_tui.store.files import DIR, FILE, read_json

NAME = re.compile(r"^(tmp-)?checkpoint-(\d+)$")
TRAINER_STATE = "trainer_state.json"
OPTIMIZER_FILES = ("optimizer.pt", "optimizer.bin")
NOISY_METRICS = ("_runtime", "_per_second")


def match(name: str) -> bool:
    return NAME.match(name) is not None


def has_optimizer(listing: dict[str, str]) -> bool:
    return any(listing.get(n) == FILE for n in OPTIMIZER_FILES) or any(
        kind == DIR and n.startswith("global_step") for n, kind in listing.items()
    )


def examine(path: str, name: str, listing: dict[str, str]) -> FoundCheckpoint:
    """One checkpoint-<step> folder: step, epoch, eval metrics at that step, the best one."""
    found_name = NAME.match(name)
    assert found_name is not None
    step = int(found_name.group(2))
    found = FoundCheckpoint(name, "hf-trainer", has_optimizer(listing), step=step)
    config_facts(found, path, listing)
    if found_name.group(1):
        found.incomplete = "temporary name: the Trainer renames it when the save is done"
    state = _trainer_state(found, path, listing)
    if state is None and found.unread is None:  # unreadable is no sign of a save in progress
        found.incomplete = found.incomplete or f"no readable {TRAINER_STATE} (written last)"
    elif state is not None:
        _state_facts(found, state, step)
    return apply_weights(found, folder_weights(path, listing))


def _trainer_state(
    found: FoundCheckpoint, path: str, listing: dict[str, str]
) -> dict[str, object] | None:
    if listing.get(TRAINER_STATE) != FILE:
        return None
    try:
        state = read_json(os.path.join(path, TRAINER_STATE))
    except OSError as exc:
        found.failed(TRAINER_STATE, exc)
        return None
    except ValueError:
        return None
    return state if isinstance(state, dict) else None


def _state_facts(found: FoundCheckpoint, state: dict[str, object], step: int) -> None:
    epoch = number_text(state.get("epoch"))
    if epoch is not None:
        found.facts["epoch"] = epoch
    history = state.get("log_history")
    for entry in history if isinstance(history, list) else []:
        if isinstance(entry, dict) and entry.get("step") == step:
            for key, value in entry.items():
                text = number_text(value)
                if key.startswith("eval_") and text and not key.endswith(NOISY_METRICS):
                    found.facts[key] = text
    best = state.get("best_model_checkpoint")
    if isinstance(best, str) and best:
        found.best_name = os.path.basename(best.rstrip("/\\"))
