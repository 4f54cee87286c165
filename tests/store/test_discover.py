"""Discovered layouts through the Store: HF Trainer, PEFT, save_pretrained, torch.save files,
Lightning, DeepSpeed, DCP and Accelerate; facts, flags, sizes and stable ids."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support import layouts as L


def disk_bytes(path: Path) -> int:
    """On-disk bytes counted independently of the store (regular files, no links)."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def meta(store: Store, run_id: str) -> dict[str, dict[str, str]]:
    return {c.checkpoint_id: c.user_metadata or {} for c in store.list_run_checkpoints(run_id)}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "store"


def test_hf_trainer_output(root: Path, clock: FixedClock) -> None:
    L.hf_trainer_output(root / "out", steps=(100, 200), best=100)
    with Store.open(root, clock, settle_seconds=0) as store:
        facts = meta(store, "out")
        ckpts = {c.checkpoint_id: c for c in store.list_run_checkpoints("out")}
        run = store.get_run("out")
    assert sorted(facts) == ["weights/checkpoint-100", "weights/checkpoint-200"]
    first, second = facts["weights/checkpoint-100"], facts["weights/checkpoint-200"]
    assert (first["step"], first["epoch"], first["eval_loss"]) == ("100", "1", "1")
    assert second["eval_loss"] == "1.1" and "eval_runtime" not in second
    assert first["best"] == "true" and "best" not in second
    assert second["resume_point"] == "true" and "resume_point" not in first
    assert (first["format"], first["has_optimizer"], first["params"]) == (
        "hf-trainer",
        "true",
        "36",
    )
    assert json.loads(first["bytes_per_dtype"]) == {"BF16": 64, "F32": 16}
    assert ckpts["weights/checkpoint-100"].size_bytes == disk_bytes(root / "out/checkpoint-100")
    assert run.base_model == "Qwen/Qwen3-0.6B" and not run.is_lora
    assert run.user_metadata == {"format": "hf-trainer", "path": "out"}


def test_hf_incomplete_checkpoints_are_flagged(root: Path, clock: FixedClock) -> None:
    L.hf_trainer_output(root / "out", steps=(100, 200, 300))
    (root / "out/checkpoint-300/trainer_state.json").unlink()
    (root / "out/checkpoint-200").rename(root / "out/tmp-checkpoint-200")
    with Store.open(root, clock, settle_seconds=0) as store:
        facts = meta(store, "out")
    assert "no readable trainer_state.json" in facts["weights/checkpoint-300"]["incomplete_reason"]
    assert facts["weights/tmp-checkpoint-200"]["incomplete"] == "true"
    assert facts["weights/checkpoint-100"]["resume_point"] == "true"  # newest complete one
    assert "resume_point" not in facts["weights/checkpoint-300"]


def test_sampler_only_trainer_checkpoint(root: Path, clock: FixedClock) -> None:
    L.hf_trainer_output(root / "out", steps=(100,))
    (root / "out/checkpoint-100/optimizer.pt").unlink()
    with Store.open(root, clock, settle_seconds=0) as store:
        ids = [c.checkpoint_id for c in store.list_run_checkpoints("out")]
    assert ids == ["weights/checkpoint-100"]


def test_peft_and_sharded_pretrained(root: Path, clock: FixedClock) -> None:
    L.peft_adapter(root / "adapters/lora-a", rank=16)
    L.sharded_pretrained(root / "models/gpt2-ft")
    L.sharded_pretrained(root / "models/broken")
    (root / "models/broken/model-00002-of-00002.safetensors").unlink()
    with Store.open(root, clock, settle_seconds=0) as store:
        adapter = meta(store, "adapters")["sampler_weights/lora-a"]
        run = store.get_run("adapters")
        models = meta(store, "models")
    assert (adapter["lora_rank"], adapter["lora_alpha"], adapter["format"]) == ("16", "32", "peft")
    assert (run.base_model, run.is_lora, run.lora_rank) == ("meta-llama/Llama-3.2-1B", True, 16)
    full = models["sampler_weights/gpt2-ft"]
    assert full["params"] == "16" and json.loads(full["bytes_per_dtype"]) == {"F32": 40, "BF16": 12}
    assert "missing" in models["sampler_weights/broken"]["incomplete_reason"]


