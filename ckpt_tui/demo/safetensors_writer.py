"""Write real safetensors files whose tensor data is a hole.

The header is exact (names, dtypes, shapes, offsets), and the file is extended to its full length
with `truncate`, so a "12 GiB" checkpoint uses almost no disk on file systems with sparse files.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import msgspec

DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I8": 1, "U8": 1}


@dataclass(frozen=True)
class TensorSpec:
    """One tensor's name, dtype and shape."""

    name: str
    dtype: str
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        count = 1
        for dim in self.shape:
            count *= dim
        return count * DTYPE_BYTES[self.dtype]


def build_header(tensors: Iterable[TensorSpec], metadata: dict[str, str]) -> tuple[bytes, int]:
    """The padded header bytes (with their 8-byte length prefix) and the data length."""
    entries: dict[str, object] = {"__metadata__": metadata}
    offset = 0
    for tensor in tensors:
        end = offset + tensor.nbytes
        entries[tensor.name] = {
            "dtype": tensor.dtype,
            "shape": list(tensor.shape),
            "data_offsets": [offset, end],
        }
        offset = end
    # msgspec, not json.dumps: the demo's build (which `ckpt-tui demo` waits for before its
    # first frame) took 0.21 s against 0.33-0.37 s (7 builds each, run turn about).
    header = msgspec.json.encode(entries)
    header += b" " * (-len(header) % 8)  # the format aligns tensor data to 8 bytes
    return len(header).to_bytes(8, "little") + header, offset


def write_sparse_safetensors(
    path: Path, tensors: Iterable[TensorSpec], metadata: dict[str, str] | None = None
) -> int:
    """Write a safetensors file with zeroed (sparse) data; return its length in bytes."""
    fields = tuple(sorted((metadata or {"format": "pt"}).items()))
    header, data_length = shared_header(tuple(tensors), fields)
    with path.open("wb") as handle:
        handle.write(header)
        handle.truncate(len(header) + data_length)
    return len(header) + data_length


@lru_cache(maxsize=32)
def shared_header(
    tensors: tuple[TensorSpec, ...], metadata: tuple[tuple[str, str], ...]
) -> tuple[bytes, int]:
    """`build_header`, once per model shape: the demo writes the same few headers ~80 times.
    With json.dumps that was most of a build (median of 5 at load 7: 0.60 → 0.21 s); with
    msgspec it still pays, 0.21/0.20 → 0.18/0.14 s (two turns of 7 builds, load 2-5). Every
    TUI test and `ckpt-tui demo` builds one."""
    return build_header(tensors, dict(metadata))
