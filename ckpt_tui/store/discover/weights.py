"""The tensors of a model folder: safetensors headers (sharded or not) or torch weight files.

Only headers are read: 8 + N bytes per safetensors file, the zip directory plus data.pkl of a
torch file. Config files give the base model and, for PEFT adapters, rank and alpha.
"""

from __future__ import annotations

import os

from ckpt_tui.sizes import SafetensorsHeaderError, read_header_from
from ckpt_tui.store.discover.model import FoundCheckpoint, WeightFacts, number_text
from ckpt_tui.store.discover.torch_zip import read_torch_file
from ckpt_tui.store.files import FILE, open_regular, read_json, size_of, temp_files

TORCH_WEIGHT_FILES = ("pytorch_model.bin", "adapter_model.bin", "model.pt", "model.bin")
TRUNCATION_HINTS = ("more than the file holds", "past the end of the file", "too short")


def safetensors_facts(path: str, into: WeightFacts) -> None:
    """Add one safetensors file's header to `into`; a short file is `truncated`."""
    try:
        with open_regular(path) as handle:
            summary = read_header_from(handle, size_of(handle), path)
    except SafetensorsHeaderError as exc:
        name = os.path.basename(path)
        if any(hint in exc.reason for hint in TRUNCATION_HINTS):
            into.truncated = f"{name} is truncated: {exc.reason}"
        else:
            into.problem = f"{name}: {exc.reason}"
        return
    except OSError as exc:
        into.failed(os.path.basename(path), exc)
        return
    into.add(summary.param_count, summary.bytes_by_dtype)


def _index_shards(folder: str, index_name: str, into: WeightFacts) -> list[str]:
    try:
        weight_map = read_json(os.path.join(folder, index_name)).get("weight_map")
        if not isinstance(weight_map, dict):
            raise ValueError("no weight_map object")
        shards = sorted({str(v) for v in weight_map.values()})
    except OSError as exc:
        into.failed(index_name, exc)
        return []
    except ValueError as exc:
        into.problem = f"{index_name} cannot be read: {exc}"
        return []
    return [s for s in shards if "/" not in s and "\\" not in s and ".." not in s]


def folder_weights(folder: str, listing: dict[str, str]) -> WeightFacts:
    """Tensors of a model folder; a shard named by the index but absent makes it incomplete."""
    facts = WeightFacts()
    indexes = sorted(n for n in listing if n.endswith(".safetensors.index.json"))
    if indexes:
        shards = _index_shards(folder, indexes[0], facts)
        missing = [s for s in shards if listing.get(s) != FILE]
        if missing:
            facts.truncated = f"shard {missing[0]} named by {indexes[0]} is missing"
        files = [s for s in shards if s not in missing]
    else:
        files = sorted(n for n in listing if n.endswith(".safetensors") and listing[n] == FILE)
    for name in files:
        safetensors_facts(os.path.join(folder, name), facts)
    if not files:
        _torch_weights(folder, listing, facts)
    pending = temp_files(listing)
    if pending and facts.truncated is None:
        facts.truncated = f"{pending[0]} is still being written"
    return facts


def _torch_weights(folder: str, listing: dict[str, str], facts: WeightFacts) -> None:
    for name in TORCH_WEIGHT_FILES:
        if listing.get(name) != FILE:
            continue
        try:
            found = read_torch_file(os.path.join(folder, name))
        except OSError as exc:
            facts.failed(name, exc)
            return
        facts.add(found.params, found.bytes_by_dtype)
        facts.truncated = facts.truncated or found.truncated
        facts.problem = facts.problem or found.problem
        return


def config_facts(found: FoundCheckpoint, folder: str, listing: dict[str, str]) -> None:
    """base_model, lora_rank, lora_alpha from adapter_config.json, else config.json
    (`_name_or_path`, else `model_type` with the first of `architectures`), into `found`."""
    facts = found.facts
    if listing.get("adapter_config.json") == FILE:
        adapter = _json_object(found, folder, "adapter_config.json")
        base = adapter.get("base_model_name_or_path")
        if isinstance(base, str) and base:
            facts["base_model"] = base
        for key, fact in (("r", "lora_rank"), ("lora_alpha", "lora_alpha")):
            text = number_text(adapter.get(key))
            if text is not None:
                facts[fact] = text
        peft_type = adapter.get("peft_type")
        if isinstance(peft_type, str):
            facts["peft_type"] = peft_type
    if "base_model" not in facts and listing.get("config.json") == FILE:
        config = _json_object(found, folder, "config.json")
        name = config.get("_name_or_path")
        model_type = config.get("model_type")
        if isinstance(model_type, str):
            facts["model_type"] = model_type
        architecture = _first_architecture(config)
        if isinstance(name, str) and name:
            facts["base_model"] = name
        elif isinstance(model_type, str) and model_type and architecture:
            # transformers 5 no longer writes _name_or_path: say what the model is
            facts["base_model"] = f"{model_type} ({architecture})"


def _first_architecture(config: dict[str, object]) -> str | None:
    architectures = config.get("architectures")
    if isinstance(architectures, list) and architectures and isinstance(architectures[0], str):
        return architectures[0]
    return None


def _json_object(found: FoundCheckpoint, folder: str, name: str) -> dict[str, object]:
    """The file's object; {} and an `unreadable` fact when it cannot be read."""
    try:
        return read_json(os.path.join(folder, name))
    except (OSError, ValueError) as exc:
        found.facts.setdefault("unreadable", f"{name} cannot be read: {exc}")
        if isinstance(exc, OSError):
            found.failed(name, exc)
        return {}
