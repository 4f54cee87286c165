"""Shapes of the demo's base models, so demo checkpoints hold tensors their sizes imply.

Dimensions are those of each model's published Hugging Face `config.json`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ckpt_tui.demo.safetensors_writer import TensorSpec


@dataclass(frozen=True)
class ModelShape:
    """The dimensions of a dense decoder-only transformer."""

    name: str
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    tied_embeddings: bool

    def projections(self) -> dict[str, tuple[int, int]]:
        """(in, out) features of each linear layer in one block, by module path."""
        q_out, kv_out = self.heads * self.head_dim, self.kv_heads * self.head_dim
        return {
            "self_attn.q_proj": (self.hidden, q_out),
            "self_attn.k_proj": (self.hidden, kv_out),
            "self_attn.v_proj": (self.hidden, kv_out),
            "self_attn.o_proj": (q_out, self.hidden),
            "mlp.gate_proj": (self.hidden, self.intermediate),
            "mlp.up_proj": (self.hidden, self.intermediate),
            "mlp.down_proj": (self.intermediate, self.hidden),
        }


MODELS = {
    shape.name: shape
    for shape in (
        ModelShape("meta-llama/Llama-3.1-8B", 4096, 14336, 32, 32, 8, 128, 128256, False),
        ModelShape("meta-llama/Llama-3.1-70B", 8192, 28672, 80, 64, 8, 128, 128256, False),
        ModelShape("meta-llama/Llama-3.2-1B", 2048, 8192, 16, 32, 8, 64, 128256, True),
        ModelShape("meta-llama/Llama-3.2-3B", 3072, 8192, 28, 24, 8, 128, 128256, True),
        ModelShape("Qwen/Qwen3-8B", 4096, 12288, 36, 32, 8, 128, 151936, False),
        ModelShape("Qwen/Qwen3-4B-Instruct-2507", 2560, 9728, 36, 32, 8, 128, 151936, True),
    )
}


def lora_tensors(model: ModelShape, rank: int, dtype: str = "F32") -> Iterator[TensorSpec]:
    """A PEFT-style adapter on every attention and MLP projection, plus the unembedding."""
    for layer in range(model.layers):
        for module, (fan_in, fan_out) in model.projections().items():
            prefix = f"base_model.model.model.layers.{layer}.{module}"
            yield TensorSpec(f"{prefix}.lora_A.weight", dtype, (rank, fan_in))
            yield TensorSpec(f"{prefix}.lora_B.weight", dtype, (fan_out, rank))
    yield TensorSpec("base_model.model.lm_head.lora_A.weight", dtype, (rank, model.hidden))
    yield TensorSpec("base_model.model.lm_head.lora_B.weight", dtype, (model.vocab, rank))


def full_tensors(model: ModelShape, dtype: str) -> Iterator[TensorSpec]:
    """Every weight of the model, as `save_pretrained` names them."""
    yield TensorSpec("model.embed_tokens.weight", dtype, (model.vocab, model.hidden))
    for layer in range(model.layers):
        prefix = f"model.layers.{layer}"
        for module, (fan_in, fan_out) in model.projections().items():
            yield TensorSpec(f"{prefix}.{module}.weight", dtype, (fan_out, fan_in))
        yield TensorSpec(f"{prefix}.input_layernorm.weight", dtype, (model.hidden,))
        yield TensorSpec(f"{prefix}.post_attention_layernorm.weight", dtype, (model.hidden,))
    yield TensorSpec("model.norm.weight", dtype, (model.hidden,))
    if not model.tied_embeddings:
        yield TensorSpec("lm_head.weight", dtype, (model.vocab, model.hidden))


def adam_moments(tensors: list[TensorSpec]) -> Iterator[TensorSpec]:
    """Adam's two fp32 moments for each trained tensor."""
    for tensor in tensors:
        yield TensorSpec(f"{tensor.name}.exp_avg", "F32", tensor.shape)
        yield TensorSpec(f"{tensor.name}.exp_avg_sq", "F32", tensor.shape)
