"""A real socket server on loopback that answers every request with headers promising
1,000,000 bytes, then trickles the body one byte at a time: each read gets its byte well within
any read timeout, so only a deadline on the whole request ends the wait.

    with trickle_server() as server:
        ...  # server.url; server.requests counts the requests it was sent

`trickle_server(then_close=[ANSWER, ...])` sends the Nth request the Nth ANSWER's bytes
instead (the last one from then on), e.g. none, or headers and part of a body, and closes
the connection: a server that dies mid-answer.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from tests.support.live_server import bind_loopback_socket

HEADERS = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n"
BYTE_EVERY = 0.2
"""Seconds between bytes: far below the client's read timeout."""


@dataclass
class TrickleServer:
    url: str
    requests: int = 0
    stop: threading.Event = field(default_factory=threading.Event)
    then_close: list[bytes] | None = None


def _serve(server: TrickleServer, connection: socket.socket) -> None:
    with connection:
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = connection.recv(65536)
            if not chunk:
                return
            received += chunk
        server.requests += 1
        if server.then_close is not None:
            connection.sendall(server.then_close[min(server.requests, len(server.then_close)) - 1])
            return
        try:
            connection.sendall(HEADERS)
            while not server.stop.wait(BYTE_EVERY):
                connection.sendall(b" ")
        except OSError:
            return  # the client gave up and closed the connection


def _accept(server: TrickleServer, listener: socket.socket) -> None:
    while not server.stop.is_set():
        try:
            connection, _ = listener.accept()
        except OSError:
            return  # the listener was closed
        threading.Thread(target=_serve, args=(server, connection), daemon=True).start()


@contextmanager
def trickle_server(then_close: list[bytes] | None = None) -> Iterator[TrickleServer]:
    listener = bind_loopback_socket()
    listener.listen()
    server = TrickleServer(f"http://127.0.0.1:{listener.getsockname()[1]}", then_close=then_close)
    acceptor = threading.Thread(target=_accept, args=(server, listener), daemon=True)
    acceptor.start()
    try:
        yield server
    finally:
        server.stop.set()
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        acceptor.join(5)
