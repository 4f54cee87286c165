"""Pagination of the two list endpoints: totals, order, no gaps or duplicates, bad input."""

from __future__ import annotations

import httpx
import pytest

from ckpt_tui.server.params import MAX_LIMIT
from ckpt_tui.store import Store
from tests.support.seed import seed_store

API = "/api/v1"


def test_checkpoint_pages_cover_everything_once(server_url: str, store: Store) -> None:
    made = seed_store(store, runs=3, per_run=15)
    expected = [f"tinker://{run}/{ckpt}" for run, ckpt in reversed(made)]
    seen: list[str] = []
    with httpx.Client(base_url=server_url) as api:
        for offset in range(0, 50, 10):
            body = api.get(f"{API}/checkpoints", params={"limit": 10, "offset": offset}).json()
            assert body["cursor"] == {"offset": offset, "limit": 10, "total_count": 45}
            seen.extend(c["tinker_path"] for c in body["checkpoints"])
    assert seen == expected


def test_run_pages_default_to_twenty(server_url: str, store: Store) -> None:
    seed_store(store, runs=25, per_run=1)
    with httpx.Client(base_url=server_url) as api:
        first = api.get(f"{API}/training_runs").json()
        second = api.get(f"{API}/training_runs", params={"offset": 20}).json()
    assert first["cursor"] == {"offset": 0, "limit": 20, "total_count": 25}
    assert second["cursor"] == {"offset": 20, "limit": 20, "total_count": 25}
    ids = [r["training_run_id"] for r in first["training_runs"] + second["training_runs"]]
    assert len(ids) == len(set(ids)) == 25
    assert ids == [r.training_run_id for r in store.list_runs(0, None)[0]]


def test_offset_past_the_end_and_limit_zero(server_url: str, store: Store) -> None:
    seed_store(store, runs=1, per_run=3)
    with httpx.Client(base_url=server_url) as api:
        past = api.get(f"{API}/checkpoints", params={"offset": 50}).json()
        zero = api.get(f"{API}/checkpoints", params={"limit": 0}).json()
    assert past == {"checkpoints": [], "cursor": {"offset": 50, "limit": 100, "total_count": 3}}
    assert zero["checkpoints"] == []
    assert zero["cursor"]["total_count"] == 3


def test_huge_limit_is_capped(server_url: str, store: Store) -> None:
    with httpx.Client(base_url=server_url) as api:
        body = api.get(f"{API}/checkpoints", params={"limit": 10**9}).json()
    assert body["cursor"]["limit"] == MAX_LIMIT


@pytest.mark.parametrize("endpoint", ["checkpoints", "training_runs"])
@pytest.mark.parametrize(
    ("name", "value"),
    [("limit", "-1"), ("limit", "abc"), ("limit", "1.5"), ("offset", "-3"), ("offset", "1e3")],
)
def test_bad_limit_or_offset_is_400(server_url: str, endpoint: str, name: str, value: str) -> None:
    answer = httpx.get(f"{server_url}{API}/{endpoint}", params={name: value})
    assert answer.status_code == 400
    detail = answer.json()["detail"]
    assert name in detail
    assert "non-negative integer" in detail


def test_access_scope(server_url: str, store: Store) -> None:
    seed_store(store, runs=1, per_run=1)
    with httpx.Client(base_url=server_url) as api:
        for scope in ("owned", "accessible"):
            assert (
                api.get(f"{API}/training_runs", params={"access_scope": scope}).status_code == 200
            )
        bad = api.get(f"{API}/training_runs", params={"access_scope": "everyone"})
        assert bad.status_code == 400
        assert "access_scope" in bad.json()["detail"]
        bad_one = api.get(f"{API}/training_runs/run-000", params={"access_scope": "x"})
        assert bad_one.status_code == 400
