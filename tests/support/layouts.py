"""Byte-faithful fixtures of the checkpoint layouts people write, built without torch.

`torch.save` files are written as torch writes them: a zip of `<archive>/data.pkl` (a protocol-2
pickle whose tensors are `torch._utils._rebuild_tensor_v2` calls over persistent storage ids),
`<archive>/data/<key>` (raw storage bytes), `<archive>/version` and `<archive>/byteorder`. The
pickle's opcodes are written one by one (`PickleWriter`), so no torch is needed and nothing here
is ever unpickled. safetensors files come from the safetensors package.
"""

from __future__ import annotations

import io
import json
import os
import struct
import zipfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from tests.support.safetensors_files import write_real

ITEM_BYTES = {"F32": 4, "BF16": 2, "F16": 2, "I64": 8}
STORAGE_TYPES = {"F32": "FloatStorage", "BF16": "BFloat16Storage", "F16": "HalfStorage",
                 "I64": "LongStorage"}  # fmt: skip


@dataclass(frozen=True)
class Tensor:
    """A tensor to write: its dtype and shape (the data is zeros)."""

    dtype: str
    shape: tuple[int, ...]

    @property
    def numel(self) -> int:
        n = 1
        for dim in self.shape:
            n *= dim
        return n

    @property
    def nbytes(self) -> int:
        return self.numel * ITEM_BYTES[self.dtype]


@dataclass(frozen=True)
class Raw:
    """Opcodes inserted as they are (for hostile pickles)."""

    opcodes: bytes


class PickleWriter:
    """Writes the opcodes `torch.save` (pickle protocol 2) writes for plain containers."""

    def __init__(self) -> None:
        self.out = bytearray(b"\x80\x02")
        self.storages: dict[str, Tensor] = {}

    def value(self, obj: object) -> None:
        if obj is None:
            self.out += b"N"
        elif isinstance(obj, bool):
            self.out += b"\x88" if obj else b"\x89"
        elif isinstance(obj, int):
            self.out += b"J" + struct.pack("<i", obj)
        elif isinstance(obj, float):
            self.out += b"G" + struct.pack(">d", obj)
        elif isinstance(obj, str):
            self.string(obj)
        elif isinstance(obj, Tensor):
            self.tensor(obj)
        elif isinstance(obj, Raw):
            self.out += obj.opcodes
        elif isinstance(obj, dict):
            self.dict(obj)
        elif isinstance(obj, (list, tuple)):
            self.sequence(obj)
        else:
            raise TypeError(f"cannot write {obj!r}")

    def string(self, text: str) -> None:
        raw = text.encode()
        self.out += b"X" + struct.pack("<I", len(raw)) + raw

    def global_(self, module: str, name: str) -> None:
        self.out += f"c{module}\n{name}\n".encode()

    def dict(self, items: dict[object, object]) -> None:
        self.out += b"}"
        if items:
            self.out += b"("
            for key, value in items.items():
                self.value(key)
                self.value(value)
            self.out += b"u"

    def sequence(self, items: list[object] | tuple[object, ...]) -> None:
        if isinstance(items, tuple):
            self.out += b"("
            for item in items:
                self.value(item)
            self.out += b"t"
            return
        self.out += b"]"
        if items:
            self.out += b"("
            for item in items:
                self.value(item)
            self.out += b"e"

    def tensor(self, tensor: Tensor) -> None:
        """`_rebuild_tensor_v2(storage, 0, shape, stride, False, OrderedDict())`."""
        key = str(len(self.storages))
        self.storages[key] = tensor
        self.global_("torch._utils", "_rebuild_tensor_v2")
        self.out += b"("
        self.out += b"("  # persistent id tuple
        self.string("storage")
        self.global_("torch", STORAGE_TYPES[tensor.dtype])
        self.string(key)
        self.string("cpu")
        self.value(tensor.numel)
        self.out += b"tQ"
        self.value(0)
        self.sequence(tensor.shape)
        self.sequence(_strides(tensor.shape))
        self.value(False)
        self.global_("collections", "OrderedDict")
        self.out += b")R"
        self.out += b"tR"

    def finish(self) -> bytes:
        return bytes(self.out) + b"."


