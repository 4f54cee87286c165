"""The backend's one httpx client over aiohttp (ckpt_tui.client.aiohttp_transport): each way a
request fails is the httpx error our retry rules read (a refused or slow connection was never
sent; a lost one may have been performed), the environment's proxy is used, and TLS is
verified. Against real servers on loopback: the real server app, a socket server that dies
mid-answer, a forwarding proxy, a TLS server with a certificate of its own."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ckpt_tui.client import CheckpointClient, ConnectionFailed, Endpoint, RetryPolicy
from ckpt_tui.client.aiohttp_transport import AiohttpTransport
from ckpt_tui.client.client import tls_verification
from ckpt_tui.server import create_app
from ckpt_tui.store import Store
from tests.support.faulty_app import FaultyApp, RecordedSleeps
from tests.support.forward_proxy import ForwardProxy
from tests.support.live_server import run_server
from tests.support.trickle_server import trickle_server

NO_CLIENT_CONFIG = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
"""The answer to the client's start-up (all defaults), then the connection closed."""
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture(autouse=True)
def no_proxy_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture
def faulty_url(faulty: FaultyApp) -> Iterator[str]:
    with run_server(faulty) as url:
        yield url


def http_over(base_url: str, timeout: httpx.Timeout, connections: int = 8) -> httpx.AsyncClient:
    """An httpx client over the transport, as `CheckpointClient` builds it."""
    transport = AiohttpTransport(base_url, tls_verification(base_url), connections)
    return httpx.AsyncClient(base_url=base_url, transport=transport, timeout=timeout)


async def test_a_refused_connection_is_httpx_connect_error(refused_url: str) -> None:
    async with http_over(refused_url, httpx.Timeout(5.0)) as http:
        with pytest.raises(httpx.ConnectError) as caught:
            await http.get("/api/v1/healthz")
    assert str(caught.value) == "Connection refused"


async def test_a_refused_delete_is_retried_and_names_the_url(refused_url: str) -> None:
    sleeps = RecordedSleeps()
    policy = RetryPolicy(sleep=sleeps)
    async with CheckpointClient(Endpoint.remote(refused_url), retry=policy) as client:
        with pytest.raises(ConnectionFailed) as caught:
            await client.delete_checkpoint("tinker://run-000/weights/0001")
    assert "connection refused" in caught.value.message
    assert len(sleeps.delays) == 3  # four attempts


async def test_an_answer_later_than_the_read_timeout_is_httpx_read_timeout(
    faulty: FaultyApp, faulty_url: str
) -> None:
    faulty.delay = 1.0
    async with http_over(faulty_url, httpx.Timeout(0.1, connect=5.0)) as http:
        with pytest.raises(httpx.ReadTimeout):
            await http.get("/api/v1/healthz")
    assert faulty.count("GET") == 1


async def test_no_free_connection_within_the_pool_timeout_is_httpx_connect_timeout(
    faulty: FaultyApp, faulty_url: str
) -> None:
    """Nothing was sent: a connect timeout, which the client may retry (a pool timeout would
    say the request may have been performed)."""
    gate = faulty.hold("GET")
    timeout = httpx.Timeout(30.0, pool=0.2)
    async with http_over(faulty_url, timeout, connections=1) as http:
        first = asyncio.ensure_future(http.get("/api/v1/healthz"))
        while faulty.count("GET") == 0:
            await asyncio.sleep(0.01)
        with pytest.raises(httpx.ConnectTimeout):
            await http.get("/api/v1/healthz")
        gate.set()
        assert (await first).status_code == 200
    assert faulty.count("GET") == 1


async def test_a_connection_closed_without_an_answer_is_a_lost_one_not_a_refused_one() -> None:
    """The request went out, so it may have been performed: httpcore's RemoteProtocolError,
    never a connect error (httpx-aiohttp 0.2.0 said ConnectTimeout)."""
    with trickle_server(then_close=[b""]) as server:
        async with http_over(server.url, httpx.Timeout(5.0)) as http:
            with pytest.raises(httpx.RemoteProtocolError):
                await http.delete("/api/v1/training_runs/run-000/checkpoints/weights/0001")
    assert server.requests == 1


