"""The endpoints of shared/spec/tinker-rest-api.md, each a thin call into the Store.

Store calls touch files and SQLite, so they run in Starlette's thread pool; the Store holds its
own lock, which makes concurrent calls safe.
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ckpt_tui.api_types import (
    CheckpointsPage,
    Cursor,
    EncodedCheckpointsPage,
    StoreProblems,
    TrainingRunsPage,
)
from ckpt_tui.server.billing import checkpoint_storage_usage
from ckpt_tui.server.deletes import DeleteQueue
from ckpt_tui.server.downloads import external_weights_urls, signed_file
from ckpt_tui.server.encoding import json_response
from ckpt_tui.server.error_responses import ApiError, guarded
from ckpt_tui.server.params import (
    check_access_scope,
    parse_page,
    parse_tinker_path_body,
    parse_ttl_body,
    path_run_id,
    project_id,
    read_json_object,
    split_checkpoint_tail,
)
from ckpt_tui.server.signing import SIGNED_PREFIX
from ckpt_tui.store import Store
from ckpt_tui.store.unread import ReadProblems

RUNS_PAGE = 20
CHECKPOINTS_PAGE = 100


def _store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


async def healthz(request: Request) -> Response:
    """Open to all (no key): ok, the id of the store served, by which a client tells
    that two of its backends are one store (ckpt_tui.backends.identity), and the checkpoint
    types whose files it signs download URLs for (ckpt_tui.server.downloads)."""
    store = _store(request)
    # in a thread: a bucket store's id waits for its first look (`BucketStore.store_id`)
    store_id = await run_in_threadpool(lambda: store.store_id)
    answer = {"status": "ok", "store_id": store_id}
    return json_response({**answer, "signed_downloads": request.app.state.signed_types})


async def client_config(request: Request) -> Response:
    """SDK start-up: `{}` means all defaults (JWT exchange off); see `create_app`."""
    return json_response(request.app.state.client_config)


async def auth_token(request: Request) -> Response:
    """Trade the API key (checked by the auth middleware) for a short-lived JWT."""
    issuer = request.app.state.jwt_issuer
    if issuer is None:
        detail = "JWT exchange is off on this server (`ckpt-tui serve --jwt` turns it on)"
        raise ApiError(404, detail)
    return json_response({"jwt": issuer.mint()})


async def telemetry(request: Request) -> Response:
    """The SDK reports its errors here; a local server has no use for them."""
    return json_response({"status": "accepted"})


async def list_runs(request: Request) -> Response:
    check_access_scope(request)
    page = parse_page(request, RUNS_PAGE)
    project = project_id(request)
    store = _store(request)
    read = await run_in_threadpool(store.read_runs, page.offset, page.limit, project)
    runs, total, problems = read
    cursor = Cursor(page.offset, page.limit, total)
    return json_response(TrainingRunsPage(runs, cursor, _said(problems)))


async def get_run(request: Request) -> Response:
    check_access_scope(request)
    run = await run_in_threadpool(_store(request).get_run, path_run_id(request))
    return json_response(run)


async def list_run_checkpoints(request: Request) -> Response:
    store = _store(request)
    checkpoints = await run_in_threadpool(store.list_run_checkpoints, path_run_id(request))
    return json_response(CheckpointsPage(checkpoints))


async def list_checkpoints(request: Request) -> Response:
    check_access_scope(request)
    page = parse_page(request, CHECKPOINTS_PAGE)
    store = _store(request)
    read = await run_in_threadpool(store.read_encoded_checkpoints, page.offset, page.limit)
    checkpoints, total, problems = read
    cursor = Cursor(page.offset, page.limit, total)
    return json_response(EncodedCheckpointsPage(checkpoints, cursor, _said(problems)))


def _said(problems: ReadProblems) -> StoreProblems | None:
    """The store's problems as a list answer carries them (none: the SDK's own shape)."""
    if not problems.lines and problems.complete:
        return None
    return StoreProblems(problems.lines, problems.complete)


async def checkpoint_action(request: Request) -> Response:
    """DELETE a checkpoint, POST/DELETE its `/publish`, PUT its `/ttl`, GET its
    `/external_weights_urls`."""
    run_id = path_run_id(request)
    checkpoint_id, action = split_checkpoint_tail(str(request.path_params["tail"]))
    store = _store(request)
    key = (action, request.method)
    if key == (None, "DELETE"):
        deletes: DeleteQueue = request.app.state.deletes
        await deletes.delete(run_id, checkpoint_id)
    elif key in (("publish", "POST"), ("publish", "DELETE")):
        public = request.method == "POST"
        await run_in_threadpool(store.set_public, run_id, checkpoint_id, public)
    elif key == ("external_weights_urls", "GET"):
        return await external_weights_urls(request, run_id, checkpoint_id)
    elif key == ("ttl", "PUT"):
        ttl = parse_ttl_body(await read_json_object(request))
        await run_in_threadpool(store.set_ttl, run_id, checkpoint_id, ttl)
    else:
        allowed = {
            None: "DELETE",
            "publish": "POST, DELETE",
            "ttl": "PUT",
            "external_weights_urls": "GET",
        }[action]
        what = "a checkpoint" if action is None else f"a checkpoint's /{action}"
        raise ApiError(405, f"method {request.method} is not allowed on {what} (use {allowed})")
    return Response(status_code=204)


async def weights_info(request: Request) -> Response:
    path = parse_tinker_path_body(await read_json_object(request))
    store = _store(request)
    info = await run_in_threadpool(store.weights_info, path.run_id, path.checkpoint_id)
    return json_response(info)


def _route(path: str, endpoint: Any, methods: list[str]) -> Route:
    return Route(path, guarded(endpoint), methods=methods)


API = "/api/v1"
ROUTES = [
    _route(f"{API}/healthz", healthz, ["GET"]),
    _route(f"{API}/client/config", client_config, ["POST"]),
    _route(f"{API}/auth/token", auth_token, ["POST"]),
    _route(f"{API}/telemetry", telemetry, ["POST"]),
    _route(f"{API}/training_runs", list_runs, ["GET"]),
    _route(f"{API}/training_runs/{{run_id}}", get_run, ["GET"]),
    _route(f"{API}/training_runs/{{run_id}}/checkpoints", list_run_checkpoints, ["GET"]),
    _route(
        f"{API}/training_runs/{{run_id}}/checkpoints/{{tail:path}}",
        checkpoint_action,
        ["GET", "DELETE", "POST", "PUT"],
    ),
    _route(f"{SIGNED_PREFIX}{{run_id}}/{{segment}}/{{name}}/{{file:path}}", signed_file, ["GET"]),
    _route(f"{API}/checkpoints", list_checkpoints, ["GET"]),
    _route(f"{API}/weights_info", weights_info, ["POST"]),
    _route(f"{API}/billing/usage/checkpoints/current", checkpoint_storage_usage, ["GET"]),
]
