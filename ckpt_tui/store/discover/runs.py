"""Turning a folder's checkpoints into a run: stable ids, resume point, best, run info.

Run ids come from the folder's path under the store root alone ("a/b" -> "a__b"), so they
survive restarts and the renaming of any other folder. A path that cannot map one-to-one (it
holds "__", is unsafe or too long) gets a short hash of the path instead of losing information.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection

from ckpt_tui.store.discover.model import FoundCheckpoint, FoundRun
from ckpt_tui.store.files import lstat_or_none
from ckpt_tui.store.names import UnsafeNameError, check_name
from ckpt_tui.store.runinfo import RunInfo
from ckpt_tui.store.times import ns_to_us

ROOT_RUN_ID = "_root_"
WEIGHTS_ONLY_FORMATS = frozenset({"pretrained", "peft", "safetensors"})
"""Folder formats that hold model weights alone: sampler weights. Every other folder is a
training loop's save, listed as training state (`weights/`) whether or not its optimizer state
has arrived yet (the `has_optimizer` fact says), so its id never changes while a save lands.
A single file does not arrive in parts: its content says (`segment_of`)."""
MAX_ID_BYTES = 200
FOUND_SEGMENTS = ("weights", "sampler_weights")
"""The segments a found checkpoint is listed in (`segment_of`)."""


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:10]


def _is_safe(name: str) -> bool:
    try:
        check_name(name)
    except UnsafeNameError:
        return False
    return len(name.encode("utf-8")) <= MAX_ID_BYTES


def _cleaned(name: str) -> str:
    """`name` made path-safe and UTF-8 (a byte of a file name that is not UTF-8 becomes
    U+FFFD), for an id that a hash of the real name keeps unique."""
    text = name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return text.replace("\\", "_").replace("..", "_").lstrip(".")[:MAX_ID_BYTES]


def run_id_for(rel: str, reserved: Collection[str] = ()) -> str:
    """The id of the run in folder `rel` ("" for the root); never one of `reserved`."""
    if not rel:
        base = ROOT_RUN_ID
    else:
        base = "__".join(rel.split("/"))
        if "__" in rel or base == ROOT_RUN_ID or not _is_safe(base) or base in reserved:
            base = f"{_cleaned(base)}-{_short_hash(rel)}"
    return base


def checkpoint_name(name: str) -> str:
    """A path-safe name for a checkpoint file or folder (hashed if it needs cleaning)."""
    if _is_safe(name):
        return name
    return f"{_cleaned(name)}-{_short_hash(name)}"


def _newest_first(found: FoundCheckpoint) -> tuple[int, int]:
    return (found.step if found.step is not None else -1, found.mtime_ns)


def mark_flags(checkpoints: list[FoundCheckpoint]) -> dict[str, dict[str, str]]:
    """name -> user_metadata facts, with the resume point and the best checkpoint flagged."""
    facts = {c.name: c.all_facts() for c in checkpoints}
    complete = sorted((c for c in checkpoints if c.incomplete is None), key=_newest_first)
    resumable = [c for c in complete if c.training]
    if resumable:
        facts[resumable[-1].name]["resume_point"] = "true"
    best = next((c.best_name for c in reversed(complete) if c.best_name), None)
    if best in facts:
        facts[best]["best"] = "true"
    return facts


def run_info(path: str, rel: str, checkpoints: list[FoundCheckpoint]) -> RunInfo:
    """base model and LoRA facts from the newest checkpoint that names them."""
    newest = sorted(checkpoints, key=_newest_first, reverse=True)
    base = next((c.facts["base_model"] for c in newest if "base_model" in c.facts), "unknown")
    rank = next((c.facts["lora_rank"] for c in newest if "lora_rank" in c.facts), None)
    top = lstat_or_none(path)
    times = [c.mtime_ns for c in checkpoints] + ([top.st_mtime_ns] if top else [])
    formats = sorted({c.format for c in checkpoints})
    return RunInfo(
        base_model=base,
        is_lora=rank is not None,
        created_us=ns_to_us(min(times)) if times else 0,
        lora_rank=int(rank) if rank is not None and rank.isdigit() else None,
        user_metadata={"format": ",".join(formats), "path": rel or "."},
    )


def build_run(
    run_id: str, rel: str, path: str, checkpoints: list[FoundCheckpoint], extra_watch: list[str]
) -> FoundRun:
    """A run of `checkpoints` (already located, sized and timed)."""
    facts = mark_flags(checkpoints)
    items = []
    for found in sorted(checkpoints, key=lambda c: c.name):
        segment = segment_of(found)
        items.append((f"{segment}/{checkpoint_name(found.name)}", found, facts[found.name]))
    watch = (path, *(c.location for c in checkpoints), *extra_watch)
    signature = tuple(_mtime(p) for p in watch)
    info = run_info(path, rel, checkpoints)
    return FoundRun(run_id, rel, path, info, items, watch, signature)


def segment_of(found: FoundCheckpoint) -> str:
    """`weights` (training state) or `sampler_weights` (weights alone) for a checkpoint: a
    single file by its content (optimizer state in it or not: `torch.save(model.state_dict())`
    is weights alone), a folder by its format (stable while its files arrive)."""
    by_format = found.format in WEIGHTS_ONLY_FORMATS
    weights_only = not found.training if found.single_file else by_format
    training, weights_alone = FOUND_SEGMENTS
    return weights_alone if weights_only else training


def _mtime(path: str) -> int | None:
    st = lstat_or_none(path)
    return None if st is None else st.st_mtime_ns
