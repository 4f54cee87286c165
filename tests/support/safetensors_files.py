"""Real safetensors files, written with the safetensors package (zeros as data)."""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import safetensors

TORCH_NAMES = {
    "F32": "float32",
    "BF16": "bfloat16",
    "I64": "int64",
    "F16": "float16",
    "U8": "uint8",
}
ITEM_BYTES = {"F32": 4, "BF16": 2, "I64": 8, "F16": 2, "U8": 1}


def write_real(path: Path, tensors: dict[str, tuple[str, list[int]]]) -> Path:
    """Write a real file with the safetensors package (zeros as data)."""
    buffers = []
    specs: dict[str, Any] = {}
    for name, (dtype, shape) in tensors.items():
        size = ITEM_BYTES[dtype]
        for dim in shape:
            size *= dim
        buffer = ctypes.create_string_buffer(max(size, 1))
        buffers.append(buffer)
        if hasattr(safetensors, "TensorSpec"):  # safetensors >= 0.8
            specs[name] = safetensors.TensorSpec(
                dtype=TORCH_NAMES[dtype],
                shape=shape,
                data_ptr=ctypes.addressof(buffer),
                data_len=size,
            )
        else:
            specs[name] = {"dtype": TORCH_NAMES[dtype], "shape": shape, "data": buffer.raw[:size]}
    safetensors.serialize_file(specs, str(path))
    return path
