"""The client's start-up as the SDK does it, against the real server in each of its modes:
API key as is, key traded for JWTs (renewed, replayed on invalid_token), credential command."""

from __future__ import annotations

import asyncio
import shlex
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import jwt
import pytest

from ckpt_tui.client import (
    AuthError,
    CheckpointClient,
    CredentialsError,
    Endpoint,
    RetryPolicy,
    ServerError,
)
from ckpt_tui.client.secret import Secret
from ckpt_tui.client.tokens import Jwt
from ckpt_tui.server import create_app
from ckpt_tui.server.tokens import JwtIssuer
from ckpt_tui.store import Store
from tests.support.faulty_app import FaultyApp, RecordedSleeps
from tests.support.live_server import run_server
from tests.support.seed import seed_store

KEY = "tml-jwt-client-key"
TOKEN_PATH = "/api/v1/auth/token"


@dataclass
class JwtServer:
    url: str
    issuer: JwtIssuer
    faulty: FaultyApp

    def data_headers(self) -> list[dict[str, str]]:
        """The headers of every call but the start-up ones."""
        start_up = ("/api/v1/client/config", TOKEN_PATH)
        pairs = zip(self.faulty.requests, self.faulty.headers, strict=True)
        return [headers for (_m, path), headers in pairs if path not in start_up]


@pytest.fixture
def seeded(store: Store) -> list[tuple[str, str]]:
    return seed_store(store, runs=2, per_run=3)


def serve(store: Store, lifetime: int = 900, credential_cmd: bool = False) -> Iterator[JwtServer]:
    issuer = JwtIssuer(lifetime)
    app = create_app(
        store, api_key=KEY, jwt=issuer, credential_cmd=credential_cmd, sweep_interval=None
    )
    faulty = FaultyApp(app)
    with run_server(faulty) as url:
        yield JwtServer(url, issuer, faulty)


@pytest.fixture
def server(store: Store, seeded: list[tuple[str, str]]) -> Iterator[JwtServer]:
    yield from serve(store)


@pytest.fixture
def short_lived(store: Store, seeded: list[tuple[str, str]]) -> Iterator[JwtServer]:
    yield from serve(store, lifetime=2)


@pytest.fixture
def cmd_server(store: Store, seeded: list[tuple[str, str]]) -> Iterator[JwtServer]:
    yield from serve(store, credential_cmd=True)


def printing(tmp_path: Path, text: str, status: int = 0) -> str:
    """A shell command that notes each run in `tmp_path/runs`, prints `text`, exits `status`."""
    runs = shlex.quote(str(tmp_path / "runs"))
    return f"echo run >> {runs}; printf %s {shlex.quote(text)}; exit {status}"


def runs_of(tmp_path: Path) -> int:
    path = tmp_path / "runs"
    return len(path.read_text().splitlines()) if path.exists() else 0


async def test_the_key_is_traded_for_a_jwt_and_never_sent_elsewhere(
    server: JwtServer, seeded: list[tuple[str, str]]
) -> None:
    backend = Endpoint.remote(server.url, KEY, "TINKER_API_KEY")
    async with CheckpointClient(backend) as client:
        assert len(await client.list_all_checkpoints()) == len(seeded)
        assert client.session.uses_jwt
        assert client.describe() == f"{server.url} (JWTs for the key from TINKER_API_KEY)"
    assert server.faulty.requests[:2] == [
        ("POST", "/api/v1/client/config"),
        ("POST", TOKEN_PATH),
    ]
    assert server.issuer.issued == 1
    sent = [headers["x-api-key"] for headers in server.data_headers()]
    assert sent and all(value.startswith("eyJ") for value in sent)
    assert KEY not in sent