def _strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for dim in reversed(shape):
        strides.append(step)
        step *= dim
    return tuple(reversed(strides))


def torch_zip(obj: object, archive: str = "archive") -> bytes:
    """The bytes of `torch.save(obj, f)` with `obj` made of dicts, lists, numbers, Tensors."""
    writer = PickleWriter()
    writer.value(obj)
    return zip_entries(writer.finish(), writer.storages, archive)


def zip_entries(pickle_bytes: bytes, storages: dict[str, Tensor], archive: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as out:
        out.writestr(f"{archive}/data.pkl", pickle_bytes)
        out.writestr(f"{archive}/byteorder", "little")
        for key, tensor in storages.items():
            out.writestr(f"{archive}/data/{key}", bytes(tensor.nbytes))
        out.writestr(f"{archive}/version", "3\n")
    return buffer.getvalue()


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data)
    else:
        path.write_bytes(data)
    return path


def write_json(path: Path, value: object) -> Path:
    return write(path, json.dumps(value))


def model_state(layers: int = 2, dtype: str = "F32") -> dict[object, object]:
    return {f"layer{i}.weight": Tensor(dtype, (4, 4)) for i in range(layers)}


def optimizer_state(layers: int = 2) -> dict[object, object]:
    state: dict[object, object] = {
        i: {"step": Tensor("F32", ()), "exp_avg": Tensor("F32", (4, 4))} for i in range(layers)
    }
    return {"state": state, "param_groups": [{"lr": 0.001, "params": list(range(layers))}]}


