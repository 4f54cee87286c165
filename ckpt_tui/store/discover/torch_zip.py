"""`torch.save` files: the zip's directory gives tensor bytes, the pickle's opcodes the rest.

A torch file (torch >= 1.6) is a zip holding `<archive>/data.pkl` (the pickled object, tensors
replaced by persistent ids naming their storages), `<archive>/data/<key>` (each storage's raw
bytes), `<archive>/version` and usually `<archive>/byteorder`. `zipfile` reads the central
directory at the end of the file, not the data; only data.pkl is read, up to a cap, and only
decoded (`pickle_scan`), never loaded.
"""

from __future__ import annotations

import lzma
import zipfile
import zlib
from dataclasses import dataclass, field
from typing import BinaryIO

from ckpt_tui.store.discover.pickle_scan import PickleSummary, StorageRef, TensorRef, scan_pickle
from ckpt_tui.store.files import open_regular

OPTIMIZER_KEYS = frozenset(
    {"optimizer", "optimizer_state_dict", "optimizer_states", "optimizer_state", "optim"}
)
MODEL_KEYS = ("state_dict", "model_state_dict", "model", "module", "model_state")
STEP_KEYS = ("global_step", "step", "iteration", "iter")
MAX_SCALARS = 20
MAX_PICKLE_BYTES = 16 * 1024 * 1024
"""The most of a data.pkl read (decompressed); a real one holds structure, not tensors."""
ZIP_MAGIC = b"PK\x03\x04"
PICKLE_PROTO = 0x80
ZIP_READ_ERRORS = (
    zipfile.BadZipFile, OSError, EOFError, ValueError, RuntimeError, NotImplementedError,
    zlib.error, lzma.LZMAError,
)  # fmt: skip
"""What a damaged member raises: bad headers, CRC, encryption, unknown or broken compression."""


@dataclass
class TorchFacts:
    """What a torch file says about itself; `problem`/`truncated` explain what could not be read."""

    format: str = "torch"
    is_torch: bool = False
    has_optimizer: bool = False
    params: int | None = None
    bytes_by_dtype: dict[str, int] = field(default_factory=dict)
    scalars: dict[str, str] = field(default_factory=dict)
    step: int | None = None
    unsafe_globals: list[str] = field(default_factory=list)
    problem: str | None = None
    truncated: str | None = None


def read_torch_file(path: str) -> TorchFacts:
    """Inspect one file; OSError if it cannot be opened (the caller reports it)."""
    with open_regular(path) as handle:
        magic = handle.read(4)
        if magic.startswith(ZIP_MAGIC):
            handle.seek(0)
            return _read_zip(handle)
    if magic[:1] == bytes([PICKLE_PROTO]):
        # torch < 1.6: several pickles back to back; sizes only
        return TorchFacts(format="torch-legacy", is_torch=True)
    return TorchFacts(problem="neither a zip nor a pickle: not a torch.save file")


def _read_zip(handle: BinaryIO) -> TorchFacts:
    try:
        archive = zipfile.ZipFile(handle)
    except (zipfile.BadZipFile, OSError, ValueError):
        missing = "the zip directory is missing: truncated or still being written"
        return TorchFacts(truncated=missing)
    except NotImplementedError as exc:  # e.g. a zip version newer than zipfile reads
        return TorchFacts(problem=f"a zip file this reader cannot open ({exc})")
    with archive:
        pickle_name = _data_pkl(archive.namelist())
        if pickle_name is None:
            return TorchFacts(problem="a zip file, but not a torch checkpoint (no data.pkl)")
        facts = TorchFacts(is_torch=True)
        try:
            data = _read_pickle(archive, pickle_name)
        except ZIP_READ_ERRORS as exc:
            facts.truncated = f"data.pkl cannot be read ({exc})"
            return facts
        if data is None:
            facts.problem = f"data.pkl is over {MAX_PICKLE_BYTES:,} bytes; not inspected"
            return facts
        sizes = _storage_sizes(archive, pickle_name.rsplit("/", 1)[0])
    _fill(facts, scan_pickle(data), sizes)
    return facts


def _read_pickle(archive: zipfile.ZipFile, name: str) -> bytes | None:
    """data.pkl decompressed, or None past `MAX_PICKLE_BYTES` (whatever its header claims)."""
    if archive.getinfo(name).file_size > MAX_PICKLE_BYTES:
        return None
    with archive.open(name) as member:
        data = member.read(MAX_PICKLE_BYTES + 1)
    return None if len(data) > MAX_PICKLE_BYTES else data


def _data_pkl(names: list[str]) -> str | None:
    """`<archive>/data.pkl` when the zip has one top folder holding it."""
    for name in names:
        parts = name.split("/")
        if len(parts) == 2 and parts[1] == "data.pkl":
            return name
    return None


def _storage_sizes(archive: zipfile.ZipFile, prefix: str) -> dict[str, int]:
    start = f"{prefix}/data/"
    return {
        info.filename[len(start) :]: info.file_size
        for info in archive.infolist()
        if info.filename.startswith(start)
    }


def _fill(facts: TorchFacts, summary: PickleSummary, sizes: dict[str, int]) -> None:
    facts.unsafe_globals = summary.unsafe_globals
    top = summary.top if summary.readable else None
    if not summary.readable:
        facts.problem = summary.problem
        facts.has_optimizer = bool(OPTIMIZER_KEYS & summary.strings)
        return
    keys = {k for k in top if isinstance(k, str)} if isinstance(top, dict) else set()
    facts.has_optimizer = bool(OPTIMIZER_KEYS & keys) or {"state", "param_groups"} <= keys
    if "pytorch-lightning_version" in keys or ("state_dict" in keys and "epoch" in keys):
        facts.format = "lightning"
    if isinstance(top, dict):
        facts.scalars = _scalars(top)
        facts.step = next((int(top[k]) for k in STEP_KEYS if _is_int(top.get(k))), None)
    every = _storages(top)
    model = next((top[k] for k in MODEL_KEYS if isinstance(top, dict) and k in top), top)
    facts.params = sum(s.numel for s in _storages(model).values())
    for key, storage in every.items():
        size = sizes.get(key)
        if size is None:
            facts.truncated = f"tensor data {key} is missing from the zip"
            continue
        facts.bytes_by_dtype[storage.dtype] = facts.bytes_by_dtype.get(storage.dtype, 0) + size


def _is_int(value: object) -> bool:
    """An int that prints quickly (a pickle can hold one of millions of digits)."""
    return isinstance(value, int) and not isinstance(value, bool) and value.bit_length() <= 64


def _scalars(top: dict[object, object]) -> dict[str, str]:
    """Top-level numbers (epoch, step, best_val_loss...) as strings."""
    found: dict[str, str] = {}
    for key, value in top.items():
        if not isinstance(key, str) or len(key) > 64 or len(found) >= MAX_SCALARS:
            continue
        if _is_int(value) or isinstance(value, float):
            found[key] = str(value)
    return found


def _storages(root: object) -> dict[str, StorageRef]:
    """Every storage reachable from `root` by key (shared storages count once)."""
    found: dict[str, StorageRef] = {}
    seen: set[int] = set()
    stack = [root]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, TensorRef) and item.storage is not None:
            found[item.storage.key] = item.storage
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return found
