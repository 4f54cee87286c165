"""Ids that try to escape the store, sent over HTTP: refused (400/404), no file touched."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from ckpt_tui.store import Store
from tests.support.seed import seed_store

RUNS = "/api/v1/training_runs"
ATTACKS = [
    ("GET", f"{RUNS}/%2e%2e"),
    ("GET", f"{RUNS}/%2e%2e/checkpoints"),
    ("GET", f"{RUNS}/run-000%5c..%5c..%5cvictim"),
    ("GET", f"{RUNS}/run%00000"),
    ("DELETE", f"{RUNS}/%2e%2e/checkpoints/weights/0000"),
    ("DELETE", f"{RUNS}/run-000/checkpoints/weights/%2e%2e"),
    ("DELETE", f"{RUNS}/run-000/checkpoints/weights/%2e%2e%2f%2e%2e%2f%2e%2e%2fvictim.txt"),
    ("DELETE", f"{RUNS}/run-000/checkpoints/weights/..%5c..%5cvictim.txt"),
    ("DELETE", f"{RUNS}/run-000/checkpoints/weights/0000%00"),
    ("DELETE", f"{RUNS}/run-000/checkpoints/%2e%2e/0000"),
    ("DELETE", f"{RUNS}/run-000/checkpoints/%2fetc/passwd"),
    ("POST", f"{RUNS}/run-000/checkpoints/weights/%2e%2e/publish"),
    ("PUT", f"{RUNS}/%2e%2e/checkpoints/weights/0000/ttl"),
]


def data_files(root: Path) -> set[Path]:
    """Every checkpoint data file and the victim outside the store."""
    return {p for p in root.rglob("*") if p.name in ("adapter.bin", "victim.txt")}


@pytest.mark.parametrize(("method", "path"), ATTACKS)
def test_path_attacks_touch_nothing(
    server_url: str, store: Store, tmp_path: Path, method: str, path: str
) -> None:
    seed_store(store, runs=1, per_run=2)
    (tmp_path / "victim.txt").write_text("keep me")
    before = data_files(tmp_path)
    body = {"ttl_seconds": 3600} if method == "PUT" else None
    # A raw URL string keeps httpx from normalising the encoded dots.
    answer = httpx.request(method, f"{server_url}{path}", json=body)
    assert answer.status_code in (400, 404, 405), answer.text
    assert answer.json()["detail"]
    assert data_files(tmp_path) == before
    assert len(store.list_run_checkpoints("run-000")) == 2


@pytest.mark.parametrize(
    "tinker_path",
    ["tinker://../weights/0000", "tinker://run-000/weights/..", "tinker://run-000/weights/a\\b",
     "tinker://run-000/weights/a\x00b", "tinker://./weights/0000"],
)  # fmt: skip
def test_weights_info_refuses_unsafe_paths(server_url: str, store: Store, tinker_path: str) -> None:
    seed_store(store, runs=1, per_run=1)
    answer = httpx.post(f"{server_url}/api/v1/weights_info", json={"tinker_path": tinker_path})
    assert answer.status_code == 400
    assert answer.json()["detail"]
