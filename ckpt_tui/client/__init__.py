"""The async client for the checkpoint REST API, and where it connects.

from ckpt_tui.client import CheckpointClient, resolve_backend

async with CheckpointClient(resolve_backend(url=..., api_key=...)) as client:
    checkpoints = await client.list_all_checkpoints(on_progress=print)
"""

from ckpt_tui.client.bulk import NOT_TRIED, BulkProgress, Outcome, run_bulk
from ckpt_tui.client.client import (
    CheckpointClient,
    CheckpointRef,
    Timeouts,
    to_tinker_path,
)
from ckpt_tui.client.endpoint import (
    API_KEY_HEADER,
    DEFAULT_BASE_URL,
    Endpoint,
    read_default_key,
    resolve_backend,
)
from ckpt_tui.client.errors import (
    ApiError,
    AuthError,
    BadRequestError,
    BadResponse,
    ClientError,
    ConflictError,
    ConnectionFailed,
    CredentialsError,
    ForbiddenError,
    IncompleteListError,
    InsufficientStorageError,
    InvalidUrlError,
    LocalStoreFailed,
    NotFoundError,
    RateLimitedError,
    ReadOnlyError,
    ServerError,
    Timeout,
)
from ckpt_tui.client.pacing import DEFAULT_MAX_IN_FLIGHT, Pace
from ckpt_tui.client.paging import Listing, Page, Progress
from ckpt_tui.client.retry import RetryPolicy
from ckpt_tui.client.stopping import Stop

__all__ = [
    "API_KEY_HEADER",
    "DEFAULT_BASE_URL",
    "DEFAULT_MAX_IN_FLIGHT",
    "NOT_TRIED",
    "ApiError",
    "AuthError",
    "BadRequestError",
    "BadResponse",
    "BulkProgress",
    "CheckpointClient",
    "CheckpointRef",
    "ClientError",
    "ConflictError",
    "ConnectionFailed",
    "CredentialsError",
    "Endpoint",
    "ForbiddenError",
    "IncompleteListError",
    "InsufficientStorageError",
    "InvalidUrlError",
    "Listing",
    "LocalStoreFailed",
    "NotFoundError",
    "Outcome",
    "Pace",
    "Page",
    "Progress",
    "RateLimitedError",
    "ReadOnlyError",
    "RetryPolicy",
    "ServerError",
    "Stop",
    "Timeout",
    "Timeouts",
    "read_default_key",
    "resolve_backend",
    "run_bulk",
    "to_tinker_path",
]
