"""Checkpoint sizes: exact, estimated or unknown; safetensors headers; LoRA estimates; totals."""

from __future__ import annotations

from ckpt_tui.sizes.estimate import (
    LoraTargets,
    ModelDims,
    ParamTable,
    calibrated_bytes_per_param,
    calibrated_estimate,
    checkpoint_param_count,
    estimate_checkpoint_size,
    load_param_table,
    lora_param_count,
)
from ckpt_tui.sizes.safetensors_header import (
    MAX_HEADER_BYTES,
    SafetensorsHeaderError,
    SafetensorsSummary,
    read_header_from,
    read_safetensors_header,
    read_sharded,
    summarize_folder,
)
from ckpt_tui.sizes.size import (
    Size,
    SizeKind,
    SizeTotal,
    format_bytes,
    format_size,
    format_total,
    sum_totals,
    total,
    totals_by,
)

__all__ = [
    "MAX_HEADER_BYTES",
    "LoraTargets",
    "ModelDims",
    "ParamTable",
    "SafetensorsHeaderError",
    "SafetensorsSummary",
    "Size",
    "SizeKind",
    "SizeTotal",
    "calibrated_bytes_per_param",
    "calibrated_estimate",
    "checkpoint_param_count",
    "estimate_checkpoint_size",
    "format_bytes",
    "format_size",
    "format_total",
    "load_param_table",
    "lora_param_count",
    "read_header_from",
    "read_safetensors_header",
    "read_sharded",
    "sum_totals",
    "summarize_folder",
    "total",
    "totals_by",
]
