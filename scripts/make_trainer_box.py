"""Write tests/fixtures/trainer_box/: a training box's folder, written by the real libraries.

    python -m venv /tmp/hf && /tmp/hf/bin/pip install torch transformers peft accelerate
    /tmp/hf/bin/python scripts/make_trainer_box.py [OUT]

The tests read the files this writes and never import these libraries (they are not test
dependencies: torch alone is hundreds of MiB). What it writes, with a tiny Llama (~10 KiB):

- `models/tiny-llama/`: `save_pretrained`. Its config.json names no `_name_or_path`
  (transformers 5 no longer writes it), only `model_type` and `architectures`.
- `trainer-out/checkpoint-{5,10}/`: `Trainer` saving and evaluating every 5 steps over 4 steps
  per epoch, so epochs are 1.25 and 2.5. The best model is chosen by eval_loss with
  `greater_is_better=True`, which makes the first save the best one (deterministically) while
  the last is the resume point.
- `adapters/tiny-lora/`: a PEFT LoRA adapter (r=4) on models/tiny-llama; its
  adapter_config.json names `base_model_name_or_path`.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

# Not dependencies of ckpt-tui or its tests: only this script needs them.
import torch  # type: ignore[import-not-found]
from peft import LoraConfig, get_peft_model  # type: ignore[import-not-found]
from transformers import (  # type: ignore[import-not-found]
    LlamaConfig,
    LlamaForCausalLM,
    Trainer,
    TrainingArguments,
)

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "trainer_box"
SAMPLES, BATCH = 8, 2  # 4 steps per epoch


def tiny_llama() -> LlamaForCausalLM:
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=64,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=32,
    )
    return LlamaForCausalLM(config)


def dataset() -> list[dict[str, torch.Tensor]]:
    generator = torch.Generator().manual_seed(0)
    rows = []
    for _ in range(SAMPLES):
        ids = torch.randint(0, 64, (8,), generator=generator)
        rows.append({"input_ids": ids, "attention_mask": torch.ones(8, dtype=torch.long)})
        rows[-1]["labels"] = ids.clone()
    return rows


def train(model: LlamaForCausalLM, out: str) -> None:
    args = TrainingArguments(
        output_dir=out,
        per_device_train_batch_size=BATCH,
        per_device_eval_batch_size=BATCH,
        max_steps=10,
        save_steps=5,
        eval_steps=5,
        eval_strategy="steps",
        save_strategy="steps",
        logging_steps=5,
        metric_for_best_model="eval_loss",
        greater_is_better=True,
        report_to=[],
        use_cpu=True,
        seed=0,
    )
    data = dataset()
    Trainer(model=model, args=args, train_dataset=data, eval_dataset=data[:4]).train()


def main(out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    os.chdir(out)  # every path the libraries record is relative to the box's folder
    base = tiny_llama()
    base.save_pretrained("models/tiny-llama")
    train(LlamaForCausalLM.from_pretrained("models/tiny-llama"), "trainer-out")
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"])
    adapter = get_peft_model(LlamaForCausalLM.from_pretrained("models/tiny-llama"), lora)
    adapter.save_pretrained("adapters/tiny-lora")
    for state in sorted(Path("trainer-out").glob("checkpoint-*/trainer_state.json")):
        data = json.loads(state.read_text())
        print(state.parent.name, "epoch", data["epoch"], "best", data["best_model_checkpoint"])


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else DEFAULT_OUT)
