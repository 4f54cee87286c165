"""`save_pretrained` folders and PEFT adapters: sampler checkpoints with their model facts."""

from __future__ import annotations

from ckpt_tui.store.discover.model import FoundCheckpoint, WeightFacts
from ckpt_tui.store.discover.weights import config_facts, folder_weights
from ckpt_tui.store.files import FILE

CONFIG_FILES = ("config.json", "adapter_config.json")
WEIGHT_FILES = ("pytorch_model.bin", "adapter_model.bin")


def has_weights(listing: dict[str, str]) -> bool:
    return any(
        kind == FILE
        and (
            name.endswith((".safetensors", ".safetensors.index.json", ".bin.index.json"))
            or name in WEIGHT_FILES
        )
        for name, kind in listing.items()
    )


def is_pretrained(listing: dict[str, str]) -> bool:
    """A config (model or adapter) next to weights."""
    return any(listing.get(c) == FILE for c in CONFIG_FILES) and has_weights(listing)


def apply_weights(found: FoundCheckpoint, weights: WeightFacts) -> FoundCheckpoint:
    """Copy tensor facts in; a truncated weight file makes the checkpoint incomplete."""
    weights.into(found.facts)
    found.unread = found.unread or weights.unread
    if weights.truncated and found.incomplete is None:
        found.incomplete = weights.truncated
    return found


def examine(path: str, name: str, listing: dict[str, str]) -> FoundCheckpoint:
    """A save_pretrained folder ("pretrained") or a PEFT adapter folder ("peft")."""
    is_adapter = listing.get("adapter_config.json") == FILE
    found = FoundCheckpoint(name, "peft" if is_adapter else "pretrained", training=False)
    config_facts(found, path, listing)
    return apply_weights(found, folder_weights(path, listing))
