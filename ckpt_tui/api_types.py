"""The checkpoint REST API's JSON types, shared by the server and the client.

Field names and shapes follow `tinker.types` (SDK 0.38.0): see `shared/spec/tinker-rest-api.md`.
The types are msgspec Structs: the client decodes response bytes straight into them (unknown
fields are ignored, since the hosted service adds fields) and the server encodes them.
No HTTP, Textual or file-system code lives here.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Annotated, Literal

import msgspec
from msgspec.structs import force_setattr

CheckpointType = Literal["training", "sampler", "external"]

SEGMENT_TO_TYPE: dict[str, CheckpointType] = {
    "weights": "training",
    "sampler_weights": "sampler",
    "external_weights": "external",
}
TYPE_TO_SEGMENT: dict[CheckpointType, str] = {v: k for k, v in SEGMENT_TO_TYPE.items()}
TINKER_SCHEME = "tinker://"


_TRAILING_Z = re.compile(r"[zZ]\Z")


def format_time(value: datetime) -> str:
    """ISO-8601 in UTC with a `Z`, as the SDK's pydantic models write it."""
    if value.tzinfo is None:
        raise ValueError("naive datetimes are not allowed in the API")
    return value.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def parse_time(text: str) -> datetime:
    """Parse an ISO-8601 time; a time with no zone is taken as UTC.

    A trailing Z (or z) is UTC on every Python: `datetime.fromisoformat` reads it only from
    3.11 on, and 3.10 (Ubuntu 22.04's python3) would otherwise refuse every time we write.
    """
    return in_utc(datetime.fromisoformat(_TRAILING_Z.sub("+00:00", text)))


def in_utc(value: datetime) -> datetime:
    """`value` in UTC; a time with no zone is taken as UTC (as the API's decoders do)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


class TinkerPath(msgspec.Struct, frozen=True, gc=False):
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


ByteCount = Annotated[int, msgspec.Meta(ge=0)]
"""A size in bytes: a negative one is refused where it is decoded (BadResponse)."""


class Checkpoint(msgspec.Struct, frozen=True, gc=False):
    """One stored checkpoint, as `GET .../checkpoints` returns it.

    Not tracked by the garbage collector (`gc=False`): it holds only strings, numbers, times
    and a string-to-string dict, so it can be part of no reference cycle.
    """

    checkpoint_id: str
    checkpoint_type: CheckpointType
    time: datetime
    tinker_path: str
    size_bytes: ByteCount | None = None
    public: bool = False
    user_metadata: dict[str, str] | None = None
    expires_at: datetime | None = None

    def __post_init__(self) -> None:
        if self.time.tzinfo is not timezone.utc:
            force_setattr(self, "time", in_utc(self.time))
        if self.expires_at is not None and self.expires_at.tzinfo is not timezone.utc:
            force_setattr(self, "expires_at", in_utc(self.expires_at))

    @property
    def run_id(self) -> str:
        return TinkerPath.parse(self.tinker_path).run_id

    @property
    def name(self) -> str:
        return self.checkpoint_id.split("/", 1)[-1]


class TrainingRun(msgspec.Struct, frozen=True, gc=False):
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

    def __post_init__(self) -> None:
        if self.last_request_time.tzinfo is not timezone.utc:
            force_setattr(self, "last_request_time", in_utc(self.last_request_time))


class Cursor(msgspec.Struct, frozen=True, gc=False):
    """Pagination state of a list answer."""

    offset: int
    limit: int
    total_count: int


class WeightsInfo(msgspec.Struct, frozen=True, gc=False):
    """What `POST /weights_info` tells about a checkpoint's model: enough for a LoRA estimate."""

    base_model: str
    is_lora: bool
    lora_rank: int | None = None
    train_mlp: bool | None = None
    train_attn: bool | None = None
    train_unembed: bool | None = None


