"""Size kinds, totals and formatting; LoRA and full estimates checked against real files."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from msgspec.structs import replace

from ckpt_tui.api_types import WeightsInfo
from ckpt_tui.sizes import (
    LoraTargets,
    ModelDims,
    ParamTable,
    Size,
    calibrated_bytes_per_param,
    calibrated_estimate,
    checkpoint_param_count,
    estimate_checkpoint_size,
    format_size,
    format_total,
    load_param_table,
    lora_param_count,
    read_safetensors_header,
    total,
    totals_by,
)
from tests.support.safetensors_files import write_real

GIB = 2**30
TINY_DENSE = ModelDims(
    hidden_size=16,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=4,
    vocab_size=50,
    tie_word_embeddings=False,
    qk_norm=True,
    intermediate_size=24,
)
TINY_MOE = replace(
    TINY_DENSE, intermediate_size=None, num_experts=3, moe_intermediate_size=8, qk_norm=False
)


def hf_shapes(dims: ModelDims) -> dict[str, list[int]]:
    """The tensor names and shapes a Hugging Face checkpoint of `dims` holds."""
    h, q, kv = dims.hidden_size, dims.q_width, dims.kv_width
    shapes: dict[str, list[int]] = {"model.embed_tokens.weight": [dims.vocab_size, h]}
    for i in range(dims.num_hidden_layers):
        p = f"model.layers.{i}"
        shapes |= {
            f"{p}.self_attn.q_proj.weight": [q, h],
            f"{p}.self_attn.k_proj.weight": [kv, h],
            f"{p}.self_attn.v_proj.weight": [kv, h],
            f"{p}.self_attn.o_proj.weight": [h, q],
            f"{p}.input_layernorm.weight": [h],
            f"{p}.post_attention_layernorm.weight": [h],
        }
        if dims.qk_norm:
            shapes |= {f"{p}.self_attn.q_norm.weight": [dims.head_dim]}
            shapes |= {f"{p}.self_attn.k_norm.weight": [dims.head_dim]}
        shapes |= _mlp_shapes(dims, p)
    shapes["model.norm.weight"] = [h]
    if not dims.tie_word_embeddings:
        shapes["lm_head.weight"] = [dims.vocab_size, h]
    return shapes


def _mlp_shapes(dims: ModelDims, p: str) -> dict[str, list[int]]:
    h = dims.hidden_size
    if dims.num_experts is None:
        inner = dims.intermediate_size or 0
        return {
            f"{p}.mlp.gate_proj.weight": [inner, h],
            f"{p}.mlp.up_proj.weight": [inner, h],
            f"{p}.mlp.down_proj.weight": [h, inner],
        }
    inner = dims.moe_intermediate_size or 0
    shapes = {f"{p}.mlp.gate.weight": [dims.num_experts, h]}
    for e in range(dims.num_experts):
        shapes[f"{p}.mlp.experts.{e}.gate_proj.weight"] = [inner, h]
        shapes[f"{p}.mlp.experts.{e}.up_proj.weight"] = [inner, h]
        shapes[f"{p}.mlp.experts.{e}.down_proj.weight"] = [h, inner]
    return shapes


def cookbook_lora_count(shapes: dict[str, list[int]], rank: int) -> int:
    """tinker-cookbook's get_lora_param_count (shared_expert_outer_loras=True), restated."""
    dim_sum = dim_sum_experts = 0
    ignore = ["gate", "embed_tokens", "q_b_proj", "kv_b_proj"]
    for name, shape in shapes.items():
        parts = name.split(".")
        if len(shape) != 2 or not name.endswith(".weight") or any(v in parts for v in ignore):
            continue
        if "experts" not in parts:
            dim_sum += shape[0] + shape[1]
            continue
        expert = int(parts[parts.index("experts") + 1])
        weight = parts[parts.index("experts") + 2]
        dim_sum_experts += shape[1] if weight == "down_proj" else shape[0]
        if expert == 0:
            dim_sum_experts += shape[0] if weight == "down_proj" else shape[1]
    return rank * (dim_sum + dim_sum_experts)


