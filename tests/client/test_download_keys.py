"""Hostile servers: files named outside the folder refuse the whole download, nothing is
written; a server that sends nothing is given up on."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ckpt_tui.api_types import TinkerPath
from ckpt_tui.client import CheckpointClient, Endpoint
from ckpt_tui.client.download import DownloadError, UnsafeDownload, download
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support.live_server import run_server

PATH = TinkerPath.parse("tinker://run-1/external_weights/final")


def hostile_app(key: str) -> Starlette:
    async def urls(request: Request) -> JSONResponse:
        base = str(request.base_url)
        answer = {
            "urls": {"ok.bin": f"{base}x", key: f"{base}y"},
            "expires": "2099-01-01T00:00:00Z",
        }
        return JSONResponse(answer)

    route = "/api/v1/training_runs/run-1/checkpoints/external_weights/final/external_weights_urls"
    return Starlette(routes=[Route(route, urls)])


@pytest.mark.parametrize(
    "key", ["/etc/passwd", "../escape.bin", "a/../../escape.bin", "a\\..\\b", "", "./x", "link/x"]
)
async def test_hostile_keys_refuse_everything(tmp_path: Path, clock: FixedClock, key: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "link").symlink_to(tmp_path)  # a key through it would resolve outside
    with run_server(hostile_app(key)) as base:
        async with CheckpointClient(Endpoint.remote(base)) as client:
            with pytest.raises(UnsafeDownload, match="nothing was downloaded"):
                await download(client, PATH, out, clock=clock)
    assert [p.name for p in out.iterdir()] == ["link"]
    assert not (tmp_path / "escape.bin").exists()


def stingy_app() -> Starlette:
    """Names one 100-byte file, then answers every range of it with no bytes."""

    async def urls(request: Request) -> JSONResponse:
        file = f"{request.base_url}file"
        return JSONResponse({"urls": {"x.bin": file}, "expires": "2099-01-01T00:00:00Z"})

    async def file(request: Request) -> Response:
        headers = {"ETag": '"v1"', "Content-Length": "100"}
        if request.method == "HEAD":
            return Response(headers=headers)
        return Response(b"", 206, {"ETag": '"v1"', "Content-Range": "bytes 0-99/100"})

    route = "/api/v1/training_runs/run-1/checkpoints/external_weights/final/external_weights_urls"
    return Starlette(routes=[Route(route, urls), Route("/file", file, methods=["GET", "HEAD"])])


async def test_a_server_sending_nothing_is_given_up_on(tmp_path: Path, clock: FixedClock) -> None:
    with run_server(stingy_app()) as base:
        async with CheckpointClient(Endpoint.remote(base)) as client:
            with pytest.raises(DownloadError, match="run the download again"):
                await download(client, PATH, tmp_path / "out", clock=clock)
    assert not (tmp_path / "out" / "x.bin").exists()