async def test_a_delete_whose_connection_was_lost_is_retried_as_maybe_performed() -> None:
    sleeps = RecordedSleeps()
    with trickle_server(then_close=[NO_CLIENT_CONFIG, b""]) as server:
        policy = RetryPolicy(sleep=sleeps)
        async with CheckpointClient(Endpoint.remote(server.url), retry=policy) as client:
            with pytest.raises(ConnectionFailed) as caught:
                await client.delete_checkpoint("tinker://run-000/weights/0001")
    assert f"the connection to {server.url} was lost during" in caught.value.message
    assert server.requests == 5  # the start-up's client config, then four attempts (aiohttp
    # on its own sent each DELETE twice)
    assert len(sleeps.delays) == 3


async def test_an_answer_cut_short_is_httpx_remote_protocol_error() -> None:
    cut = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
    with trickle_server(then_close=[cut]) as server:
        async with http_over(server.url, httpx.Timeout(5.0)) as http:
            with pytest.raises(httpx.RemoteProtocolError):
                await http.get("/api/v1/healthz")


async def test_requests_go_through_the_proxy_the_environment_names(
    monkeypatch: pytest.MonkeyPatch, server_url: str, made: list[str], store: Store
) -> None:
    proxy = ForwardProxy()
    with run_server(proxy) as proxy_url:
        monkeypatch.setenv("HTTP_PROXY", proxy_url.replace("://", "://someone:pass%20word@"))
        async with CheckpointClient(Endpoint.remote(server_url)) as client:
            await client.delete_checkpoint(made[0])
            page = await client.list_checkpoints()
    host = server_url.removeprefix("http://")
    assert ("DELETE", host, "/api/v1/training_runs/run-000/checkpoints/weights/0000") in proxy.seen
    assert ("GET", host, "/api/v1/checkpoints") in proxy.seen
    assert set(proxy.authorizations) == {"Basic c29tZW9uZTpwYXNzIHdvcmQ="}  # someone:pass word
    assert made[0] not in [c.tinker_path for c in page.items]
    assert len(store.list_checkpoints(0, 100)[0]) == len(made) - 1


async def test_no_proxy_names_the_hosts_reached_directly(
    monkeypatch: pytest.MonkeyPatch, server_url: str, made: list[str]
) -> None:
    proxy = ForwardProxy()
    with run_server(proxy) as proxy_url:
        monkeypatch.setenv("HTTP_PROXY", proxy_url)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        async with CheckpointClient(Endpoint.remote(server_url)) as client:
            await client.delete_checkpoint(made[0])
    assert proxy.seen == []


async def test_a_socks_proxy_is_an_error_that_says_what_to_do_and_shows_no_password(
    monkeypatch: pytest.MonkeyPatch, server_url: str
) -> None:
    """httpx's own transport raised ImportError (a traceback) when building the client."""
    monkeypatch.setenv("ALL_PROXY", "socks5://someone:s3cret@127.0.0.1:1080")
    async with CheckpointClient(Endpoint.remote(server_url)) as client:
        with pytest.raises(ConnectionFailed) as caught:
            await client.list_checkpoints()
    message = caught.value.message
    assert f"could not connect to {server_url}" in message
    assert "socks5://127.0.0.1:1080" in message and "NO_PROXY" in message
    assert "s3cret" not in message and "someone" not in message


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 signed by its own key: (certificate file, key file)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


@pytest.fixture
def tls_url(store: Store, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The real server over TLS with a certificate no CA signed: (URL, certificate file)."""
    cert_file, key_file = self_signed(tmp_path)
    app = create_app(store, sweep_interval=None)
    with run_server(app, ssl_certfile=str(cert_file), ssl_keyfile=str(key_file)) as url:
        yield url, cert_file


@pytest.fixture
async def no_bundle_override(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[None]:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    yield


async def test_an_https_server_is_verified_against_the_trusted_certificates(
    tls_url: tuple[str, Path], no_bundle_override: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, cert_file = tls_url
    policy = RetryPolicy(sleep=RecordedSleeps())
    async with CheckpointClient(Endpoint.remote(url), retry=policy) as client:
        with pytest.raises(ConnectionFailed) as caught:
            await client.healthz()
    assert "certificate" in caught.value.message
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))  # trusted now, as httpx's client would
    async with CheckpointClient(Endpoint.remote(url), retry=policy) as client:
        assert await client.healthz() is True