def safetensors_file(path: Path, tensors: dict[str, tuple[str, list[int]]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_real(path, tensors)


MODEL_ST = {"model.embed.weight": ("BF16", [8, 4]), "model.norm.weight": ("F32", [4])}
"""The tensors of every model.safetensors here: 36 params, 64 BF16 + 16 F32 bytes."""


def hf_trainer_output(folder: Path, steps: tuple[int, ...] = (100, 200), best: int = 100) -> Path:
    """`Trainer(output_dir=folder)` after saves at `steps`, eval every save, best at `best`."""
    history: list[dict[str, object]] = []
    for step in steps:
        history.append({"loss": 2.0 - step / 1000, "step": step, "epoch": step / 100})
        history.append(
            {"eval_loss": round(1.0 + abs(step - best) / 1000, 4), "eval_runtime": 1.5,
             "eval_samples_per_second": 9.0, "step": step, "epoch": step / 100}
        )  # fmt: skip
        ckpt = folder / f"checkpoint-{step}"
        safetensors_file(ckpt / "model.safetensors", MODEL_ST)
        write_json(ckpt / "config.json", {"_name_or_path": "Qwen/Qwen3-0.6B", "model_type": "x"})
        write(ckpt / "optimizer.pt", torch_zip(optimizer_state()))
        write(ckpt / "scheduler.pt", torch_zip({"last_epoch": step}))
        write(ckpt / "rng_state.pth", torch_zip({"python": 1}))
        write(ckpt / "training_args.bin", torch_zip({"lr": 0.1}))
        state = {"global_step": step, "epoch": step / 100, "log_history": list(history),
                 "best_model_checkpoint": str(folder / f"checkpoint-{best}")}  # fmt: skip
        write_json(ckpt / "trainer_state.json", state)
    return folder


def peft_adapter(folder: Path, base: str = "meta-llama/Llama-3.2-1B", rank: int = 16) -> Path:
    cfg = {"peft_type": "LORA", "r": rank, "lora_alpha": 32, "base_model_name_or_path": base}
    write_json(folder / "adapter_config.json", cfg)
    safetensors_file(folder / "adapter_model.safetensors", {"a.lora_A.weight": ("F32", [rank, 4])})
    return folder


def sharded_pretrained(folder: Path) -> Path:
    """`save_pretrained` with two shards and an index."""
    write_json(folder / "config.json", {"_name_or_path": "gpt2", "model_type": "gpt2"})
    safetensors_file(folder / "model-00001-of-00002.safetensors", {"a": ("F32", [10])})
    safetensors_file(folder / "model-00002-of-00002.safetensors", {"b": ("BF16", [6])})
    weight_map = {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}
    write_json(folder / "model.safetensors.index.json", {"weight_map": weight_map})
    return folder


def deepspeed_run(folder: Path, steps: tuple[int, ...] = (100,), latest: int | None = 100) -> Path:
    for step in steps:
        tag = folder / f"global_step{step}"
        write(tag / "mp_rank_00_model_states.pt", torch_zip({"module": model_state(3, "BF16")}))
        optim = {"optimizer_state_dict": optimizer_state(), "ds_version": "0.14"}
        write(tag / "zero_pp_rank_0_mp_rank_00_optim_states.pt", torch_zip(optim))
    if latest is not None:
        write(folder / "latest", f"global_step{latest}")
    return folder


def dcp_checkpoint(folder: Path, with_metadata: bool = True) -> Path:
    """`torch.distributed.checkpoint.save` output: shards then `.metadata` (a pickle)."""
    write(folder / "__0_0.distcp", bytes(64))
    write(folder / "__1_0.distcp", bytes(64))
    if with_metadata:
        writer = PickleWriter()
        writer.global_("torch.distributed.checkpoint.metadata", "Metadata")
        writer.out += b")\x81"
        writer.dict({"state_dict_metadata": {"model.w": 1, "optim.state.0.exp_avg": 2}})
        writer.out += b"b"
        write(folder / ".metadata", writer.finish())
    return folder


def accelerate_checkpoint(folder: Path) -> Path:
    safetensors_file(folder / "model.safetensors", MODEL_ST)
    write(folder / "optimizer.bin", torch_zip(optimizer_state()))
    write(folder / "random_states_0.pkl", b"\x80\x04N.")
    return folder


def lightning_ckpt(path: Path, epoch: int = 3, step: int = 1200) -> Path:
    obj = {"epoch": epoch, "global_step": step, "pytorch-lightning_version": "2.4.0",
           "state_dict": model_state(2), "optimizer_states": [optimizer_state()],
           "lr_schedulers": []}  # fmt: skip
    return write(path, torch_zip(obj, archive=path.stem))


def full_torch_checkpoint(path: Path, step: int = 500) -> Path:
    """The source document's `torch.save({...model, optimizer, epoch, step...})`."""
    obj = {"model_state_dict": model_state(2), "optimizer_state_dict": optimizer_state(),
           "epoch": 5, "step": step, "best_val_loss": 0.25}  # fmt: skip
    return write(path, torch_zip(obj, archive=path.stem))


def code_running_pickle(marker: Path) -> bytes:
    """A torch zip whose data.pkl, if loaded, would run `touch marker` (GLOBAL os system)."""
    opcodes = f"cos\nsystem\n(X{struct.pack('<I', len(f'touch {marker}')).decode('latin-1')}"
    raw = opcodes.encode("latin-1") + f"touch {marker}".encode() + b"tR"
    return torch_zip({"model": model_state(1), "payload": Raw(raw)}, archive="evil")


def written_long_ago(root: Path, when: datetime) -> Path:
    """Date every file and folder under `root` at `when`: a save finished long before the
    store looks, so nothing is `incomplete` for being fresh (a copy or a checkout is new)."""
    stamp = when.timestamp()
    for path in [root, *root.rglob("*")]:
        os.utime(path, (stamp, stamp), follow_symlinks=False)
    return root
