"""Retries, safe retried writes, typed errors: the client against a fault-injecting server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest

from ckpt_tui.client import (
    AuthError,
    CheckpointClient,
    ConnectionFailed,
    Endpoint,
    NotFoundError,
    RateLimitedError,
    RetryPolicy,
    ServerError,
    Timeout,
    Timeouts,
)
from ckpt_tui.store import Store
from tests.support.faulty_app import FaultyApp, RecordedSleeps
from tests.support.live_server import run_server
from tests.support.trickle_server import trickle_server

LIST = "/api/v1/checkpoints"


@pytest.fixture
def faulty_url(faulty: FaultyApp) -> Iterator[str]:
    with run_server(faulty) as url:
        yield url


@pytest.fixture
def sleeps() -> RecordedSleeps:
    return RecordedSleeps()


@pytest.fixture
async def client(faulty_url: str, sleeps: RecordedSleeps) -> AsyncIterator[CheckpointClient]:
    policy = RetryPolicy(sleep=sleeps, jitter=lambda: 1.0)
    async with CheckpointClient(Endpoint.remote(faulty_url), retry=policy) as opened:
        yield opened


async def test_503_then_ok_is_retried_with_backoff(
    client: CheckpointClient, faulty: FaultyApp, sleeps: RecordedSleeps, made: list[str]
) -> None:
    faulty.fail_first(2, status=503, path=LIST)
    page = await client.list_checkpoints()
    assert page.total == len(made)
    assert faulty.count("GET", LIST) == 3
    assert sleeps.delays == [0.25, 0.5]


async def test_429_honours_retry_after_capped(
    client: CheckpointClient, faulty: FaultyApp, sleeps: RecordedSleeps, made: list[str]
) -> None:
    faulty.fail_first(1, status=429, path=LIST, retry_after=7)
    faulty.fail_first(1, status=429, path=LIST, retry_after=1000)
    await client.list_checkpoints()
    assert sleeps.delays == [7.0, 30.0]


async def test_rate_limited_to_the_end_raises_rate_limited(
    client: CheckpointClient, faulty: FaultyApp, made: list[str]
) -> None:
    faulty.fail_first(10, status=429, path=LIST, retry_after=2)
    with pytest.raises(RateLimitedError) as caught:
        await client.list_checkpoints()
    assert caught.value.retry_after == 2.0
    assert faulty.count("GET", LIST) == 4


async def test_server_errors_to_the_end_raise_server_error(
    client: CheckpointClient, faulty: FaultyApp, faulty_url: str
) -> None:
    faulty.fail_first(10, status=500, path="/api/v1/training_runs")
    with pytest.raises(ServerError) as caught:
        await client.get_training_run("run-000")
    assert caught.value.status == 500
    assert faulty_url in caught.value.message
    assert "injected fault 500" in caught.value.detail
    assert faulty.count("GET") == 4


async def test_delete_performed_then_503_counts_as_done(
    client: CheckpointClient, faulty: FaultyApp, store: Store, made: list[str]
) -> None:
    faulty.drop_response(1, status=503, method="DELETE")
    await client.delete_checkpoint(made[0])
    assert faulty.count("DELETE") == 2
    assert made[0] not in [c.tinker_path for c in store.list_checkpoints(0, 100)[0]]


async def test_publish_and_unpublish_performed_then_503_count_as_done(
    client: CheckpointClient, faulty: FaultyApp, store: Store, made: list[str]
) -> None:
    run_id, checkpoint_id = made[2].removeprefix("tinker://").split("/", 1)
    faulty.drop_response(1, status=502, method="POST", path="/publish")
    await client.publish(made[2])
    assert store.get_checkpoint(run_id, checkpoint_id).public is True
    faulty.drop_response(1, status=500, method="DELETE", path="/publish")
    await client.unpublish(made[2])
    assert store.get_checkpoint(run_id, checkpoint_id).public is False
    assert faulty.count(path="/publish") == 4


async def test_404_after_a_429_is_a_real_not_found(
    client: CheckpointClient, faulty: FaultyApp, made: list[str]
) -> None:
    # A 429 means the delete was not performed, so a 404 afterwards is not "done by us".
    faulty.fail_first(1, status=429, method="DELETE")
    with pytest.raises(NotFoundError):
        await client.delete_checkpoint("tinker://run-000/weights/7777")


async def test_read_timeout_raises_timeout(faulty: FaultyApp, faulty_url: str) -> None:
    faulty.delay = 1.0
    backend = Endpoint.remote(faulty_url)
    async with CheckpointClient(backend, timeouts=Timeouts(connect=5, read=0.1)) as client:
        with pytest.raises(Timeout) as caught:
            await client.healthz()
    assert faulty_url in caught.value.message
    assert faulty.count("GET") == 1


async def test_an_answer_that_trickles_in_ends_at_the_attempt_deadline() -> None:
    """Headers promising 1,000,000 bytes, then a byte now and then: each read comes in time,
    so the read timeout never fired and the call waited for good. Now the attempt's deadline
    ends it, as a timeout (not retried: the server may have acted)."""
    policy = RetryPolicy(sleep=RecordedSleeps(), attempt_deadline=1.0)
    with trickle_server() as server:
        async with CheckpointClient(Endpoint.remote(server.url), retry=policy) as client:
            with pytest.raises(Timeout) as caught:
                await asyncio.wait_for(client.list_checkpoints(), 120)  # hang guard only
        assert server.requests == 1
    assert f"{server.url} did not finish answering" in caught.value.message
    assert "within 1 s" in caught.value.message


async def test_connection_refused_names_the_url(refused_url: str) -> None:
    url = refused_url
    sleeps = RecordedSleeps()
    async with CheckpointClient(Endpoint.remote(url), retry=RetryPolicy(sleep=sleeps)) as client:
        with pytest.raises(ConnectionFailed) as caught:
            await client.list_checkpoints()
    message = caught.value.message
    assert (
        message == f"could not connect to {url}: connection refused — is `ckpt-tui serve` running?"
    )
    assert len(sleeps.delays) == 3


async def test_wrong_key_is_an_auth_error_naming_its_source(keyed_url: str) -> None:
    backend = Endpoint.remote(keyed_url, "tml-wrong", "TINKER_API_KEY")
    async with CheckpointClient(backend) as client:
        assert await client.healthz() is True  # open without a key
        with pytest.raises(AuthError) as caught:
            await client.list_checkpoints()
    assert caught.value.status == 401
    assert caught.value.message.startswith(
        f"the API key from TINKER_API_KEY was refused by {keyed_url}: "
    )
    assert "tml-wrong" not in caught.value.message


async def test_missing_key_says_how_to_give_one(keyed_url: str) -> None:
    async with CheckpointClient(Endpoint.remote(keyed_url)) as client:
        with pytest.raises(AuthError) as caught:
            await client.list_training_runs()
    assert "--api-key" in caught.value.message
    assert "TINKER_API_KEY" in caught.value.message


async def test_right_key_is_sent_as_x_api_key(keyed_url: str, made: list[str]) -> None:
    backend = Endpoint.remote(keyed_url, "tml-right", "--api-key flag")
    async with CheckpointClient(backend) as client:
        assert (await client.list_checkpoints()).total == len(made)


async def test_key_travels_in_the_x_api_key_header(faulty: FaultyApp, faulty_url: str) -> None:
    backend = Endpoint.remote(faulty_url, "tml-sent", "--api-key flag")
    async with CheckpointClient(backend) as client:
        await client.list_checkpoints()
    assert faulty.requests[0] == ("POST", "/api/v1/client/config")  # the SDK's start-up
    assert [headers["x-api-key"] for headers in faulty.headers] == ["tml-sent", "tml-sent"]
    assert "authorization" not in faulty.headers[-1]