def test_torch_save_and_lightning_files(root: Path, clock: FixedClock) -> None:
    L.full_torch_checkpoint(root / "exp/checkpoint.pt", step=500)
    L.write(root / "exp/model.pt", L.torch_zip(L.model_state(3, "BF16")))
    L.lightning_ckpt(root / "logs/epoch=3-step=1200.ckpt")
    with Store.open(root, clock, settle_seconds=0) as store:
        exp, logs = meta(store, "exp"), meta(store, "logs")
        size = store.get_checkpoint("exp", "weights/checkpoint.pt").size_bytes
    full = exp["weights/checkpoint.pt"]
    assert (full["step"], full["epoch"], full["best_val_loss"]) == ("500", "5", "0.25")
    assert full["params"] == "32" and full["resume_point"] == "true"
    assert json.loads(full["bytes_per_dtype"]) == {"F32": 2 * 64 + 2 * 64 + 2 * 4}
    assert size == (root / "exp/checkpoint.pt").stat().st_size
    model = exp["sampler_weights/model.pt"]  # weights alone (a state_dict)
    assert model["has_optimizer"] == "false" and model["bytes_per_dtype"] == '{"BF16":96}'
    lightning = logs["weights/epoch=3-step=1200.ckpt"]
    assert (lightning["format"], lightning["step"], lightning["epoch"]) == (
        "lightning",
        "1200",
        "3",
    )


TORCH_SAVES = Path(__file__).parents[1] / "fixtures" / "torch_saves"
"""Written by real torch 2.13 (scripts/make_torch_saves.py): a tiny nn.Linear's state_dict,
and a training loop's full save with its AdamW state."""


def test_a_weights_only_torch_save_is_sampler_weights_and_a_full_one_training_state(
    root: Path, clock: FixedClock
) -> None:
    for name in ("model.pt", "checkpoint.pt"):
        L.write(root / "exp" / name, (TORCH_SAVES / name).read_bytes())
    with Store.open(root, clock, settle_seconds=0) as store:
        kinds = {c.checkpoint_id: c.checkpoint_type for c in store.list_run_checkpoints("exp")}
        run = store.get_run("exp")
        exp = meta(store, "exp")
    assert kinds == {"sampler_weights/model.pt": "sampler", "weights/checkpoint.pt": "training"}
    model, full = exp["sampler_weights/model.pt"], exp["weights/checkpoint.pt"]
    assert (model["has_optimizer"], model["params"]) == ("false", "10")  # 4 x 2 + 2
    assert (full["has_optimizer"], full["params"], full["step"]) == ("true", "10", "1")
    assert run.last_sampler_checkpoint is not None and run.last_checkpoint is not None
    assert run.last_sampler_checkpoint.tinker_path == "tinker://exp/sampler_weights/model.pt"


def test_a_folder_keeps_its_kind_while_its_optimizer_state_arrives(
    root: Path, clock: FixedClock
) -> None:
    """Folders keep the stable rule: a Trainer save is training state before optimizer.pt."""
    L.hf_trainer_output(root / "out", steps=(100,), best=100)
    optimizer = root / "out/checkpoint-100/optimizer.pt"
    saved = optimizer.read_bytes()
    optimizer.unlink()
    with Store.open(root, clock, settle_seconds=0) as store:
        before = sorted(meta(store, "out"))
        optimizer.write_bytes(saved)
        store.rescan()
        after = sorted(meta(store, "out"))
    assert before == after == ["weights/checkpoint-100"]


def test_deepspeed_dcp_accelerate(root: Path, clock: FixedClock) -> None:
    L.deepspeed_run(root / "ds", steps=(100, 200), latest=100)
    L.deepspeed_run(root / "ds-nolatest", steps=(50,), latest=None)
    L.dcp_checkpoint(root / "dcp/step_10")
    L.dcp_checkpoint(root / "dcp/step_20", with_metadata=False)
    L.accelerate_checkpoint(root / "acc/checkpoints/checkpoint_0")
    with Store.open(root, clock, settle_seconds=0) as store:
        ds, lone = meta(store, "ds"), meta(store, "ds-nolatest")
        dcp, acc = meta(store, "dcp"), meta(store, "acc__checkpoints")
    assert ds["weights/global_step100"]["resume_point"] == "true"
    assert ds["weights/global_step100"]["params"] == "48"
    assert "newer than the 'latest'" in ds["weights/global_step200"]["incomplete_reason"]
    assert lone["weights/global_step50"]["incomplete"] == "true"
    assert dcp["weights/step_10"]["format"] == "dcp"  # `.metadata` names optimizer state
    assert dcp["weights/step_20"]["incomplete"] == "true"
    assert acc["weights/checkpoint_0"]["params"] == "36"


