"""Checkpoint size estimates from the model, the LoRA rank and what LoRA trains.

Per-rank LoRA parameter counts are computed the way tinker-cookbook's
`hyperparam_utils.get_lora_param_count` computes them (rows + cols of every adapted matrix; MoE
experts share their outer dimension), from model dimensions kept in `ckpt_tui/data/lora_params.json`
with their sources. Byte sizes use the dtype assumptions stated in that file; when checkpoints of
the same kind have measured sizes, `calibrated_bytes_per_param` replaces the assumption.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any

import msgspec

from ckpt_tui.api_types import CheckpointType, WeightsInfo
from ckpt_tui.sizes.size import Size


class ModelDims(msgspec.Struct, frozen=True, gc=False):
    """The dimensions that fix a decoder's parameter counts (a Hugging Face config's names)."""

    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_size: int
    tie_word_embeddings: bool
    qk_norm: bool = False
    intermediate_size: int | None = None
    num_experts: int | None = None
    moe_intermediate_size: int | None = None

    @property
    def is_moe(self) -> bool:
        return self.num_experts is not None

    def lora_dim_sums(self) -> dict[str, int]:
        """rows + cols summed per LoRA target group (attn, mlp, unembed), as the cookbook sums."""
        h, q_width, kv_width = self.hidden_size, self.q_width, self.kv_width
        attn = (h + q_width) + 2 * (h + kv_width) + (q_width + h)
        if self.is_moe:
            assert self.num_experts is not None and self.moe_intermediate_size is not None
            # gate/up/down per expert: the intermediate dim; the hidden dim once (shared outer).
            mlp = 3 * self.moe_intermediate_size * self.num_experts + 3 * h
        else:
            assert self.intermediate_size is not None
            mlp = 3 * (h + self.intermediate_size)
        unembed = 0 if self.tie_word_embeddings else h + self.vocab_size
        layers = self.num_hidden_layers
        return {"attn": attn * layers, "mlp": mlp * layers, "unembed": unembed}

    @property
    def q_width(self) -> int:
        return self.num_attention_heads * self.head_dim

    @property
    def kv_width(self) -> int:
        return self.num_key_value_heads * self.head_dim

    def total_params(self) -> int:
        """All parameters: embeddings, attention, MLP or experts and router, norms, lm_head."""
        h = self.hidden_size
        attn = h * self.q_width * 2 + h * self.kv_width * 2
        norms = 2 * h + (2 * self.head_dim if self.qk_norm else 0)
        if self.is_moe:
            assert self.num_experts is not None and self.moe_intermediate_size is not None
            mlp = self.num_experts * (3 * h * self.moe_intermediate_size + h)
        else:
            assert self.intermediate_size is not None
            mlp = 3 * h * self.intermediate_size
        embed = self.vocab_size * h
        lm_head = 0 if self.tie_word_embeddings else embed
        return embed + self.num_hidden_layers * (attn + mlp + norms) + h + lm_head


class Assumptions(msgspec.Struct, frozen=True, gc=False):
    lora_weight_bytes: int
    adam_moment_bytes: int
    adam_moments: int
    full_sampler_weight_bytes: int
    full_state_weight_bytes: int


class ParamTable(msgspec.Struct, frozen=True):
    """The contents of `lora_params.json`."""

    models: dict[str, ModelDims]
    assumptions: Assumptions
    source: dict[str, Any]


@cache
def load_param_table() -> ParamTable:
    """The packaged table (read once)."""
    text = resources.files("ckpt_tui").joinpath("data/lora_params.json").read_text("utf-8")
    data = json.loads(text)
    assumptions = {k: v for k, v in data["assumptions"].items() if k != "note"}
    return ParamTable(
        models={name: ModelDims(**dims) for name, dims in data["models"].items()},
        assumptions=Assumptions(**assumptions),
        source=data["source"],
    )


class LoraTargets(msgspec.Struct, frozen=True, gc=False):
    """Which parts LoRA adapts (tinker's LoraConfig flags; all default to True)."""

    attn: bool = True
    mlp: bool = True
    unembed: bool = True

    @classmethod
    def of(cls, info: WeightsInfo) -> LoraTargets:
        def flag(value: bool | None) -> bool:
            return True if value is None else value

        return cls(flag(info.train_attn), flag(info.train_mlp), flag(info.train_unembed))

    def label(self) -> str:
        chosen = [name for name in ("attn", "mlp", "unembed") if getattr(self, name)]
        return "+".join(chosen) if chosen else "nothing"


EVERY_TARGET = LoraTargets()
"""LoRA on attention, MLP and unembedding: tinker's default."""


def lora_param_count(dims: ModelDims, rank: int, targets: LoraTargets = EVERY_TARGET) -> int:
    """LoRA adapter parameters at `rank` for the chosen targets."""
    if rank <= 0:
        raise ValueError(f"LoRA rank must be positive, got {rank}")
    sums = dims.lora_dim_sums()
    return rank * sum(
        sums[group] for group in ("attn", "mlp", "unembed") if getattr(targets, group)
    )


def bytes_per_param(table: ParamTable, is_lora: bool, kind: CheckpointType) -> int:
    """Assumed bytes per parameter of a checkpoint kind (training state adds Adam moments)."""
    a = table.assumptions
    moments = a.adam_moments * a.adam_moment_bytes
    if is_lora:
        return a.lora_weight_bytes + (moments if kind == "training" else 0)
    if kind == "training":
        return a.full_state_weight_bytes + moments
    return a.full_sampler_weight_bytes


def _dtype_words(table: ParamTable, is_lora: bool, kind: CheckpointType) -> str:
    a = table.assumptions
    if is_lora:
        weight_bytes = a.lora_weight_bytes
    else:
        weight_bytes = (
            a.full_state_weight_bytes if kind == "training" else a.full_sampler_weight_bytes
        )
    weights = f"{'bf' if weight_bytes == 2 else 'fp'}{8 * weight_bytes} weights"
    return f"{weights} + {a.adam_moments} Adam moments" if kind == "training" else weights


def estimate_checkpoint_size(
    info: WeightsInfo, kind: CheckpointType, table: ParamTable | None = None
) -> Size:
    """An estimate for one checkpoint from its weights info; unknown if the model is not known."""
    table = table or load_param_table()
    dims = table.models.get(info.base_model)
    if dims is None:
        return Size.unknown(f"no parameter data for {info.base_model}")
    if kind == "external":
        return Size.unknown("external checkpoints have no known layout")
    if info.is_lora:
        if info.lora_rank is None:
            return Size.unknown("LoRA rank not known")
        targets = LoraTargets.of(info)
        params = lora_param_count(dims, info.lora_rank, targets)
        what = f"LoRA rank {info.lora_rank} on {info.base_model}, {targets.label()}"
    else:
        params = dims.total_params()
        what = f"full fine-tune of {info.base_model} ({params / 1e9:.2f}B params)"
    per_param = bytes_per_param(table, info.is_lora, kind)
    return Size.estimate(params * per_param, f"{what}, {_dtype_words(table, info.is_lora, kind)}")


def calibrated_bytes_per_param(exact_sizes: Sequence[int], param_count: int) -> float | None:
    """Measured bytes per parameter from checkpoints of one run and kind (median); None if none."""
    if param_count <= 0 or not exact_sizes:
        return None
    import statistics  # here: 3 ms of every start (fractions, decimal), for estimates only

    return statistics.median(exact_sizes) / param_count


def calibrated_estimate(param_count: int, measured_bytes_per_param: float, basis: str) -> Size:
    """An estimate that uses measured bytes per parameter instead of the dtype assumption."""
    n = round(param_count * measured_bytes_per_param)
    return Size.estimate(n, f"{basis}, {measured_bytes_per_param:.2f} bytes/param measured")


def checkpoint_param_count(info: WeightsInfo, table: ParamTable | None = None) -> int | None:
    """Parameters a checkpoint of this run stores (LoRA adapter or whole model); None if unknown."""
    table = table or load_param_table()
    dims = table.models.get(info.base_model)
    if dims is None:
        return None
    if not info.is_lora:
        return dims.total_params()
    if info.lora_rank is None or info.lora_rank <= 0:
        return None
    return lora_param_count(dims, info.lora_rank, LoraTargets.of(info))
