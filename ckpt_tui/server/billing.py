"""`GET /api/v1/billing/usage/checkpoints/current`: what this server's checkpoints cost.

Answered only when the server was given a storage rate (`ckpt-tui serve --storage-rate R`):
one data row with the store's checkpoint count and bytes, costed at R USD per GiB-month.
Without a rate it is a 404 that says how to turn it on. `size_gigabytes` counts GiB (2**30
bytes), the unit ckpt-tui's rates are in.
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from ckpt_tui.api_types import TinkerPath
from ckpt_tui.server.encoding import json_response
from ckpt_tui.server.error_responses import ApiError
from ckpt_tui.server.params import project_id
from ckpt_tui.store import Store

GIB = 2**30
NO_BILLING = (
    "this server has no storage billing: start it with `ckpt-tui serve STORE --storage-rate "
    "USD_PER_GIB_MONTH` to answer it (clients then cost its checkpoints at that rate)"
)


def usage_of(store: Store, project: str | None) -> tuple[int, int]:
    """(checkpoint count, bytes) of the store's live checkpoints (of one project's runs)."""
    total = store.list_checkpoints(0, 0)[1]
    checkpoints = store.list_checkpoints(0, total)[0] if total else []
    if project is not None:
        runs = {run.training_run_id for run in store.list_runs(0, None, project)[0]}
        checkpoints = [c for c in checkpoints if TinkerPath.parse(c.tinker_path).run_id in runs]
    return len(checkpoints), sum(c.size_bytes or 0 for c in checkpoints)


def usage_document(rate: float, count: int, size_bytes: int, project: str | None) -> Any:
    gigabytes = size_bytes / GIB
    return {
        "effective_rate_usd_per_gigabyte_month": rate,
        "data": [
            {
                "project_id": project,
                "org_user_urn": None,
                "user_email": None,
                "user_name": None,
                "checkpoint_count": count,
                "size_bytes": size_bytes,
                "size_gigabytes": gigabytes,
                "estimated_monthly_cost_usd": gigabytes * rate,
            }
        ],
    }


async def checkpoint_storage_usage(request: Request) -> Response:
    rate: float | None = request.app.state.storage_rate
    if rate is None:
        raise ApiError(404, NO_BILLING)
    project = project_id(request)
    store: Store = request.app.state.store
    count, size_bytes = await run_in_threadpool(usage_of, store, project)
    return json_response(usage_document(rate, count, size_bytes, project))
