"""A real S3 server for tests: moto's server mode on a free loopback port, and buckets on it.

    with s3_server() as server:
        bucket = server.make_bucket()          # a new, empty bucket with a unique name
        env = server.environment()             # AWS_* variables that point a client at it

moto keeps its buckets in the process: two servers started in one process serve the same
buckets (one store at two endpoints). `s3_server_in_child()` runs one in a child process,
with buckets of its own (another store).

obstore, boto3 and rclone all speak to it as to any S3 endpoint (plain HTTP, path-style
addressing). The credentials are moto's dummies: nothing real is needed or reachable.
"""

from __future__ import annotations

import itertools
import logging
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.cloud_emulators import upload_folder

REGION = "us-east-1"
DUMMY_KEY_ID = "testing-key-id"
DUMMY_SECRET = "testing-secret-key"  # moto accepts any; a test can check it never shows

_names = itertools.count()


@dataclass
class S3Server:
    """A running moto server: its endpoint and a boto3 client to set buckets up with."""

    endpoint: str
    client: Any = field(repr=False)

    def environment(self) -> dict[str, str]:
        """The standard AWS variables for this server (what `monkeypatch.setenv` should set)."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": DUMMY_KEY_ID,
            "AWS_SECRET_ACCESS_KEY": DUMMY_SECRET,
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ALLOW_HTTP": "true",
        }

    def make_bucket(self, name: str | None = None) -> str:
        """Create a bucket (a unique name unless given) and return its name."""
        bucket = name or f"bucket-{next(_names)}"
        self.client.create_bucket(Bucket=bucket)
        return bucket

    def put(self, bucket: str, key: str, data: bytes) -> None:
        self.client.put_object(Bucket=bucket, Key=key, Body=data)

    def upload(self, bucket: str, prefix: str, folder: Path, skip: tuple[str, ...] = ()) -> int:
        """`upload_folder` into `bucket`."""
        return upload_folder(lambda key, data: self.put(bucket, key, data), prefix, folder, skip)

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        """Every key under `prefix`, sorted (all pages)."""
        found: list[str] = []
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        for page in pages:
            found.extend(item["Key"] for item in page.get("Contents", []))
        return sorted(found)


def _client_of(endpoint: str) -> S3Server:
    import boto3

    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id=DUMMY_KEY_ID,
        aws_secret_access_key=DUMMY_SECRET,
    )
    return S3Server(endpoint, client)


@contextmanager
def s3_server() -> Iterator[S3Server]:
    """Start moto's S3 server on 127.0.0.1 (the OS picks the port); stop it on exit."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield _client_of(f"http://{host}:{port}")
    finally:
        server.stop()


_CHILD = """
import logging, sys
from moto.server import ThreadedMotoServer
logging.getLogger("werkzeug").setLevel(logging.ERROR)
server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
print(server.get_host_and_port()[1], flush=True)
sys.stdin.read()  # until the test closes it
server.stop()
"""
CHILD_GUARD = 60.0
"""Seconds the child has to stop once told (a hang guard; it is killed after)."""


@contextmanager
def s3_server_in_child() -> Iterator[S3Server]:
    """`s3_server`, in a child process: a server whose buckets are its own."""
    with subprocess.Popen(
        [sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as child:
        assert child.stdin is not None and child.stdout is not None
        try:
            port = int(child.stdout.readline())
            yield _client_of(f"http://127.0.0.1:{port}")
        finally:
            child.stdin.close()
            try:
                child.wait(CHILD_GUARD)
            except subprocess.TimeoutExpired:
                child.kill()
