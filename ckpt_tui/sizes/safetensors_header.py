"""Read safetensors headers, never tensor data.

Format: 8-byte little-endian header length N, N bytes of UTF-8 JSON
(`{name: {"dtype", "shape", "data_offsets": [start, end]}, "__metadata__": {str: str}}`), then
the tensor data. The checks follow the reference implementation (huggingface/safetensors): N is
at most 100 MB, every tensor's byte length matches dtype x shape, the tensors tile the data region
without gaps or overlaps, and the data region ends exactly at the end of the file.
"""

from __future__ import annotations

import math
import os
import struct
from collections.abc import Iterable
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from ckpt_tui.bounded_json import BadJsonError, parse_json, read_json_file

MAX_HEADER_BYTES = 100_000_000
MAX_DIMS = 32
MAX_ELEMENT_BITS = 64
"""A tensor of 2**64 elements or more cannot be in any file (and would overflow the checks)."""
INDEX_FILE_NAME = "model.safetensors.index.json"

DTYPE_BITS: dict[str, int] = {
    "BOOL": 8,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E4M3FNUZ": 8,
    "F8_E5M2FNUZ": 8,
    "F8_E8M0": 8,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "I64": 64,
    "U64": 64,
    "F64": 64,
    "C64": 64,
}


class SafetensorsHeaderError(ValueError):
    """A file that is not a well-formed safetensors file; `reason` says what is wrong."""

    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = Path(path)
        self.reason = reason


class TensorInfo(msgspec.Struct, frozen=True, gc=False):
    name: str
    dtype: str
    shape: tuple[int, ...]
    start: int
    end: int

    @property
    def param_count(self) -> int:
        return math.prod(self.shape)


class SafetensorsSummary(msgspec.Struct, frozen=True):
    """What the header(s) say: parameters and bytes per dtype; `file_bytes` is on disk."""

    param_count: int
    tensor_bytes: int
    file_bytes: int
    bytes_by_dtype: dict[str, int]
    params_by_dtype: dict[str, int]
    tensor_names: frozenset[str] = frozenset()
    metadata: dict[str, str] = msgspec.field(default_factory=dict)


def _read_exact(stream: BinaryIO, n: int) -> bytes:
    chunks: list[bytes] = []
    remaining = n
    while remaining > 0:
        chunk = stream.read(remaining)
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_header_from(stream: BinaryIO, file_size: int, name: Path | str) -> SafetensorsSummary:
    """Parse the header at the start of `stream`; reads at most 8 + N bytes."""
    prefix = _read_exact(stream, 8)
    if len(prefix) < 8:
        raise SafetensorsHeaderError(name, f"file is {file_size} bytes, too short for a header")
    (n,) = struct.unpack("<Q", prefix)
    if n > MAX_HEADER_BYTES:
        raise SafetensorsHeaderError(name, f"header length {n} is over the 100 MB limit")
    if n > file_size - 8:
        raise SafetensorsHeaderError(
            name, f"header length {n} is more than the file holds ({file_size - 8} bytes)"
        )
    raw = _read_exact(stream, n)
    if len(raw) < n:
        raise SafetensorsHeaderError(name, "file ended inside the header")
    header = _decode_header(raw, name)
    metadata = _metadata(header.pop("__metadata__", None), name)
    tensors = [_tensor(key, value, name) for key, value in header.items()]
    _check_layout(tensors, file_size - 8 - n, name)
    return _summarize(tensors, file_size, metadata)


def _decode_header(raw: bytes, name: Path | str) -> dict[str, Any]:
    try:
        header = parse_json(raw, "header")
    except BadJsonError as exc:
        raise SafetensorsHeaderError(name, str(exc)) from exc
    if not isinstance(header, dict):
        raise SafetensorsHeaderError(name, "header is not a JSON object")
    return header