class StoreProblems(msgspec.Struct, frozen=True, gc=False):
    """(ours) What `ckpt-tui serve`'s store could not read, or will not, one line each, in a
    list answer; `complete` false: a folder or file could not be read, so the list may lack
    checkpoints and must not be taken as whole. The hosted service sends no such field."""

    lines: list[str] = msgspec.field(default_factory=list)
    complete: bool = True


class CheckpointsPage(msgspec.Struct, frozen=True, gc=False):
    """`GET /checkpoints` (with a cursor) and `GET /training_runs/ID/checkpoints` (without)."""

    checkpoints: list[Checkpoint]
    cursor: Cursor | None = None
    store_problems: StoreProblems | None = None


class EncodedCheckpointsPage(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """A `CheckpointsPage` whose checkpoints are already JSON: the same bytes once encoded.
    `store_problems` is left out when there are none (the answer is the SDK's shape)."""

    checkpoints: list[msgspec.Raw]
    cursor: Cursor | None = None
    store_problems: StoreProblems | None = None


class TrainingRunsPage(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """`GET /training_runs`."""

    training_runs: list[TrainingRun]
    cursor: Cursor
    store_problems: StoreProblems | None = None


StoreId = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
"""A store's id (hex); bounded: a server's answer is hostile input."""


class Health(msgspec.Struct, frozen=True, gc=False):
    """`GET /healthz`; ckpt-tui's own server adds the id of the store it serves, and the
    checkpoint types it signs download URLs for."""

    status: str = ""
    store_id: StoreId | None = None
    signed_downloads: list[CheckpointType] | None = None


class SignedUrls(msgspec.Struct, frozen=True, gc=False):
    """`GET .../external_weights_urls`: one signed URL per file (the SDK's
    `ExternalWeightsUrlsResponse`), keyed by the file's path inside the checkpoint."""

    urls: dict[str, str]
    expires: datetime


NonNegative = Annotated[float, msgspec.Meta(ge=0)]


class StorageUsageRow(msgspec.Struct, frozen=True):
    """One row of the storage usage: a project's (or user's) checkpoints, count and bytes."""

    checkpoint_count: int
    size_bytes: int
    size_gigabytes: float
    project_id: str | None = None
    org_user_urn: str | None = None
    user_email: str | None = None
    user_name: str | None = None
    estimated_monthly_cost_usd: float | None = None


class StorageUsage(msgspec.Struct, frozen=True):
    """`GET /api/v1/billing/usage/checkpoints/current`: the rate storage is billed at
    (USD per gigabyte-month; None when the service does not say) and usage rows."""

    effective_rate_usd_per_gigabyte_month: NonNegative | None = None
    data: list[StorageUsageRow] = msgspec.field(default_factory=list)


class ClientConfig(msgspec.Struct, frozen=True):
    """`POST /api/v1/client/config`: how the server wants to be spoken to (SDK start-up);
    `{}` is all defaults. The SDK knows more flags; none of them concern checkpoints."""

    pjwt_auth_enabled: bool = False
    credential_default_source: str = "api_key"


class AuthToken(msgspec.Struct, frozen=True):
    """`POST /api/v1/auth/token`: a short-lived JWT in exchange for the credential."""

    jwt: str


def encode(value: object) -> bytes:
    """JSON bytes of an API struct (or of plain lists, dicts, strings, numbers and times).

    A string that is not valid Unicode (a lone surrogate: a byte of a file name that is not
    UTF-8, a `\\ud800` escape in a file's JSON) is sent with U+FFFD in its place: an answer
    is always valid JSON, never an error about one odd name.
    """
    try:
        return _ENCODER.encode(value)
    except UnicodeEncodeError:
        return _ENCODER.encode(_as_text(msgspec.to_builtins(value)))


def _as_text(value: object) -> object:
    """`value` (plain data) with every lone surrogate in its strings replaced by U+FFFD."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_as_text(key): _as_text(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_text(item) for item in value]
    return value


_ENCODER = msgspec.json.Encoder()
_SURROGATE = re.compile("[\ud800-\udfff]")