@pytest.mark.parametrize(
    "dims", [TINY_DENSE, TINY_MOE, replace(TINY_DENSE, tie_word_embeddings=True)]
)
@pytest.mark.parametrize("rank", [1, 8, 32])
def test_lora_count_matches_the_cookbook_method(dims: ModelDims, rank: int) -> None:
    assert lora_param_count(dims, rank) == cookbook_lora_count(hf_shapes(dims), rank)


@pytest.mark.parametrize("dims", [TINY_DENSE, TINY_MOE])
def test_total_params_match_a_real_model_file(tmp_path: Path, dims: ModelDims) -> None:
    tensors = {name: ("BF16", shape) for name, shape in hf_shapes(dims).items()}
    summary = read_safetensors_header(write_real(tmp_path / "model.safetensors", tensors))
    assert summary.param_count == dims.total_params()


def adapter_tensors(
    dims: ModelDims, rank: int, targets: LoraTargets
) -> dict[str, tuple[str, list[int]]]:
    """An fp32 LoRA adapter (A: rank x in, B: out x rank) for every adapted dense matrix."""
    tensors: dict[str, tuple[str, list[int]]] = {}
    for name, shape in hf_shapes(dims).items():
        group = "attn" if "self_attn" in name else "mlp" if ".mlp." in name else "unembed"
        if len(shape) != 2 or "embed_tokens" in name or not getattr(targets, group):
            continue
        stem = name.removesuffix(".weight")
        tensors[f"{stem}.lora_A.weight"] = ("F32", [rank, shape[1]])
        tensors[f"{stem}.lora_B.weight"] = ("F32", [shape[0], rank])
    return tensors


def tiny_table(dims: ModelDims) -> ParamTable:
    real = load_param_table()
    return ParamTable(models={"tiny/model": dims}, assumptions=real.assumptions, source={})


@pytest.mark.parametrize(
    "targets", [LoraTargets(), LoraTargets(mlp=False), LoraTargets(attn=False, unembed=False)]
)
def test_sampler_estimate_equals_a_real_adapter_file(tmp_path: Path, targets: LoraTargets) -> None:
    path = write_real(tmp_path / "adapter.safetensors", adapter_tensors(TINY_DENSE, 4, targets))
    measured = read_safetensors_header(path).tensor_bytes
    info = WeightsInfo(
        "tiny/model",
        True,
        4,
        train_mlp=targets.mlp,
        train_attn=targets.attn,
        train_unembed=targets.unembed,
    )
    size = estimate_checkpoint_size(info, "sampler", tiny_table(TINY_DENSE))
    assert size.kind == "estimate" and size.bytes == measured
    state = estimate_checkpoint_size(info, "training", tiny_table(TINY_DENSE))
    assert state.bytes == 3 * measured
    assert "2 Adam moments" in state.basis and targets.label() in state.basis


def test_basis_text_for_a_known_model() -> None:
    size = estimate_checkpoint_size(WeightsInfo("Qwen/Qwen3-8B", True, 32), "training")
    assert size.basis == (
        "LoRA rank 32 on Qwen/Qwen3-8B, attn+mlp+unembed, fp32 weights + 2 Adam moments"
    )
    assert size.bytes == 12 * lora_param_count(load_param_table().models["Qwen/Qwen3-8B"], 32)


def test_known_models_have_their_published_sizes() -> None:
    models = load_param_table().models
    published_billions = {
        "meta-llama/Llama-3.2-1B": 1.24,
        "meta-llama/Llama-3.2-3B": 3.21,
        "meta-llama/Llama-3.1-8B": 8.03,
        "meta-llama/Llama-3.1-70B": 70.55,
        "Qwen/Qwen3-4B-Instruct-2507": 4.02,
        "Qwen/Qwen3-8B": 8.19,
        "Qwen/Qwen3-32B": 32.76,
        "Qwen/Qwen3-30B-A3B": 30.53,
        "Qwen/Qwen3-235B-A22B-Instruct-2507": 235.09,
    }
    for name, billions in published_billions.items():
        assert math.isclose(models[name].total_params() / 1e9, billions, abs_tol=0.01), name