def _metadata(value: object, name: Path | str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise SafetensorsHeaderError(name, "__metadata__ must map strings to strings")
    return dict(value)


def _is_index(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _tensor(key: str, value: object, name: Path | str) -> TensorInfo:
    if not isinstance(value, dict):
        raise SafetensorsHeaderError(name, f"tensor {key!r}: entry is not an object")
    dtype, shape, offsets = value.get("dtype"), value.get("shape"), value.get("data_offsets")
    if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
        raise SafetensorsHeaderError(name, f"tensor {key!r}: unknown dtype {dtype!r}")
    if not isinstance(shape, list) or not all(_is_index(d) for d in shape):
        raise SafetensorsHeaderError(name, f"tensor {key!r}: shape must be a list of sizes")
    if len(shape) > MAX_DIMS or math.prod(shape).bit_length() > MAX_ELEMENT_BITS:
        raise SafetensorsHeaderError(name, f"tensor {key!r}: shape {shape} is too large")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(map(_is_index, offsets))):
        raise SafetensorsHeaderError(name, f"tensor {key!r}: data_offsets must be [start, end]")
    start, end = offsets
    if end < start:
        raise SafetensorsHeaderError(name, f"tensor {key!r}: data_offsets end before start")
    info = TensorInfo(key, dtype, tuple(shape), start, end)
    bits = info.param_count * DTYPE_BITS[dtype]
    if bits % 8 or bits // 8 != end - start:
        raise SafetensorsHeaderError(
            name,
            f"tensor {key!r}: {dtype} x {list(shape)} needs {bits / 8:g} bytes "
            f"but data_offsets give {end - start}",
        )
    return info


def _check_layout(tensors: list[TensorInfo], data_bytes: int, name: Path | str) -> None:
    """Tensors must tile [0, data_bytes) in offset order: no gap, no overlap, no overrun."""
    position = 0
    for info in sorted(tensors, key=lambda t: (t.start, t.end)):
        if info.start < position:
            raise SafetensorsHeaderError(name, f"tensor {info.name!r} overlaps the one before it")
        if info.start > position:
            raise SafetensorsHeaderError(name, f"gap in tensor data before {info.name!r}")
        position = info.end
    if position > data_bytes:
        raise SafetensorsHeaderError(
            name, f"tensor data ends at byte {position} past the end of the file ({data_bytes})"
        )
    if position < data_bytes:
        raise SafetensorsHeaderError(
            name, f"{data_bytes - position} unexpected bytes after the tensor data"
        )


def _summarize(
    tensors: list[TensorInfo], file_size: int, metadata: dict[str, str]
) -> SafetensorsSummary:
    bytes_by: dict[str, int] = {}
    params_by: dict[str, int] = {}
    for info in tensors:
        bytes_by[info.dtype] = bytes_by.get(info.dtype, 0) + info.end - info.start
        params_by[info.dtype] = params_by.get(info.dtype, 0) + info.param_count
    return SafetensorsSummary(
        param_count=sum(params_by.values()),
        tensor_bytes=sum(bytes_by.values()),
        file_bytes=file_size,
        bytes_by_dtype=bytes_by,
        params_by_dtype=params_by,
        tensor_names=frozenset(t.name for t in tensors),
        metadata=metadata,
    )


def read_safetensors_header(path: Path) -> SafetensorsSummary:
    """The summary of one `.safetensors` file; SafetensorsHeaderError if malformed."""
    with open(path, "rb") as handle:
        return read_header_from(handle, os.fstat(handle.fileno()).st_size, path)


def combine(summaries: Iterable[SafetensorsSummary]) -> SafetensorsSummary:
    """Add shard summaries together."""
    items = list(summaries)
    bytes_by: dict[str, int] = {}
    params_by: dict[str, int] = {}
    for item in items:
        for dtype, n in item.bytes_by_dtype.items():
            bytes_by[dtype] = bytes_by.get(dtype, 0) + n
        for dtype, n in item.params_by_dtype.items():
            params_by[dtype] = params_by.get(dtype, 0) + n
    return SafetensorsSummary(
        param_count=sum(i.param_count for i in items),
        tensor_bytes=sum(i.tensor_bytes for i in items),
        file_bytes=sum(i.file_bytes for i in items),
        bytes_by_dtype=bytes_by,
        params_by_dtype=params_by,
        tensor_names=frozenset().union(*(i.tensor_names for i in items)),
    )


def _shard_map(index_path: Path) -> dict[str, list[str]]:
    """shard file name -> tensor names, from an index's `weight_map`."""
    try:
        index = read_json_file(index_path)
    except (OSError, ValueError) as exc:
        raise SafetensorsHeaderError(index_path, f"cannot read index: {exc}") from exc
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict):
        raise SafetensorsHeaderError(index_path, "index has no weight_map object")
    shards: dict[str, list[str]] = {}
    for tensor, shard in weight_map.items():
        if (
            not isinstance(shard, str)
            or not shard
            or "/" in shard
            or "\\" in shard
            or ".." in shard
        ):
            raise SafetensorsHeaderError(index_path, f"bad shard file name {shard!r}")
        shards.setdefault(shard, []).append(tensor)
    return shards


def read_sharded(index_path: Path) -> SafetensorsSummary:
    """Sum the headers of every shard an index names; each named tensor must be in its shard."""
    summaries = []
    for shard, tensors in sorted(_shard_map(index_path).items()):
        summary = read_safetensors_header(index_path.parent / shard)
        missing = sorted(set(tensors) - summary.tensor_names)
        if missing:
            raise SafetensorsHeaderError(
                index_path, f"shard {shard} does not hold {missing[0]!r} named in weight_map"
            )
        summaries.append(summary)
    return combine(summaries)


def summarize_folder(folder: Path) -> SafetensorsSummary:
    """A model folder: through its index if it has one, else every `*.safetensors` in it."""
    index = folder / INDEX_FILE_NAME
    if index.is_file():
        return read_sharded(index)
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise SafetensorsHeaderError(folder, "no .safetensors files in this folder")
    return combine(read_safetensors_header(f) for f in files)