async def test_a_refused_jwt_is_replaced_and_the_call_replayed_once(server: JwtServer) -> None:
    async with CheckpointClient(Endpoint.remote(server.url, KEY)) as client:
        await client.list_training_runs()
        first = server.data_headers()[-1]["x-api-key"]
        server.issuer.rotate()  # every JWT handed out so far is refused from now on
        runs = await client.list_training_runs()
    assert runs.total == 2
    assert server.issuer.issued == 2
    assert server.faulty.count("GET", "/training_runs") == 3  # first, refused, replayed
    assert server.data_headers()[-1]["x-api-key"] != first


async def test_a_wrong_key_is_refused_at_the_exchange_naming_its_source(
    server: JwtServer,
) -> None:
    backend = Endpoint.remote(server.url, "tml-wrong", "--api-key flag")
    async with CheckpointClient(backend) as client:
        with pytest.raises(AuthError) as caught:
            await client.list_checkpoints()
    assert caught.value.message.startswith(
        f"the API key from --api-key flag was refused by {server.url}: wrong API key"
    )
    assert "tml-wrong" not in caught.value.message
    assert server.data_headers() == []  # nothing but the start-up was sent


async def test_tokens_are_renewed_in_the_background_and_keep_working(
    short_lived: JwtServer,
) -> None:
    """With a 2 s lifetime the client trades again every ~1 s, without being asked."""
    async with CheckpointClient(Endpoint.remote(short_lived.url, KEY)) as client:
        await client.list_training_runs()
        first = short_lived.data_headers()[-1]["x-api-key"]
        expires = jwt.decode(first, options={"verify_signature": False})["exp"]
        give_up = time.monotonic() + 60  # only if renewals never come: a failure, not a race
        while short_lived.issuer.issued < 4 or time.time() < expires + 0.5:
            assert time.monotonic() < give_up, "no JWT was renewed while the client sat idle"
            await asyncio.sleep(0.05)  # waiting out lifetimes: the condition, not a guess
        assert (await client.list_training_runs()).total == 2
    # Sent with a renewed JWT (a call the server refused would have been replayed with one).
    assert short_lived.data_headers()[-1]["x-api-key"] != first


async def test_a_failed_renewal_is_one_clear_error_and_the_next_call_recovers(
    server: JwtServer,
) -> None:
    policy = RetryPolicy(sleep=RecordedSleeps())
    async with CheckpointClient(Endpoint.remote(server.url, KEY), retry=policy) as client:
        await client.list_training_runs()
        server.issuer.rotate()
        server.faulty.fail_first(policy.max_attempts, status=503, path=TOKEN_PATH)
        with pytest.raises(ServerError) as caught:
            await client.list_training_runs()
        assert "the JWT exchange" in caught.value.message
        assert (await client.list_training_runs()).total == 2  # what `r` does in the TUI


async def test_the_credential_command_is_used_when_the_server_demands_it(
    cmd_server: JwtServer, tmp_path: Path
) -> None:
    command = printing(tmp_path, KEY)
    backend = Endpoint.remote(
        cmd_server.url, "tml-not-used", "--api-key flag", credential_cmd=command
    )
    async with CheckpointClient(backend) as client:
        assert (await client.list_training_runs()).total == 2
        description = client.describe()
    assert description == f"{cmd_server.url} (JWTs for the credential from TINKER_CREDENTIAL_CMD)"
    assert runs_of(tmp_path) == 1  # once per exchange (the config call used the key)
    assert cmd_server.issuer.issued == 1


async def test_the_credential_command_is_the_fallback_without_a_key(
    server: JwtServer, tmp_path: Path
) -> None:
    backend = Endpoint.remote(server.url, credential_cmd=printing(tmp_path, KEY))
    assert "credential from TINKER_CREDENTIAL_CMD" in backend.describe()
    async with CheckpointClient(backend) as client:
        assert (await client.list_training_runs()).total == 2
    assert runs_of(tmp_path) == 2  # the config call, then the exchange (as the SDK does)


async def test_a_demanded_command_that_is_not_set_says_so(cmd_server: JwtServer) -> None:
    tinker = Endpoint.remote(cmd_server.url, KEY, tinker_connection=True)
    async with CheckpointClient(tinker) as client:
        with pytest.raises(CredentialsError, match="set TINKER_CREDENTIAL_CMD"):
            await client.list_training_runs()


