"""Run any ASGI app on a real uvicorn server on a free loopback port, for tests.

    with run_server(app) as base_url:
        httpx.get(f"{base_url}/api/v1/healthz")

The server runs in a background thread with its own event loop, on a socket bound to port 0 of
127.0.0.1 (so the OS picks a free port and there is no race), and is shut down on exit.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

STARTUP_TIMEOUT = 20.0
SHUTDOWN_TIMEOUT = 20.0


def bind_loopback_socket(host: str = "127.0.0.1") -> socket.socket:
    """A listening-ready TCP socket on a port the OS picked.

    `IPPROTO_TCP` must be explicit: asyncio only sets TCP_NODELAY on accepted sockets whose
    proto says TCP, and without it every small answer waits ~40 ms for a delayed ACK.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    return sock


def _wait_started(server: uvicorn.Server, thread: threading.Thread) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the test server stopped during start-up (see its log above)")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the test server did not start within {STARTUP_TIMEOUT} s")
        time.sleep(0.01)


@contextmanager
def run_server(app: Any, *, log_level: str = "warning", **options: Any) -> Iterator[str]:
    """Serve `app` with uvicorn until the block ends; yield its base URL (no trailing slash).

    `options` go to `uvicorn.Config` (`ssl_certfile=..., ssl_keyfile=...`: served over TLS)."""
    sock = bind_loopback_socket()
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, lifespan="on", log_level=log_level, access_log=False, **options)
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name=f"uvicorn-{port}", daemon=True
    )
    thread.start()
    try:
        _wait_started(server, thread)
        yield f"{'https' if 'ssl_certfile' in options else 'http'}://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(SHUTDOWN_TIMEOUT)
        sock.close()
        if thread.is_alive():
            raise RuntimeError(f"the test server did not stop within {SHUTDOWN_TIMEOUT} s")
