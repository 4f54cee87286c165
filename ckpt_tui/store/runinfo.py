"""`runs/<run_id>/run.json`: what a training run is (base model, LoRA rank, ...)."""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ckpt_tui.api_types import format_time, parse_time
from ckpt_tui.store.errors import InvalidRequestError
from ckpt_tui.store.files import read_json
from ckpt_tui.store.layout import RUN_JSON
from ckpt_tui.store.times import from_us, to_us

DEFAULT_PROJECT_ID = "default"
"""The project of every run whose run.json names none: a store is one project unless told."""

STANDARD_KEYS = frozenset(
    {"base_model", "is_lora", "lora_rank", "model_owner", "user_metadata", "created"}
)


@dataclass(frozen=True)
class RunInfo:
    """The contents of run.json; `extra` holds every other key (e.g. train_mlp)."""

    base_model: str
    is_lora: bool
    created_us: int
    lora_rank: int | None = None
    model_owner: str = "local"
    user_metadata: dict[str, str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    corrupted: bool = False

    @property
    def project_id(self) -> str:
        """run.json's `project_id` (a non-empty string), else DEFAULT_PROJECT_ID."""
        named = self.extra.get("project_id")
        return named if isinstance(named, str) and named else DEFAULT_PROJECT_ID

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = dict(self.extra)
        data.update(
            base_model=self.base_model,
            is_lora=self.is_lora,
            lora_rank=self.lora_rank,
            model_owner=self.model_owner,
            user_metadata=self.user_metadata,
            created=format_time(from_us(self.created_us)),
        )
        return data


def checked_metadata(value: object, what: str = "user_metadata") -> dict[str, str] | None:
    """A {str: str} mapping or None, else InvalidRequestError."""
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise InvalidRequestError(f"{what} must map strings to strings, got {value!r}")
    return dict(value)


def checked_extra(extra: dict[str, Any]) -> dict[str, Any]:
    """`extra` if it does not shadow a standard run.json key and is JSON-serialisable."""
    clash = sorted(STANDARD_KEYS & extra.keys())
    if clash:
        raise InvalidRequestError(f"extra must not set standard run.json keys: {', '.join(clash)}")
    try:
        json.dumps(extra)
    except (TypeError, ValueError) as exc:
        raise InvalidRequestError(f"extra must be JSON-serialisable: {exc}") from exc
    return extra


def read_run_info(run_dir: Path, fallback_created_us: int) -> RunInfo:
    """Parse run.json; a missing or broken file gives a `corrupted` run (still listed)."""
    try:
        return _from_json(read_json(os.fspath(run_dir / RUN_JSON)))
    except (OSError, ValueError, KeyError, TypeError, InvalidRequestError):
        return RunInfo(base_model="", is_lora=False, created_us=fallback_created_us, corrupted=True)


def _from_json(data: dict[str, Any]) -> RunInfo:
    rank = data.get("lora_rank")
    if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int)):
        raise TypeError(f"lora_rank must be an integer, got {rank!r}")
    return RunInfo(
        base_model=str(data["base_model"]),
        is_lora=bool(data.get("is_lora", False)),
        created_us=to_us(parse_time(str(data["created"]))),
        lora_rank=rank,
        model_owner=str(data.get("model_owner") or "local"),
        user_metadata=checked_metadata(data.get("user_metadata")),
        extra={k: v for k, v in data.items() if k not in STANDARD_KEYS},
    )


def write_run_info(run_dir: Path, info: RunInfo) -> None:
    """Write run.json atomically: a temporary file in the same folder, then rename."""
    text = json.dumps(info.to_json(), indent=2, sort_keys=True) + "\n"
    tmp = run_dir / f".{RUN_JSON}.{uuid.uuid4().hex}.tmp"
    try:
        with open(tmp, "x", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, run_dir / RUN_JSON)
    finally:
        tmp.unlink(missing_ok=True)
