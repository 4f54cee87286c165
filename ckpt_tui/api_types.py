"""The checkpoint REST API's JSON types, shared by the server and the client.

Field names and shapes follow `tinker.types` (SDK 0.38.0): see `shared/spec/tinker-rest-api.md`.
No HTTP, Textual or file-system code lives here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal, cast

CheckpointType = Literal["training", "sampler", "external"]

SEGMENT_TO_TYPE: dict[str, CheckpointType] = {
    "weights": "training",
    "sampler_weights": "sampler",
    "external_weights": "external",
}
TYPE_TO_SEGMENT: dict[CheckpointType, str] = {v: k for k, v in SEGMENT_TO_TYPE.items()}
TINKER_SCHEME = "tinker://"


def format_time(value: datetime) -> str:
    """ISO-8601 in UTC with a `Z`, as the SDK's pydantic models write it."""
    if value.tzinfo is None:
        raise ValueError("naive datetimes are not allowed in the API")
    return value.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def parse_time(text: str) -> datetime:
    """Parse an ISO-8601 time; a time with no zone is taken as UTC."""
    if text.endswith("Z"):  # the common case, and the fast one: lists hold 100,000 of these
        return datetime.fromisoformat(text[:-1]).replace(tzinfo=timezone.utc)
    value = datetime.fromisoformat(text)
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def _opt_time(text: Any) -> datetime | None:
    return None if text is None else parse_time(str(text))


def _opt_metadata(value: Any) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError("user_metadata must be an object")
    return {str(k): str(v) for k, v in value.items()}


@dataclass(frozen=True)
class TinkerPath:
    """`tinker://RUN/SEGMENT/NAME` split into its parts."""

    run_id: str
    checkpoint_type: CheckpointType
    checkpoint_id: str  # "SEGMENT/NAME"

    @property
    def name(self) -> str:
        return self.checkpoint_id.split("/", 1)[1]

    def __str__(self) -> str:
        return f"{TINKER_SCHEME}{self.run_id}/{self.checkpoint_id}"

    @classmethod
    def parse(cls, text: str) -> TinkerPath:
        """Split a tinker path the way the SDK does; raise ValueError with the reason."""
        if not text.startswith(TINKER_SCHEME):
            raise ValueError(f"not a tinker path (must start with {TINKER_SCHEME}): {text!r}")
        parts = text[len(TINKER_SCHEME) :].split("/")
        if len(parts) != 3 or not all(parts):
            raise ValueError(f"a tinker path is tinker://RUN/SEGMENT/NAME, got {text!r}")
        if parts[1] not in SEGMENT_TO_TYPE:
            segments = ", ".join(SEGMENT_TO_TYPE)
            raise ValueError(f"unknown segment {parts[1]!r} in {text!r} (expected {segments})")
        return cls(parts[0], SEGMENT_TO_TYPE[parts[1]], f"{parts[1]}/{parts[2]}")


def checkpoint_type_of(checkpoint_id: str) -> CheckpointType:
    """The type a checkpoint id's segment names; ValueError if it names none."""
    segment = checkpoint_id.split("/", 1)[0]
    if segment not in SEGMENT_TO_TYPE:
        raise ValueError(f"unknown checkpoint segment {segment!r}")
    return SEGMENT_TO_TYPE[segment]


