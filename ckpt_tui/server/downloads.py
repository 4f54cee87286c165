"""`GET …/checkpoints/SEGMENT/NAME/external_weights_urls` and the signed file route it points to.

The answer has the SDK's shape (`ExternalWeightsUrlsResponse`): `{"urls": {file: url},
"expires": time}`. URLs are made from the request's own `Host` header, so they work through an
SSH tunnel or a proxy. Beyond the hosted service, which signs only external checkpoints, this
server signs the checkpoint types in `app.state.signed_types`, and says which in its health
check (`signed_downloads`) so clients offer downloads only where they work.
"""

from __future__ import annotations

from datetime import datetime, timezone
from urllib.parse import quote, urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from ckpt_tui.api_types import SEGMENT_TO_TYPE, CheckpointType, format_time
from ckpt_tui.server.encoding import json_response
from ckpt_tui.server.error_responses import ApiError
from ckpt_tui.server.file_response import file_answer
from ckpt_tui.server.signing import SIGNED_PREFIX, FileClaim, UrlSigner
from ckpt_tui.store import Store
from ckpt_tui.store.errors import NotFoundError
from ckpt_tui.store.names import UnsafeNameError, check_run_id, split_checkpoint_id

ALL_SIGNED_TYPES: tuple[CheckpointType, ...] = ("external", "training", "sampler")


def _signer(request: Request) -> UrlSigner:
    signer: UrlSigner = request.app.state.url_signer
    return signer


def _claim(store: Store, run_id: str, checkpoint_id: str, file: str) -> FileClaim:
    checkpoint = store.get_checkpoint(run_id, checkpoint_id)
    return FileClaim(run_id, checkpoint_id, format_time(checkpoint.time), file)


async def external_weights_urls(request: Request, run_id: str, checkpoint_id: str) -> Response:
    """One signed URL per file of the checkpoint, valid for the server's URL lifetime."""
    segment = checkpoint_id.split("/", 1)[0]
    signed: tuple[CheckpointType, ...] = request.app.state.signed_types
    if SEGMENT_TO_TYPE[segment] not in signed:
        kinds = ", ".join(signed) or "none"
        raise ApiError(
            400,
            f"this server signs download URLs only for these checkpoint types: {kinds}; "
            f"{checkpoint_id} is a {SEGMENT_TO_TYPE[segment]} checkpoint",
        )
    store: Store = request.app.state.store
    files = await run_in_threadpool(store.checkpoint_files, run_id, checkpoint_id)
    checkpoint = await run_in_threadpool(store.get_checkpoint, run_id, checkpoint_id)
    created = format_time(checkpoint.time)
    signer = _signer(request)
    expires = signer.expiry(store.clock.now())
    base = str(request.base_url).rstrip("/")
    urls: dict[str, str] = {}
    for item in files:
        claim = FileClaim(run_id, checkpoint_id, created, item.name)
        query = urlencode({"expires": expires, "sig": signer.signature(claim, expires)})
        urls[item.name] = f"{base}{_file_route(run_id, checkpoint_id, item.name)}?{query}"
    when = format_time(datetime.fromtimestamp(expires, timezone.utc))
    return json_response({"urls": urls, "expires": when})


def _file_route(run_id: str, checkpoint_id: str, name: str) -> str:
    segment, checkpoint_name = checkpoint_id.split("/", 1)
    parts = [quote(run_id, safe=""), segment, quote(checkpoint_name, safe="")]
    return SIGNED_PREFIX + "/".join(parts) + "/" + quote(name, safe="/")


async def signed_file(request: Request) -> Response:
    """A checkpoint's file, to whoever holds an unexpired signature for exactly this file."""
    refused = ApiError(
        403, "this download URL's signature is not valid for this file: ask for new URLs"
    )
    params = request.path_params
    try:
        run_id = check_run_id(str(params["run_id"]))
        checkpoint_id = f"{params['segment']}/{params['name']}"
        split_checkpoint_id(checkpoint_id)
    except UnsafeNameError:
        raise refused from None
    file = str(params["file"])
    store: Store = request.app.state.store
    try:  # a checkpoint that is not there is refused like a bad signature: nothing leaks
        claim = await run_in_threadpool(_claim, store, run_id, checkpoint_id, file)
    except NotFoundError:
        raise refused from None
    query = request.query_params
    now = store.clock.now()
    _signer(request).check(claim, query.get("expires", ""), query.get("sig", ""), now)
    handle = await run_in_threadpool(store.open_checkpoint_file, run_id, checkpoint_id, file)
    return file_answer(request, handle)
