"""The API key: healthz stays open, everything else needs the key (401 otherwise)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from ckpt_tui.server import create_app
from ckpt_tui.store import Store
from tests.support.live_server import run_server

KEY = "tml-s3cret-key"
API = "/api/v1"


@pytest.fixture
def secured_url(store: Store) -> Iterator[str]:
    with run_server(create_app(store, api_key=KEY, sweep_interval=None)) as url:
        yield url


def test_healthz_needs_no_key(secured_url: str) -> None:
    assert httpx.get(f"{secured_url}{API}/healthz").json()["status"] == "ok"


def test_missing_key_is_401(secured_url: str) -> None:
    for method, path in (("GET", "/checkpoints"), ("POST", "/client/config"), ("GET", "/x")):
        answer = httpx.request(method, f"{secured_url}{API}{path}")
        assert answer.status_code == 401
        assert "missing API key" in answer.json()["detail"]


def test_wrong_key_is_401_and_no_key_is_echoed(secured_url: str) -> None:
    wrong = "tml-guess-123"
    answer = httpx.get(f"{secured_url}{API}/training_runs", headers={"X-API-Key": wrong})
    assert answer.status_code == 401
    assert "wrong API key" in answer.json()["detail"]
    assert wrong not in answer.text
    assert KEY not in answer.text


def test_right_key_in_either_header(secured_url: str) -> None:
    by_header = httpx.get(f"{secured_url}{API}/training_runs", headers={"X-API-Key": KEY})
    assert by_header.status_code == 200
    bearer = {"Authorization": f"Bearer {KEY}"}
    assert httpx.get(f"{secured_url}{API}/checkpoints", headers=bearer).status_code == 200


def test_without_a_key_no_header_is_needed(server_url: str) -> None:
    assert httpx.get(f"{server_url}{API}/checkpoints").status_code == 200


def test_empty_key_is_refused(store: Store) -> None:
    with pytest.raises(ValueError, match="api_key"):
        create_app(store, api_key="")
