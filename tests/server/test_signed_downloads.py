"""external_weights_urls and the signed file route, over a real server with an API key."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from urllib.parse import urlsplit

import httpx
import pytest

from ckpt_tui.server import create_app
from ckpt_tui.server.signing import UrlSigner
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support.live_server import run_server

KEY = {"X-API-Key": "tml-right"}
RUN = "/api/v1/training_runs/run-1/checkpoints"
FILES = {"model.safetensors": bytes(range(256)) * 40, "sub/config.json": b'{"a": 1}'}


@pytest.fixture
def keyed(store: Store) -> Iterator[str]:
    store.create_run("run-1", "base/model")
    store.add_checkpoint("run-1", "external_weights/final", FILES)
    store.add_checkpoint("run-1", "weights/0001", {"adapter.bin": b"w" * 10})
    app = create_app(
        store, api_key="tml-right", sweep_interval=None, url_signer=UrlSigner(600, b"k" * 32)
    )
    with run_server(app) as url:
        yield url


def urls_of(base: str, checkpoint: str = "external_weights/final") -> dict[str, object]:
    answer = httpx.get(f"{base}{RUN}/{checkpoint}/external_weights_urls", headers=KEY)
    assert answer.status_code == 200, answer.text
    body: dict[str, object] = answer.json()
    return body


def test_answer_has_the_sdk_shape_and_urls_name_the_asked_host(keyed: str) -> None:
    port = urlsplit(keyed).port
    answer = httpx.get(
        f"{keyed}{RUN}/external_weights/final/external_weights_urls",
        headers={**KEY, "Host": f"tunnel.example:{port}"},
    )
    body = answer.json()
    assert set(body) == {"urls", "expires"}
    assert set(body["urls"]) == set(FILES)
    assert all(u.startswith(f"http://tunnel.example:{port}/") for u in body["urls"].values())
    assert body["expires"] == "2025-01-01T12:10:00Z"  # the fixed clock + 600 s


def test_signed_file_needs_no_key_and_is_byte_exact(keyed: str) -> None:
    urls = urls_of(keyed)["urls"]
    assert isinstance(urls, dict)
    for name, data in FILES.items():
        got = httpx.get(urls[name])
        assert got.status_code == 200
        assert got.content == data
        assert got.headers["content-length"] == str(len(data))
        assert got.headers["etag"].startswith('"')


def test_range_and_head(keyed: str) -> None:
    url = urls_of(keyed)["urls"]["model.safetensors"]  # type: ignore[index]
    data = FILES["model.safetensors"]
    head = httpx.head(url)
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-length"] == str(len(data))
    part = httpx.get(url, headers={"Range": "bytes=1000-"})
    assert part.status_code == 206
    assert part.content == data[1000:]
    assert part.headers["content-range"] == f"bytes 1000-{len(data) - 1}/{len(data)}"
    middle = httpx.get(url, headers={"Range": "bytes=10-19"})
    assert middle.content == data[10:20]
    stale = httpx.get(url, headers={"Range": "bytes=10-19", "If-Range": '"other"'})
    assert stale.status_code == 200 and stale.content == data
    past = httpx.get(url, headers={"Range": f"bytes={len(data)}-"})
    assert past.status_code == 416


def test_tampered_other_file_and_expired_are_refused(keyed: str, clock: FixedClock) -> None:
    urls = urls_of(keyed)["urls"]
    assert isinstance(urls, dict)
    url = urls["model.safetensors"]
    tampered = url[:-1] + ("0" if url[-1] != "0" else "1")
    assert httpx.get(tampered).status_code == 403
    other = url.replace("model.safetensors", "sub/config.json")
    assert httpx.get(other).status_code == 403
    later = url.replace("expires=", "expires=9")
    assert httpx.get(later).status_code == 403
    clock.advance(timedelta(seconds=601))
    expired = httpx.get(url)
    assert expired.status_code == 403
    assert "expired" in expired.json()["detail"]
    assert "sig=" not in expired.text and url.split("sig=")[1] not in expired.text
    assert expired.headers["x-should-retry"] == "false"


@pytest.mark.parametrize(
    "tail",
    ["%2e%2e/%2e%2e/run.json", "..%2f..%2frun.json", "sub/%2e%2e/%2e%2e/x", "%2fetc%2fpasswd"],
)
def test_path_escapes_are_refused(keyed: str, tail: str) -> None:
    url = urls_of(keyed)["urls"]["model.safetensors"]  # type: ignore[index]
    base, _, query = url.partition("?")
    escaped = base.rsplit("/", 1)[0] + "/" + tail + "?" + query
    answer = httpx.get(escaped)
    assert answer.status_code in (400, 403, 404)
    assert b"base/model" not in answer.content


def test_extension_signs_weights_and_says_so(keyed: str) -> None:
    urls = urls_of(keyed, "weights/0001")["urls"]
    assert isinstance(urls, dict)
    assert httpx.get(urls["adapter.bin"]).content == b"w" * 10
    health = httpx.get(f"{keyed}/api/v1/healthz").json()
    assert health["signed_downloads"] == ["external", "training", "sampler"]


def test_a_server_that_signs_only_external_refuses_weights(store: Store) -> None:
    store.create_run("run-1", "base/model")
    store.add_checkpoint("run-1", "weights/0001", {"adapter.bin": b"w"})
    with run_server(create_app(store, sweep_interval=None, signed_types=("external",))) as url:
        answer = httpx.get(f"{url}{RUN}/weights/0001/external_weights_urls")
        assert answer.status_code == 400
        assert "external" in answer.json()["detail"]
        assert httpx.get(f"{url}/api/v1/healthz").json()["signed_downloads"] == ["external"]


def test_urls_need_the_key(keyed: str) -> None:
    answer = httpx.get(f"{keyed}{RUN}/external_weights/final/external_weights_urls")
    assert answer.status_code == 401
