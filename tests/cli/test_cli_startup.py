"""`ls`, `prune`, `serve` and `demo --no-tui` start without loading Textual: only opening the app
imports it (ckpt_tui.cli imports ckpt_tui.tui inside the function that runs the app).

That the core and the command line never import Textual themselves, and the core never the TUI,
is checked by the import contracts (`lint-imports`); this checks what they cannot: the command
line's imports at start-up, which the layers allow to reach the TUI.
"""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import ckpt_tui.cli
from tests.support.live_server import run_server
from tests.support.s3_faults import S3Faults
from tests.support.s3_server import S3Server


def cli_modules() -> list[str]:
    found = pkgutil.walk_packages(ckpt_tui.cli.__path__, prefix="ckpt_tui.cli.")
    return ["ckpt_tui.cli", *sorted(module.name for module in found)]


def test_there_are_command_modules_to_check() -> None:
    assert {"ckpt_tui.cli.ls", "ckpt_tui.cli.prune", "ckpt_tui.cli.clients"} <= set(cli_modules())


def test_the_command_line_starts_without_textual() -> None:
    imports = "\n".join(f"import {name}" for name in cli_modules())
    listing = "sorted(m for m in sys.modules if m.startswith(('textual', 'ckpt_tui.tui')))"
    code = f"{imports}\nimport sys\nprint({listing})"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]", result.stdout


def test_listing_a_server_imports_no_store_server_or_web_framework() -> None:
    """`ls --url` starts in a fraction of a second only if it imports what it uses (the store,
    the server and Starlette took 50 ms; a local store imports them when it is opened).
    aiohttp (95 ms of CPU) is imported by the first request over the network."""
    uses = "import ckpt_tui.cli, ckpt_tui.cli.ls, ckpt_tui.backends.load, ckpt_tui.cli.documents"
    heavy = ("ckpt_tui.store", "ckpt_tui.server", "starlette", "uvicorn", "textual", "aiohttp")
    listing = f"sorted(m for m in sys.modules if m.startswith({heavy!r}))"
    code = f"{uses}\nimport sys\nprint({listing})"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]", result.stdout


APP_START_PROBE = """
import os, sys, threading
from ckpt_tui.tui.app import CkptApp

def run(self, *args, **kwargs):  # where the app would paint its first frame
    print("at app start:", sorted(m for m in sys.modules if m.startswith(HEAVY)), flush=True)
    for thread in threading.enumerate():  # a bucket's open begun early: let it send
        if thread.name == "ckpt-tui-open":
            thread.join(20)
    os._exit(0)  # as the executable ends (`end_process`): no finalizing beside obstore

CkptApp.run = run
from ckpt_tui.cli import main
main(sys.argv[1:])
"""
BEFORE_FIRST_FRAME = ("ckpt_tui.store", "ckpt_tui.server", "starlette", "obstore", "jwt")
"""What opening a local store imports; the app's first frame waits for none of it."""


def modules_at_app_start(*args: str, heavy: tuple[str, ...] = BEFORE_FIRST_FRAME) -> str:
    """The modules of `heavy` imported when `ckpt-tui ARGS` starts the app."""
    code = APP_START_PROBE.replace("HEAVY", repr(heavy))
    result = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True
    )
    [line] = [line for line in result.stdout.splitlines() if line.startswith("at app start:")]
    return line.removeprefix("at app start: ")


def test_the_app_starts_on_a_folder_before_its_store_is_opened(tmp_path: Path) -> None:
    """`ckpt-tui --local FOLDER` hands the app a client whose store opens on its first
    request (in a worker, after the first frame), not before the app starts: importing the
    server and the store and opening it took 0.13-0.19 s of the 0.8 s of CPU time before the
    first frame (benchmarks/bench_start.py)."""
    folder = tmp_path / "box"
    folder.mkdir()
    assert modules_at_app_start("--local", str(folder)) == "[]"
    assert list(folder.iterdir()) == []  # nothing opened, nothing written


def test_the_app_on_a_bucket_has_begun_opening_it_when_the_app_starts(
    s3: S3Server, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not so for a bucket: its open waits on the network, not on this process, so it begins
    before the app is imported (`client_for`'s `begin_bucket_now`), and the app's first
    request to it left 0.6-1.0 s earlier (the README's performance section). The probe
    stops the app before its first request, so what the bucket was asked is the open's."""
    faults = S3Faults(s3.endpoint)
    with run_server(faults) as proxy:
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy)
        bucket_store = ("ckpt_tui.store.bucket.opening",)
        shown = modules_at_app_start("--local", f"s3://{s3_bucket}/team", heavy=bucket_store)
    assert shown == "['ckpt_tui.store.bucket.opening']"
    assert (f"/{s3_bucket}/team/.ckpt-tui/meta.json") in [path for _, path, _ in faults.requests]


def test_the_app_on_a_bucket_read_with_an_aws_profile_opens_it_after_the_first_frame(
    s3: S3Server, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bucket whose keys come from AWS_PROFILE is read with boto3, whose import (0.27-0.31 s
    of CPU) would delay the first frame as much: it opens on its first request, as before,
    and nothing of its open (the store, obstore) is imported before the first frame."""
    faults = S3Faults(s3.endpoint)
    with run_server(faults) as proxy:
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy)
        monkeypatch.setenv("AWS_PROFILE", "ckpt-tui-test")
        monkeypatch.delenv("AWS_ACCESS_KEY_ID")
        heavy = ("boto3", "botocore", *BEFORE_FIRST_FRAME)
        assert modules_at_app_start("--local", f"s3://{s3_bucket}/team", heavy=heavy) == "[]"
    assert faults.requests == []


def test_the_demo_starts_the_app_before_its_stores_are_opened(tmp_path: Path) -> None:
    """The demo writes its stores with the store code, then hands the app clients that open
    them on their first request: the server and obstore (the bucket) wait for that."""
    heavy = ("ckpt_tui.server", "starlette", "obstore", "jwt")
    assert modules_at_app_start("demo", "--dir", str(tmp_path / "demo"), heavy=heavy) == "[]"


def test_the_app_starts_on_a_server_before_aiohttp_is_imported(refused_url: str) -> None:
    """The network's library (about 95 ms of CPU to import) waits for the first request."""
    assert modules_at_app_start("--url", refused_url, heavy=("aiohttp", "yarl")) == "[]"


def test_opening_a_local_store_imports_no_jwt_library() -> None:
    """Every `--local` store imports the server; PyJWT and cryptography (70-75 ms) are
    imported only when `serve --jwt` makes its token issuer."""
    code = (
        "import sys\nfrom ckpt_tui.server import create_app\n"
        "from ckpt_tui.store.bucket.opening import open_bucket_store\n"
        "before = sorted(m for m in sys.modules if m.startswith(('jwt', 'cryptography')))\n"
        "from ckpt_tui.server.tokens import JwtIssuer\nJwtIssuer(60)\n"
        "print(before, 'jwt' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[] True", result.stdout
