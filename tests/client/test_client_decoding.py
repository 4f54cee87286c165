"""The client decodes answers' bytes into typed structs: shape errors name the field and the
endpoint, unknown fields are ignored, times without a zone are UTC."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from datetime import datetime, timezone
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ckpt_tui.client import BadResponse, CheckpointClient, Endpoint, RetryPolicy
from tests.support.live_server import run_server

CHECKPOINT = {
    "checkpoint_id": "weights/0001",
    "checkpoint_type": "training",
    "time": "2025-03-01T12:00:00Z",
    "tinker_path": "tinker://run-1/weights/0001",
    "size_bytes": 1234,
    "public": False,
    "user_metadata": {"step": "10"},
    "expires_at": None,
}
CURSOR = {"offset": 0, "limit": 100, "total_count": 1}


class CannedAnswers:
    """A real ASGI app answering each path with the bytes the test put there."""

    def __init__(self) -> None:
        self.bodies: dict[str, bytes] = {}
        self.app = Starlette(routes=[Route("/{path:path}", self.answer, methods=["GET", "POST"])])

    def put(self, path: str, body: Any) -> None:
        self.bodies[path] = body if isinstance(body, bytes) else json.dumps(body).encode()

    async def answer(self, request: Request) -> Response:
        body = self.bodies.get(request.url.path, b'{"detail": "no such canned answer"}')
        return Response(body, media_type="application/json")


@pytest.fixture
def canned() -> CannedAnswers:
    return CannedAnswers()


@pytest.fixture
def canned_url(canned: CannedAnswers) -> Iterator[str]:
    with run_server(canned.app) as url:
        yield url


@pytest.fixture
async def client(canned_url: str) -> AsyncIterator[CheckpointClient]:
    async with CheckpointClient(
        Endpoint.remote(canned_url), retry=RetryPolicy(max_attempts=1)
    ) as opened:
        yield opened


async def test_unknown_fields_are_ignored(canned: CannedAnswers, client: CheckpointClient) -> None:
    item = {**CHECKPOINT, "owner_project": "p-1", "new_flag": {"nested": [1, 2]}}
    canned.put("/api/v1/checkpoints", {"checkpoints": [item], "cursor": CURSOR, "extra": 1})
    page = await client.list_checkpoints()
    assert [c.tinker_path for c in page.items] == ["tinker://run-1/weights/0001"]
    assert page.items[0].size_bytes == 1234 and page.total == 1


async def test_a_wrong_type_names_the_field_and_the_endpoint(
    canned: CannedAnswers, client: CheckpointClient, canned_url: str
) -> None:
    item = {**CHECKPOINT, "size_bytes": "big"}
    canned.put("/api/v1/checkpoints", {"checkpoints": [CHECKPOINT, item], "cursor": CURSOR})
    with pytest.raises(BadResponse) as caught:
        await client.list_checkpoints()
    message = caught.value.message
    assert "$.checkpoints[1].size_bytes" in message
    assert "the list of checkpoints" in message and canned_url in message


async def test_a_negative_size_names_the_field(
    canned: CannedAnswers, client: CheckpointClient
) -> None:
    item = {**CHECKPOINT, "size_bytes": -1}
    canned.put("/api/v1/checkpoints", {"checkpoints": [CHECKPOINT, item], "cursor": CURSOR})
    with pytest.raises(BadResponse) as caught:
        await client.list_checkpoints()
    assert "$.checkpoints[1].size_bytes" in caught.value.message


async def test_a_missing_field_is_named(canned: CannedAnswers, client: CheckpointClient) -> None:
    run = {"training_run_id": "run-1", "model_owner": "me", "is_lora": True}
    run["last_request_time"] = "2025-03-01T12:00:00Z"
    canned.put("/api/v1/training_runs/run-1", run)
    with pytest.raises(BadResponse) as caught:
        await client.get_training_run("run-1")
    assert "base_model" in caught.value.message
    assert "training run 'run-1'" in caught.value.message


async def test_an_unknown_checkpoint_type_is_a_bad_response(
    canned: CannedAnswers, client: CheckpointClient
) -> None:
    item = {**CHECKPOINT, "checkpoint_type": "mystery"}
    canned.put("/api/v1/training_runs/run-1/checkpoints", {"checkpoints": [item]})
    with pytest.raises(BadResponse) as caught:
        await client.list_run_checkpoints("run-1")
    assert "$.checkpoints[0].checkpoint_type" in caught.value.message


async def test_a_list_without_a_cursor_is_a_bad_response(
    canned: CannedAnswers, client: CheckpointClient
) -> None:
    canned.put("/api/v1/checkpoints", {"checkpoints": [CHECKPOINT], "cursor": None})
    with pytest.raises(BadResponse) as caught:
        await client.list_checkpoints()
    assert "cursor" in caught.value.message


async def test_not_json_is_a_bad_response(canned: CannedAnswers, client: CheckpointClient) -> None:
    canned.put("/api/v1/weights_info", b"<html>gateway says hi</html>")
    with pytest.raises(BadResponse) as caught:
        await client.weights_info("tinker://run-1/weights/0001")
    assert "weights info of tinker://run-1/weights/0001" in caught.value.message
    assert "gateway says hi" in caught.value.detail


async def test_times_without_a_zone_are_utc_and_others_are_converted(
    canned: CannedAnswers, client: CheckpointClient
) -> None:
    naive = {**CHECKPOINT, "time": "2025-03-01T12:00:00"}
    offset = {**CHECKPOINT, "checkpoint_id": "weights/0002", "time": "2025-03-01T14:00:00+02:00"}
    offset["tinker_path"] = "tinker://run-1/weights/0002"
    offset["expires_at"] = "2025-04-01T02:00:00+02:00"
    canned.put("/api/v1/training_runs/run-1/checkpoints", {"checkpoints": [naive, offset]})
    first, second = await client.list_run_checkpoints("run-1")
    noon = datetime(2025, 3, 1, 12, tzinfo=timezone.utc)
    assert first.time == noon and first.time.tzinfo is timezone.utc
    assert second.time == noon and second.time.tzinfo is timezone.utc
    assert second.expires_at == datetime(2025, 4, 1, tzinfo=timezone.utc)
    assert second.expires_at.tzinfo is timezone.utc
