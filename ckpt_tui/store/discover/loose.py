"""Single-file checkpoints: `torch.save` files (.pt, .pth, .bin, .ckpt) and `.safetensors`.

A file still being written under a temporary name (`model.pt.tmp`, `x.safetensors.partial`) is
shown as incomplete and not opened. A `.bin` that is neither a zip nor a pickle is not a
checkpoint (e.g. a tokenized data set) and is skipped; other torch suffixes are shown with the
reason they cannot be read.
"""

from __future__ import annotations

from ckpt_tui.store.discover.model import RESERVED_FACTS, FoundCheckpoint, WeightFacts
from ckpt_tui.store.discover.pretrained import apply_weights
from ckpt_tui.store.discover.torch_zip import TorchFacts, read_torch_file
from ckpt_tui.store.discover.weights import safetensors_facts
from ckpt_tui.store.files import strip_temp

TORCH_SUFFIXES = (".pt", ".pth", ".bin", ".ckpt")
SAFETENSORS = ".safetensors"
AUXILIARY = ("training_args.bin", "scheduler.pt", "scheduler.bin", "scaler.pt")
AUXILIARY_PREFIXES = ("rng_state", "random_states")


def is_candidate(name: str) -> bool:
    """A name that may be a single-file checkpoint (not a Trainer's side file)."""
    base, _ = strip_temp(name)
    if base in AUXILIARY or base.startswith(AUXILIARY_PREFIXES):
        return False
    return base.endswith((*TORCH_SUFFIXES, SAFETENSORS))


def examine(path: str, name: str) -> FoundCheckpoint | None:
    found = _examine(path, name)
    if found is not None:
        found.single_file = True
    return found


def _examine(path: str, name: str) -> FoundCheckpoint | None:
    base, is_temp = strip_temp(name)
    kind = "safetensors" if base.endswith(SAFETENSORS) else "torch"
    if base.endswith(".ckpt"):
        kind = "lightning"
    if is_temp:
        found = FoundCheckpoint(name, kind, training=False)
        found.incomplete = "temporary name: still being written"
        return found
    if kind == "safetensors":
        weights = WeightFacts()
        safetensors_facts(path, weights)
        return apply_weights(FoundCheckpoint(name, kind, training=False), weights)
    return _torch(path, name, kind)


def _torch(path: str, name: str, kind: str) -> FoundCheckpoint | None:
    try:
        facts = read_torch_file(path)
    except OSError as exc:
        found = FoundCheckpoint(name, kind, training=False)
        found.facts["unreadable"] = f"cannot be read: {exc.strerror or exc}"
        found.failed(name, exc)
        return found
    if not facts.is_torch and facts.truncated is None and name.endswith(".bin"):
        return None
    found = FoundCheckpoint(name, _format(kind, facts), facts.has_optimizer, step=facts.step)
    for key, value in facts.scalars.items():
        if key not in RESERVED_FACTS:
            found.facts[key] = value
    if facts.unsafe_globals:
        found.facts["pickle_globals"] = ",".join(facts.unsafe_globals[:5])
    weights = WeightFacts(facts.params, facts.bytes_by_dtype, facts.truncated, facts.problem)
    return apply_weights(found, weights)


def _format(kind: str, facts: TorchFacts) -> str:
    if kind == "lightning" or facts.format == "lightning":
        return "lightning"
    return facts.format