@pytest.mark.parametrize(
    ("printed", "status", "why"),
    [
        ("tml-secret-output", 3, "failed (exit status 3)"),
        ("", 0, "printed no credential"),
        (jwt.encode({"iat": 1, "exp": 2}, "k" * 32, algorithm="HS256"), 0, "expired JWT"),
    ],
)
async def test_a_failing_command_is_a_clear_error_that_never_shows_its_output(
    cmd_server: JwtServer, tmp_path: Path, printed: str, status: int, why: str
) -> None:
    backend = Endpoint.remote(cmd_server.url, credential_cmd=printing(tmp_path, printed, status))
    async with CheckpointClient(backend) as client:
        with pytest.raises(CredentialsError) as caught:
            await client.list_training_runs()
    assert why in caught.value.message and "TINKER_CREDENTIAL_CMD" in caught.value.message
    assert not printed or printed not in caught.value.message + caught.value.detail
    assert cmd_server.issuer.issued == 0


async def test_without_jwt_exchange_the_command_is_not_an_api_key(
    store: Store, seeded: list[tuple[str, str]], tmp_path: Path
) -> None:
    """As in the SDK: a server that takes API keys only is not sent the command's output."""
    with run_server(create_app(store, api_key=KEY, sweep_interval=None)) as url:
        backend = Endpoint.remote(url, credential_cmd=printing(tmp_path, KEY))
        async with CheckpointClient(backend) as client:
            with pytest.raises(AuthError, match="needs an API key"):
                await client.list_training_runs()


async def test_an_expired_jwt_given_as_the_key_is_not_sent(server_url: str) -> None:
    stale = jwt.encode({"iat": 1, "exp": 2}, "k" * 32, algorithm="HS256")
    async with CheckpointClient(Endpoint.remote(server_url, stale, "TINKER_API_KEY")) as client:
        with pytest.raises(CredentialsError) as caught:
            await client.list_training_runs()
    assert "the API key from TINKER_API_KEY is a JWT that has expired" in caught.value.message
    assert stale not in caught.value.message


async def test_a_cli_process_can_use_a_jwt_server(
    server: JwtServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ckpt-tui ls` goes through the same start-up (run in a thread: it owns its loop)."""
    from ckpt_tui.cli import main

    monkeypatch.setenv("TINKER_BASE_URL", server.url)  # the Tinker connection, as the SDK's
    monkeypatch.setenv("TINKER_API_KEY", KEY)
    monkeypatch.delenv("TINKER_CREDENTIAL_CMD", raising=False)
    code = await asyncio.to_thread(main, ["ls", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    assert "JWTs for the key from TINKER_API_KEY" in out
    assert KEY not in out and "eyJ" not in out


def test_renewal_comes_after_45_to_55_percent_and_near_expiry_scales() -> None:
    value = jwt.encode({"iat": 1000, "exp": 1900}, "k" * 32, algorithm="HS256")
    token = Jwt.received_now(Secret(value), now=50.0)
    assert token.lifetime == 900
    assert token.refresh_delay(lambda low, high: low) == pytest.approx(405)
    assert token.refresh_delay(lambda low, high: high) == pytest.approx(495)
    assert not token.near_expiry(50.0 + 839) and token.near_expiry(50.0 + 840)  # last 60 s
    short = Jwt.received_now(Secret(jwt.encode({"iat": 0, "exp": 3}, "k" * 32)), now=0.0)
    assert not short.near_expiry(2.6) and short.near_expiry(2.7)  # last tenth
    for claims in ({"iat": 5}, {"iat": 5, "exp": 5}):
        with pytest.raises(ValueError):
            Jwt.received_now(Secret(jwt.encode(claims, "k" * 32)), now=0.0)
    assert "eyJ" not in repr(token)