@dataclass(frozen=True)
class Checkpoint:
    """One stored checkpoint, as `GET .../checkpoints` returns it."""

    checkpoint_id: str
    checkpoint_type: CheckpointType
    time: datetime
    tinker_path: str
    size_bytes: int | None = None
    public: bool = False
    user_metadata: dict[str, str] | None = None
    expires_at: datetime | None = None

    @property
    def run_id(self) -> str:
        return TinkerPath.parse(self.tinker_path).run_id

    @property
    def name(self) -> str:
        return self.checkpoint_id.split("/", 1)[-1]

    def to_json(self) -> dict[str, Any]:
        return {
            "checkpoint_id": self.checkpoint_id,
            "checkpoint_type": self.checkpoint_type,
            "time": format_time(self.time),
            "tinker_path": self.tinker_path,
            "size_bytes": self.size_bytes,
            "public": self.public,
            "user_metadata": self.user_metadata,
            "expires_at": None if self.expires_at is None else format_time(self.expires_at),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Checkpoint:
        kind = data["checkpoint_type"]
        if kind not in TYPE_TO_SEGMENT:
            raise ValueError(f"unknown checkpoint_type {kind!r}")
        size = data.get("size_bytes")
        return cls(
            checkpoint_id=str(data["checkpoint_id"]),
            checkpoint_type=cast(CheckpointType, kind),
            time=parse_time(str(data["time"])),
            tinker_path=str(data["tinker_path"]),
            size_bytes=None if size is None else int(size),
            public=bool(data.get("public", False)),
            user_metadata=_opt_metadata(data.get("user_metadata")),
            expires_at=_opt_time(data.get("expires_at")),
        )


@dataclass(frozen=True)
class TrainingRun:
    """One training run, as `GET /training_runs` returns it."""

    training_run_id: str
    base_model: str
    model_owner: str
    is_lora: bool
    last_request_time: datetime
    corrupted: bool = False
    lora_rank: int | None = None
    last_checkpoint: Checkpoint | None = None
    last_sampler_checkpoint: Checkpoint | None = None
    user_metadata: dict[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        def opt(ckpt: Checkpoint | None) -> dict[str, Any] | None:
            return None if ckpt is None else ckpt.to_json()

        return {
            "training_run_id": self.training_run_id,
            "base_model": self.base_model,
            "model_owner": self.model_owner,
            "is_lora": self.is_lora,
            "corrupted": self.corrupted,
            "lora_rank": self.lora_rank,
            "last_request_time": format_time(self.last_request_time),
            "last_checkpoint": opt(self.last_checkpoint),
            "last_sampler_checkpoint": opt(self.last_sampler_checkpoint),
            "user_metadata": self.user_metadata,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TrainingRun:
        def opt(value: Any) -> Checkpoint | None:
            return None if value is None else Checkpoint.from_json(value)

        rank = data.get("lora_rank")
        return cls(
            training_run_id=str(data["training_run_id"]),
            base_model=str(data["base_model"]),
            model_owner=str(data.get("model_owner", "")),
            is_lora=bool(data["is_lora"]),
            last_request_time=parse_time(str(data["last_request_time"])),
            corrupted=bool(data.get("corrupted", False)),
            lora_rank=None if rank is None else int(rank),
            last_checkpoint=opt(data.get("last_checkpoint")),
            last_sampler_checkpoint=opt(data.get("last_sampler_checkpoint")),
            user_metadata=_opt_metadata(data.get("user_metadata")),
        )


@dataclass(frozen=True)
class Cursor:
    """Pagination state of a list answer."""

    offset: int
    limit: int
    total_count: int

    def to_json(self) -> dict[str, int]:
        return {"offset": self.offset, "limit": self.limit, "total_count": self.total_count}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Cursor:
        return cls(int(data["offset"]), int(data["limit"]), int(data["total_count"]))


@dataclass(frozen=True)
class WeightsInfo:
    """What `POST /weights_info` tells about a checkpoint's model: enough for a LoRA estimate."""

    base_model: str
    is_lora: bool
    lora_rank: int | None = None
    train_mlp: bool | None = None
    train_attn: bool | None = None
    train_unembed: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "base_model": self.base_model,
            "is_lora": self.is_lora,
            "lora_rank": self.lora_rank,
            "train_mlp": self.train_mlp,
            "train_attn": self.train_attn,
            "train_unembed": self.train_unembed,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WeightsInfo:
        def opt_bool(key: str) -> bool | None:
            value = data.get(key)
            return None if value is None else bool(value)

        rank = data.get("lora_rank")
        return cls(
            base_model=str(data["base_model"]),
            is_lora=bool(data["is_lora"]),
            lora_rank=None if rank is None else int(rank),
            train_mlp=opt_bool("train_mlp"),
            train_attn=opt_bool("train_attn"),
            train_unembed=opt_bool("train_unembed"),
        )
