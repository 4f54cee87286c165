"""Every endpoint of the spec through a real uvicorn server: shapes, statuses, ordering."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import httpx
import pytest
from msgspec import to_builtins

from ckpt_tui.api_types import format_time
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support.seed import seed_store

API = "/api/v1"


@pytest.fixture
def api(server_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server_url) as client:
        yield client


def test_healthz_and_sdk_startup_calls(api: httpx.Client) -> None:
    health = api.get(f"{API}/healthz").json()
    assert health["status"] == "ok" and len(health["store_id"]) == 32  # which store it serves
    config = api.post(f"{API}/client/config", json={"sdk_version": "0.38.0"})
    assert (config.status_code, config.json()) == (200, {})
    telemetry = api.post(f"{API}/telemetry", json={"events": []})
    assert telemetry.json() == {"status": "accepted"}
    dynamic = api.post(f"{API}/client/dynamic_config", json={})
    assert dynamic.status_code == 404
    assert "detail" in dynamic.json()


def test_empty_store_lists(api: httpx.Client) -> None:
    runs = api.get(f"{API}/training_runs").json()
    assert runs == {"training_runs": [], "cursor": {"offset": 0, "limit": 20, "total_count": 0}}
    checkpoints = api.get(f"{API}/checkpoints").json()
    assert checkpoints == {
        "checkpoints": [],
        "cursor": {"offset": 0, "limit": 100, "total_count": 0},
    }


def test_run_endpoints_match_the_store(api: httpx.Client, store: Store) -> None:
    seed_store(store, runs=2, per_run=3)
    listed = api.get(f"{API}/training_runs").json()
    expected = [to_builtins(run) for run in store.list_runs()[0]]
    assert listed["training_runs"] == expected
    assert listed["cursor"]["total_count"] == 2
    one = api.get(f"{API}/training_runs/run-001", params={"access_scope": "owned"})
    assert one.json() == to_builtins(store.get_run("run-001"))
    assert one.json()["last_checkpoint"]["checkpoint_id"] == "weights/0002"


def test_run_checkpoints_oldest_first_unpaginated(api: httpx.Client, store: Store) -> None:
    seed_store(store, runs=2, per_run=3)
    body = api.get(f"{API}/training_runs/run-000/checkpoints").json()
    assert body["cursor"] is None
    ids = [c["checkpoint_id"] for c in body["checkpoints"]]
    assert ids == ["weights/0000", "weights/0001", "weights/0002"]
    first = body["checkpoints"][0]
    assert first["tinker_path"] == "tinker://run-000/weights/0000"
    assert set(first) == {
        "checkpoint_id", "checkpoint_type", "time", "tinker_path",
        "size_bytes", "public", "user_metadata", "expires_at",
    }  # fmt: skip


def test_unknown_run_is_404(api: httpx.Client) -> None:
    for path in (f"{API}/training_runs/nope", f"{API}/training_runs/nope/checkpoints"):
        answer = api.get(path)
        assert answer.status_code == 404
        assert "nope" in answer.json()["detail"]


def test_all_checkpoints_newest_first(api: httpx.Client, store: Store) -> None:
    made = seed_store(store, runs=3, per_run=2)
    body = api.get(f"{API}/checkpoints").json()
    listed = [(c["tinker_path"]) for c in body["checkpoints"]]
    assert listed == [f"tinker://{run}/{ckpt}" for run, ckpt in reversed(made)]
    assert body["cursor"] == {"offset": 0, "limit": 100, "total_count": 6}


def test_delete_then_gone(api: httpx.Client, store: Store) -> None:
    seed_store(store, runs=1, per_run=2)
    url = f"{API}/training_runs/run-000/checkpoints/weights/0000"
    assert api.delete(url).status_code == 204
    ids = [c.checkpoint_id for c in store.list_run_checkpoints("run-000")]
    assert ids == ["weights/0001"]
    again = api.delete(url)
    assert again.status_code == 404
    assert again.json()["detail"]


def test_publish_and_unpublish_with_conflicts(api: httpx.Client, store: Store) -> None:
    seed_store(store, runs=1, per_run=1)
    url = f"{API}/training_runs/run-000/checkpoints/weights/0000/publish"
    assert api.post(url).status_code == 204
    assert store.get_checkpoint("run-000", "weights/0000").public is True
    assert api.post(url).status_code == 409
    assert api.delete(url).status_code == 204
    assert store.get_checkpoint("run-000", "weights/0000").public is False
    conflict = api.delete(url)
    assert conflict.status_code == 409
    assert conflict.json()["detail"]
    assert api.post(f"{API}/training_runs/run-000/checkpoints/weights/9/publish").status_code == 404


def test_set_and_remove_ttl(api: httpx.Client, store: Store, clock: FixedClock) -> None:
    seed_store(store, runs=1, per_run=1)
    url = f"{API}/training_runs/run-000/checkpoints/weights/0000/ttl"
    assert api.put(url, json={"ttl_seconds": 7200}).status_code == 204
    expected = format_time(clock.now() + timedelta(seconds=7200))
    listed = api.get(f"{API}/checkpoints").json()["checkpoints"][0]
    assert listed["expires_at"] == expected
    assert api.put(url, json={"ttl_seconds": None}).status_code == 204
    assert store.get_checkpoint("run-000", "weights/0000").expires_at is None


@pytest.mark.parametrize(
    "body",
    [{"ttl_seconds": 10}, {"ttl_seconds": True}, {"ttl_seconds": 7200.5}, {"ttl_seconds": "7200"},
     {}, [7200], "7200"],
)  # fmt: skip
def test_bad_ttl_bodies_are_400(api: httpx.Client, store: Store, body: object) -> None:
    seed_store(store, runs=1, per_run=1)
    url = f"{API}/training_runs/run-000/checkpoints/weights/0000/ttl"
    answer = api.put(url, json=body)
    assert answer.status_code == 400
    assert answer.json()["detail"]
    assert store.get_checkpoint("run-000", "weights/0000").expires_at is None


def test_invalid_json_is_400(api: httpx.Client, store: Store) -> None:
    seed_store(store, runs=1, per_run=1)
    url = f"{API}/training_runs/run-000/checkpoints/weights/0000/ttl"
    answer = api.put(url, content=b"{not json", headers={"content-type": "application/json"})
    assert answer.status_code == 400
    assert "JSON" in answer.json()["detail"]
    huge = api.post(f"{API}/weights_info", content=b" " * 100_000)
    assert huge.status_code == 413


def test_weights_info(api: httpx.Client, store: Store) -> None:
    seed_store(store, runs=1, per_run=1)
    path = "tinker://run-000/weights/0000"
    answer = api.post(f"{API}/weights_info", json={"tinker_path": path})
    assert answer.status_code == 200
    body = answer.json()
    assert set(body) == {
        "base_model", "is_lora", "lora_rank", "train_mlp", "train_attn", "train_unembed"
    }  # fmt: skip
    assert (body["base_model"], body["is_lora"], body["lora_rank"]) == ("Qwen/Qwen3-8B", True, 32)


@pytest.mark.parametrize(
    ("body", "status"),
    [({"tinker_path": "tinker://run-000/weights/9999"}, 404),
     ({"tinker_path": "tinker://nope/weights/0000"}, 404),
     ({"tinker_path": "tinker://run-000/bogus/0000"}, 400),
     ({"tinker_path": "s3://bucket/x"}, 400),
     ({"tinker_path": 5}, 400),
     ({}, 400)],
)  # fmt: skip
def test_weights_info_errors(
    api: httpx.Client, store: Store, body: dict[str, object], status: int
) -> None:
    seed_store(store, runs=1, per_run=1)
    answer = api.post(f"{API}/weights_info", json=body)
    assert answer.status_code == status
    assert answer.json()["detail"]


def test_checkpoint_named_like_an_action(api: httpx.Client, store: Store) -> None:
    store.create_run("run-x", "Qwen/Qwen3-8B")
    store.add_checkpoint("run-x", "weights/publish", {"a.bin": b"1"})
    store.add_checkpoint("run-x", "sampler_weights/ttl", {"a.bin": b"1"})
    base = f"{API}/training_runs/run-x/checkpoints"
    assert api.post(f"{base}/weights/publish/publish").status_code == 204
    assert api.put(f"{base}/sampler_weights/ttl/ttl", json={"ttl_seconds": 3600}).status_code == 204
    assert api.delete(f"{base}/weights/publish").status_code == 204
    assert api.delete(f"{base}/sampler_weights/ttl").status_code == 204
    assert store.list_run_checkpoints("run-x") == []


def test_unknown_routes_and_methods_are_json(api: httpx.Client, store: Store) -> None:
    seed_store(store, runs=1, per_run=1)
    missing = api.get(f"{API}/nothing/here")
    assert missing.status_code == 404
    assert "no such endpoint" in missing.json()["detail"]
    wrong_method = api.put(f"{API}/training_runs/run-000/checkpoints/weights/0000")
    assert wrong_method.status_code == 405
    assert "DELETE" in wrong_method.json()["detail"]
    get_one = api.get(f"{API}/training_runs/run-000/checkpoints/weights/0000")
    assert get_one.status_code == 405
    assert get_one.json()["detail"]
    too_deep = api.delete(f"{API}/training_runs/run-000/checkpoints/weights/0000/x/y")
    assert too_deep.status_code == 404