def _hash(rel: str) -> str:
    import hashlib

    return hashlib.sha256(rel.encode()).hexdigest()[:10]


def test_run_ids_are_stable_path_safe_and_unique(root: Path, clock: FixedClock) -> None:
    L.write(root / "top.pt", L.torch_zip(L.model_state(1)))
    L.write(root / "a/b/m.pt", L.torch_zip(L.model_state(1)))
    L.write(root / "a__b/m.pt", L.torch_zip(L.model_state(1)))
    with Store.open(root, clock, settle_seconds=0) as store:
        store.create_run("taken", "base")
    L.write(root / "taken/m.pt", L.torch_zip(L.model_state(1)))
    with Store.open(root, clock, settle_seconds=0) as store:
        ids = {r.training_run_id for r in store.list_runs()[0]}
        store.set_ttl("a__b", "sampler_weights/m.pt", 7200)
        store.set_public("_root_", "sampler_weights/top.pt", True)
    assert ids == {"_root_", "a__b", f"a__b-{_hash('a__b')}", "taken", f"taken-{_hash('taken')}"}
    (root / "a").rename(root / "renamed")  # a/b moves: a new id; the others keep theirs
    with Store.open(root, clock, settle_seconds=0) as store:
        ids = {r.training_run_id for r in store.list_runs()[0]}
        assert store.get_checkpoint("_root_", "sampler_weights/top.pt").public
        assert store.get_checkpoint("renamed__b", "sampler_weights/m.pt").expires_at is None
    assert ids == {
        "_root_",
        "renamed__b",
        f"a__b-{_hash('a__b')}",
        "taken",
        f"taken-{_hash('taken')}",
    }


def test_ttl_and_publish_survive_restart(root: Path, clock: FixedClock) -> None:
    L.hf_trainer_output(root / "out")
    with Store.open(root, clock, settle_seconds=0) as store:
        store.set_ttl("out", "weights/checkpoint-100", 7200)
        store.set_public("out", "weights/checkpoint-200", True)
    with Store.open(root, clock, settle_seconds=0) as store:
        first = store.get_checkpoint("out", "weights/checkpoint-100")
        second = store.get_checkpoint("out", "weights/checkpoint-200")
    assert first.expires_at is not None and second.public


def test_walk_skips_hidden_deep_and_linked_folders(root: Path, clock: FixedClock) -> None:
    deep = root.joinpath(*"abcdefg")
    L.write(deep / "deep.pt", L.torch_zip(L.model_state(1)))
    L.write(root / "a/b/c/d/e/f/ok.pt", L.torch_zip(L.model_state(1)))
    L.write(root / ".cache/hidden.pt", L.torch_zip(L.model_state(1)))
    (root / "a/loop").symlink_to(root, target_is_directory=True)
    (root / "a/link.pt").symlink_to(root / "a/b/c/d/e/f/ok.pt")
    with Store.open(root, clock, settle_seconds=0) as store:
        ids = [r.training_run_id for r in store.list_runs()[0]]
    assert ids == ["a__b__c__d__e__f"]


def test_outside_changes_are_noticed(root: Path, clock: FixedClock) -> None:
    L.hf_trainer_output(root / "out", steps=(100,))
    with Store.open(root, clock, settle_seconds=0) as store:
        L.hf_trainer_output(root / "out", steps=(100, 200))
        L.write(root / "new/model.pt", L.torch_zip(L.model_state(1)))
        store.rescan()
        ids = [c.checkpoint_id for c in store.list_run_checkpoints("out")]
        assert store.get_run("new").training_run_id == "new"
    assert ids == ["weights/checkpoint-100", "weights/checkpoint-200"]
    assert os.path.isdir(root / "out/checkpoint-100")
