"""Every endpoint of the client against a real uvicorn server over a real store."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from ckpt_tui.api_types import TinkerPath
from ckpt_tui.client import (
    BadRequestError,
    CheckpointClient,
    ConflictError,
    Endpoint,
    NotFoundError,
)
from ckpt_tui.client.errors import api_error
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support.seed import BASE_MODEL, path_of, seed_store


@pytest.fixture
def seeded(store: Store) -> list[tuple[str, str]]:
    return seed_store(store, runs=3, per_run=4)


async def test_healthz(client: CheckpointClient) -> None:
    assert await client.healthz() is True


async def test_training_runs(client: CheckpointClient, seeded: list[tuple[str, str]]) -> None:
    page = await client.list_training_runs(limit=2)
    assert page.total == 3
    assert page.offset == 0
    assert len(page.items) == 2
    run = await client.get_training_run("run-001")
    assert run.training_run_id == "run-001"
    assert run.base_model == BASE_MODEL
    assert run.last_checkpoint is not None


async def test_unknown_run_names_the_id(client: CheckpointClient) -> None:
    with pytest.raises(NotFoundError) as caught:
        await client.get_training_run("no-such-run")
    assert "no-such-run" in caught.value.message
    assert caught.value.status == 404
    assert caught.value.detail
    with pytest.raises(NotFoundError):
        await client.list_run_checkpoints("no-such-run")


async def test_run_checkpoints_oldest_first(
    client: CheckpointClient, seeded: list[tuple[str, str]]
) -> None:
    checkpoints = await client.list_run_checkpoints("run-002")
    ids = [c.checkpoint_id for c in checkpoints]
    assert ids == [cid for run, cid in seeded if run == "run-002"]
    assert all(c.run_id == "run-002" for c in checkpoints)


async def test_one_page_of_checkpoints_newest_first(
    client: CheckpointClient, seeded: list[tuple[str, str]]
) -> None:
    page = await client.list_checkpoints(limit=5, offset=2)
    assert page.total == len(seeded)
    assert page.offset == 2
    newest_first = [path_of(pair) for pair in reversed(seeded)]
    assert [c.tinker_path for c in page.items] == newest_first[2:7]


async def test_weights_info(client: CheckpointClient, seeded: list[tuple[str, str]]) -> None:
    info = await client.weights_info(path_of(seeded[0]))
    assert info.base_model == BASE_MODEL
    assert info.is_lora is True
    assert info.lora_rank == 32


async def test_publish_and_unpublish(
    client: CheckpointClient, store: Store, seeded: list[tuple[str, str]]
) -> None:
    run_id, checkpoint_id = seeded[3]
    await client.publish(TinkerPath.parse(path_of(seeded[3])))
    assert store.get_checkpoint(run_id, checkpoint_id).public is True
    with pytest.raises(ConflictError) as caught:
        await client.publish(path_of(seeded[3]))
    assert path_of(seeded[3]) in caught.value.message
    await client.unpublish(store.get_checkpoint(run_id, checkpoint_id))
    assert store.get_checkpoint(run_id, checkpoint_id).public is False
    with pytest.raises(ConflictError):
        await client.unpublish(path_of(seeded[3]))


async def test_set_and_clear_ttl(
    client: CheckpointClient, store: Store, clock: FixedClock, seeded: list[tuple[str, str]]
) -> None:
    run_id, checkpoint_id = seeded[1]
    await client.set_ttl(path_of(seeded[1]), 7200)
    expires = store.get_checkpoint(run_id, checkpoint_id).expires_at
    assert expires == clock.now() + timedelta(seconds=7200)
    await client.set_ttl(path_of(seeded[1]), None)
    assert store.get_checkpoint(run_id, checkpoint_id).expires_at is None
    with pytest.raises(BadRequestError) as caught:
        await client.set_ttl(path_of(seeded[1]), 5)
    assert caught.value.status == 400


async def test_delete(
    client: CheckpointClient, store: Store, seeded: list[tuple[str, str]]
) -> None:
    await client.delete_checkpoint(path_of(seeded[0]))
    remaining = [c.tinker_path for c in await client.list_run_checkpoints(seeded[0][0])]
    assert path_of(seeded[0]) not in remaining
    with pytest.raises(NotFoundError) as caught:
        await client.delete_checkpoint(path_of(seeded[0]))
    assert path_of(seeded[0]) in caught.value.message


@pytest.mark.parametrize(
    "bad", ["weights/0001", "tinker://run/oops/0001", "tinker://run/weights/..", "tinker://a/b"]
)
async def test_bad_tinker_path_is_refused_before_sending(
    client: CheckpointClient, bad: str
) -> None:
    with pytest.raises(BadRequestError) as caught:
        await client.delete_checkpoint(bad)
    assert "refused before sending" in caught.value.message


def test_a_local_backend_without_a_transport_is_refused(tmp_path: Path) -> None:
    """The client never opens a store itself: the command line hands it a transport."""
    with pytest.raises(ValueError, match="needs a transport"):
        CheckpointClient(Endpoint.local(tmp_path))


def test_a_409_to_a_read_is_no_refused_change() -> None:
    """A server that answers 409 to a GET (the folder cannot be read as a checkpoint's)
    refused no change: the message says what could not be read."""
    url, subject = "http://box:8080", "download URLs of tinker://run/weights/x"
    read = api_error(409, "not a folder", url=url, subject=subject, credential=None, reading=True)
    assert read.message == f"{subject} could not be read: not a folder"
    change = api_error(409, "it is public", url=url, subject="checkpoint p", credential=None)
    assert change.message == "checkpoint p cannot be changed: it is public"