def test_table_names_its_source() -> None:
    source = load_param_table().source["counting_method"]
    assert source["repo"] == "thinking-machines-lab/tinker-cookbook"
    assert source["path"] == "tinker_cookbook/hyperparam_utils.py"
    assert len(source["commit"]) == 40


def test_full_fine_tune_estimate() -> None:
    dims = load_param_table().models["meta-llama/Llama-3.1-8B"]
    sampler = estimate_checkpoint_size(WeightsInfo("meta-llama/Llama-3.1-8B", False), "sampler")
    assert sampler.bytes == 2 * dims.total_params() and "bf16 weights" in sampler.basis
    state = estimate_checkpoint_size(WeightsInfo("meta-llama/Llama-3.1-8B", False), "training")
    assert state.bytes == 12 * dims.total_params()


def test_unknown_inputs_give_unknown_sizes() -> None:
    assert (
        estimate_checkpoint_size(WeightsInfo("nobody/model", True, 8), "sampler").kind == "unknown"
    )
    assert (
        estimate_checkpoint_size(WeightsInfo("Qwen/Qwen3-8B", True, None), "sampler").bytes is None
    )
    assert estimate_checkpoint_size(WeightsInfo("Qwen/Qwen3-8B", True, 8), "external").bytes is None
    assert checkpoint_param_count(WeightsInfo("nobody/model", True, 8)) is None
    with pytest.raises(ValueError, match="rank"):
        lora_param_count(TINY_DENSE, 0)


def test_calibration_uses_measured_bytes() -> None:
    params = 1_000_000
    per_param = calibrated_bytes_per_param([12_000_000, 12_400_000, 30_000_000], params)
    assert per_param == 12.4
    size = calibrated_estimate(2 * params, per_param, "LoRA rank 8 on x")
    assert size.bytes == 24_800_000 and "12.40 bytes/param measured" in size.basis
    assert calibrated_bytes_per_param([], params) is None
    assert calibrated_bytes_per_param([5], 0) is None


def test_format_size() -> None:
    assert format_size(Size.exact(int(12.4 * GIB))) == "12.4 GiB"
    assert format_size(Size.estimate(1536, "guess")) == "≈ 1.5 KiB"
    assert format_size(Size.unknown("why")) == "?"
    with pytest.raises(ValueError):
        Size.exact(-1)


def test_totals() -> None:
    exact = total([Size.exact(GIB), Size.exact(GIB)])
    assert exact.is_exact and format_total(exact) == "2.0 GiB"
    mixed = total([Size.exact(GIB), Size.estimate(GIB, "b")])
    assert not mixed.is_exact and format_total(mixed) == "≈ 2.0 GiB"
    partial = total([Size.exact(GIB), Size.unknown()])
    assert partial.is_at_least and format_total(partial) == "at least 1.0 GiB"
    both = total([Size.estimate(GIB, "b"), Size.unknown()])
    assert format_total(both) == "at least ≈ 1.0 GiB"
    assert format_total(total([Size.unknown(), Size.unknown()])) == "?"
    assert format_total(total([])) == "0 Bytes"


def test_totals_per_run() -> None:
    by_run = totals_by(
        [("run-a", Size.exact(10)), ("run-b", Size.unknown()), ("run-a", Size.estimate(5, "b"))]
    )
    assert list(by_run) == ["run-a", "run-b"]
    assert by_run["run-a"].bytes == 15 and by_run["run-a"].estimate_count == 1
    assert by_run["run-b"].is_all_unknown
