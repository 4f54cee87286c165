"""`serve --jwt`: the client config switches JWT exchange on, the key buys short-lived JWTs at
/auth/token, and every other endpoint takes only a valid, unexpired JWT."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import jwt
import pytest

from ckpt_tui.server import create_app
from ckpt_tui.server.tokens import JwtIssuer
from ckpt_tui.store import Store
from tests.support.live_server import run_server

KEY = "tml-jwt-server-key"
API = "/api/v1"
INVALID_TOKEN = 'Bearer error="invalid_token"'


@pytest.fixture
def issuer() -> JwtIssuer:
    return JwtIssuer(lifetime=900)


@pytest.fixture
def jwt_url(store: Store, issuer: JwtIssuer) -> Iterator[str]:
    with run_server(create_app(store, api_key=KEY, jwt=issuer, sweep_interval=None)) as url:
        yield url


def exchange(url: str, key: str = KEY) -> httpx.Response:
    return httpx.post(f"{url}{API}/auth/token", json={}, headers={"X-API-Key": key})


def token_of(url: str) -> str:
    answer = exchange(url)
    assert answer.status_code == 200, answer.text
    value = answer.json()["jwt"]
    assert isinstance(value, str)
    return value


def test_client_config_says_what_the_server_does(store: Store, issuer: JwtIssuer) -> None:
    modes = [
        ({}, {}),
        ({"api_key": KEY}, {}),
        ({"api_key": KEY, "jwt": issuer}, {"pjwt_auth_enabled": True}),
        (
            {"api_key": KEY, "jwt": issuer, "credential_cmd": True},
            {"pjwt_auth_enabled": True, "credential_default_source": "credential_cmd"},
        ),
    ]
    for options, expected in modes:
        with run_server(create_app(store, sweep_interval=None, **options)) as url:  # type: ignore[arg-type]
            answer = httpx.post(f"{url}{API}/client/config", headers={"X-API-Key": KEY}, json={})
            assert answer.json() == expected


def test_healthz_and_client_config_need_nothing(jwt_url: str) -> None:
    assert httpx.get(f"{jwt_url}{API}/healthz").status_code == 200
    config = httpx.post(f"{jwt_url}{API}/client/config", json={"sdk_version": "0.38.0"})
    assert config.json() == {"pjwt_auth_enabled": True}


def test_the_key_buys_a_jwt_with_iat_and_exp(jwt_url: str, issuer: JwtIssuer) -> None:
    before = time.time()
    claims = jwt.decode(token_of(jwt_url), options={"verify_signature": False})
    assert claims["exp"] - claims["iat"] == 900
    assert before - 1 <= claims["iat"] <= time.time()
    assert issuer.issued == 1
    assert token_of(jwt_url) != token_of(jwt_url)  # each one is new (jti)


@pytest.mark.parametrize(("key", "why"), [(None, "missing API key"), ("tml-bad", "wrong API key")])
def test_the_exchange_needs_the_key(jwt_url: str, key: str | None, why: str) -> None:
    headers = {} if key is None else {"X-API-Key": key}
    answer = httpx.post(f"{jwt_url}{API}/auth/token", json={}, headers=headers)
    assert answer.status_code == 401
    assert why in answer.json()["detail"]
    assert "invalid_token" not in answer.headers["WWW-Authenticate"]


def test_a_jwt_opens_every_endpoint(jwt_url: str) -> None:
    headers = {"X-API-Key": token_of(jwt_url)}
    for path in ("/checkpoints", "/training_runs"):
        assert httpx.get(f"{jwt_url}{API}{path}", headers=headers).status_code == 200
    bearer = {"Authorization": headers["X-API-Key"].join(["Bearer ", ""])}
    assert httpx.get(f"{jwt_url}{API}/checkpoints", headers=bearer).status_code == 200


def refused(answer: httpx.Response, why: str) -> None:
    assert answer.status_code == 401
    assert answer.headers["WWW-Authenticate"] == INVALID_TOKEN
    assert why in answer.json()["detail"]
    # A retry with a fresh JWT does help: nothing tells the SDK not to (it replays anyway).
    assert "x-should-retry" not in answer.headers


def test_the_api_key_itself_is_no_jwt(jwt_url: str) -> None:
    answer = httpx.get(f"{jwt_url}{API}/checkpoints", headers={"X-API-Key": KEY})
    refused(answer, "invalid JWT")
    assert KEY not in answer.text


def test_a_forged_jwt_is_an_invalid_token(jwt_url: str) -> None:
    now = int(time.time())
    forged = jwt.encode(
        {"iat": now, "exp": now + 900}, "not-the-server-secret-but-32-bytes-long", algorithm="HS256"
    )
    refused(httpx.get(f"{jwt_url}{API}/checkpoints", headers={"X-API-Key": forged}), "invalid")


def test_a_token_from_before_a_rotation_is_refused(jwt_url: str, issuer: JwtIssuer) -> None:
    old = token_of(jwt_url)
    issuer.rotate()
    refused(httpx.get(f"{jwt_url}{API}/training_runs", headers={"X-API-Key": old}), "invalid")


def test_an_expired_jwt_is_an_invalid_token(store: Store) -> None:
    app = create_app(store, api_key=KEY, jwt=JwtIssuer(lifetime=1), sweep_interval=None)
    with run_server(app) as url:
        token = token_of(url)
        expires = jwt.decode(token, options={"verify_signature": False})["exp"]
        while time.time() < expires + 0.05:  # waiting out the lifetime, not a race
            time.sleep(0.05)
        refused(httpx.get(f"{url}{API}/checkpoints", headers={"X-API-Key": token}), "expired")


def test_missing_jwt_says_where_to_get_one(jwt_url: str) -> None:
    answer = httpx.get(f"{jwt_url}{API}/checkpoints")
    assert answer.status_code == 401
    assert "/api/v1/auth/token" in answer.json()["detail"]


def test_without_jwt_exchange_the_token_endpoint_is_404(store: Store) -> None:
    with run_server(create_app(store, api_key=KEY, sweep_interval=None)) as url:
        answer = exchange(url)
    assert answer.status_code == 404
    assert "--jwt" in answer.json()["detail"]


def test_jwt_exchange_needs_a_key(store: Store) -> None:
    with pytest.raises(ValueError, match="api_key"):
        create_app(store, jwt=JwtIssuer(lifetime=60))
    with pytest.raises(ValueError, match="JWT"):
        create_app(store, api_key=KEY, credential_cmd=True)
    with pytest.raises(ValueError, match="at least 1 second"):
        JwtIssuer(lifetime=0)
