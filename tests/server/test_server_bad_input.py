"""Bad HTTP input gets a 4xx, never a 500; a 4xx a retry cannot fix says `x-should-retry:
false`; 429 and 503 say `Retry-After`; ckpt-tui's own client obeys the header. Against a
real uvicorn server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from ckpt_tui.client import CheckpointClient, ConflictError, Endpoint, RetryPolicy, ServerError
from ckpt_tui.server import create_app
from ckpt_tui.server.error_responses import response_for
from ckpt_tui.store import Store, StoreError
from tests.support.faulty_app import FaultyApp, RecordedSleeps
from tests.support.live_server import run_server
from tests.support.seed import seed_store

API = "/api/v1"
P0 = "tinker://run-000/weights/0000"
CHECKPOINT = f"{API}/training_runs/run-000/checkpoints/weights/0000"
DEEP = b"[" * 20_000 + b"]" * 20_000
DEEP_OBJECT = b'{"a":' * 10_000 + b"1" + b"}" * 10_000
MANY_DIGITS = "9" * 5_000


@pytest.fixture
def seeded_url(store: Store) -> Iterator[str]:
    seed_store(store, runs=1, per_run=2)
    with run_server(create_app(store, sweep_interval=None)) as url:
        yield url


def no_retry(response: httpx.Response) -> None:
    assert response.headers.get("x-should-retry") == "false", response.headers


BODIES = [DEEP, DEEP_OBJECT, b'{"ttl_seconds": ' + MANY_DIGITS.encode() + b"}"]


@pytest.mark.parametrize("body", BODIES, ids=["deep-array", "deep-object", "5000-digits"])
@pytest.mark.parametrize(
    ("method", "path"), [("PUT", f"{CHECKPOINT}/ttl"), ("POST", f"{API}/weights_info")]
)
def test_bodies_nested_too_deep_or_too_long_numbers_get_400(
    seeded_url: str, store: Store, body: bytes, method: str, path: str
) -> None:
    assert len(body) < 64 * 1024
    before = store.get_checkpoint("run-000", "weights/0000")
    response = httpx.request(method, seeded_url + path, content=body)
    assert response.status_code == 400, response.text
    assert "detail" in response.json()
    no_retry(response)
    assert store.get_checkpoint("run-000", "weights/0000") == before


@pytest.mark.parametrize(
    "ttl", [10**4000, -(10**4000), 2**63], ids=["4001-digits", "-4001-digits", "2**63"]
)
def test_huge_but_parseable_ttls_get_400(seeded_url: str, ttl: int) -> None:
    body = b'{"ttl_seconds": ' + str(ttl).encode() + b"}"
    response = httpx.put(f"{seeded_url}{CHECKPOINT}/ttl", content=body)
    assert response.status_code == 400, response.text
    no_retry(response)


@pytest.mark.parametrize("route", ["/checkpoints", "/training_runs"])
@pytest.mark.parametrize("name", ["offset", "limit"])
@pytest.mark.parametrize(
    "value", [MANY_DIGITS, str(2**63), "0" * 30 + "1"], ids=["5000-digits", "2**63", "zeros-then-1"]
)
def test_huge_offsets_and_limits_get_400(
    seeded_url: str, route: str, name: str, value: str
) -> None:
    response = httpx.get(f"{seeded_url}{API}{route}", params={name: value})
    if value.lstrip("0") == "1":  # many leading zeros are still a small number
        assert response.status_code == 200, response.text
        return
    assert response.status_code == 400, response.text
    assert len(response.json()["detail"]) < 200  # the 5,000 digits are not echoed back
    no_retry(response)


def test_every_4xx_a_retry_cannot_fix_says_so(seeded_url: str, store: Store) -> None:
    answers = {
        "400 bad offset": httpx.get(f"{seeded_url}{API}/checkpoints?offset=x"),
        "400 bad name": httpx.delete(f"{seeded_url}{API}/training_runs/a%5Cb/checkpoints/w/1"),
        "404 no endpoint": httpx.get(f"{seeded_url}{API}/nope"),
        "404 no checkpoint": httpx.delete(f"{seeded_url}{CHECKPOINT[:-1]}9"),
        "405 method": httpx.put(f"{seeded_url}{CHECKPOINT}"),
        "413 body": httpx.post(f"{seeded_url}{API}/weights_info", content=b" " * 70_000),
    }
    httpx.post(f"{seeded_url}{CHECKPOINT}/publish").raise_for_status()
    answers["409 published twice"] = httpx.post(f"{seeded_url}{CHECKPOINT}/publish")
    httpx.delete(f"{seeded_url}{CHECKPOINT}/publish").raise_for_status()
    answers["409 unpublished twice"] = httpx.delete(f"{seeded_url}{CHECKPOINT}/publish")
    for what, response in answers.items():
        assert str(response.status_code) == what.split()[0], (what, response.text)
        assert response.headers.get("x-should-retry") == "false", what


def test_401_says_no_retry(store: Store) -> None:
    seed_store(store, runs=1, per_run=1)
    with run_server(create_app(store, api_key="tml-k", sweep_interval=None)) as url:
        response = httpx.get(f"{url}{API}/checkpoints")
    assert response.status_code == 401
    no_retry(response)


def test_a_bare_store_error_is_a_409_not_a_500() -> None:
    response = response_for(StoreError("refusing to touch X: it is a symbolic link"))
    assert response.status_code == 409
    assert response.headers["x-should-retry"] == "false"
    assert b"symbolic link" in response.body


@pytest.fixture
def faulty(store: Store) -> FaultyApp:
    seed_store(store, runs=1, per_run=2)
    return FaultyApp(create_app(store, sweep_interval=None))


@pytest.fixture
async def client(faulty: FaultyApp) -> AsyncIterator[tuple[CheckpointClient, RecordedSleeps]]:
    sleeps = RecordedSleeps()
    with run_server(faulty) as url:
        policy = RetryPolicy(sleep=sleeps, jitter=lambda: 1.0)
        async with CheckpointClient(Endpoint.remote(url), retry=policy) as opened:
            yield opened, sleeps


async def test_the_client_does_not_retry_what_the_server_says_not_to(
    client: tuple[CheckpointClient, RecordedSleeps], faulty: FaultyApp
) -> None:
    checkpoints, sleeps = client
    faulty.fail_first(5, status=503, path="/checkpoints", headers={"x-should-retry": "false"})
    with pytest.raises(ServerError):
        await checkpoints.list_checkpoints()
    assert faulty.count("GET", "/checkpoints") == 1 and sleeps.delays == []


async def test_the_client_retries_what_the_server_says_to(
    client: tuple[CheckpointClient, RecordedSleeps], faulty: FaultyApp
) -> None:
    checkpoints, _sleeps = client
    faulty.fail_first(1, status=409, path="/checkpoints", headers={"x-should-retry": "true"})
    page = await checkpoints.list_checkpoints()
    assert page.total == 2 and faulty.count("GET", "/checkpoints") == 2


async def test_the_client_waits_as_a_503_retry_after_says(
    client: tuple[CheckpointClient, RecordedSleeps], faulty: FaultyApp
) -> None:
    checkpoints, sleeps = client
    faulty.fail_first(1, status=503, path="/checkpoints", retry_after=3)
    await checkpoints.list_checkpoints()
    assert sleeps.delays == [3.0]


async def test_publishing_twice_fails_at_once(
    client: tuple[CheckpointClient, RecordedSleeps], faulty: FaultyApp
) -> None:
    checkpoints, sleeps = client
    await checkpoints.publish(P0)
    with pytest.raises(ConflictError):
        await checkpoints.publish(P0)
    assert faulty.count("POST", "/publish") == 2 and sleeps.delays == []
