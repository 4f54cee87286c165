"""Check `ckpt-tui serve` against the official tinker CLI and SDK (not part of CI).

    python scripts/check_tinker_cli.py [--tinker-venv /work/tinkervenv] [--verbose]

For each way the server can authenticate (SERVER_MODES: an API key; the key traded for 5 s
JWTs, `serve --jwt --jwt-lifetime 5`; and `--credential-cmd` with only $TINKER_CREDENTIAL_CMD
set on the client side), starts the local server with those `serve` options over a fresh
temporary store seeded with three runs, then runs each `tinker` CLI command and a RestClient
script from the given virtualenv against it, and checks both the exit code and what changed in
the store. With JWTs, two more SDK scripts make a call after the first JWT has expired and
replay a call the server refused as invalid_token. Prints one line per step and exits 1 if
any step failed.

With `--bucket`, the seeded store is copied to a bucket on a test S3 server (moto) and
served as `serve s3://…` serves it (a `BucketStore`); the download step then fetches the
bucket's objects through the server's signed URLs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ckpt_tui.api_types import format_time
from ckpt_tui.cli import build_parser
from ckpt_tui.cli.serve import auth_options, build_app
from ckpt_tui.store import NotFoundError, Store
from tests.support.live_server import run_server
from tests.support.seed import seed_store

API_KEY = "tml-check-key"
JWT_LIFETIME = 5
SERVER_MODES: tuple[tuple[str, list[str]], ...] = (
    ("API key", ["--api-key", API_KEY]),
    ("JWTs", ["--api-key", API_KEY, "--jwt", "--jwt-lifetime", str(JWT_LIFETIME)]),
    ("credential command", ["--api-key", API_KEY, "--jwt", "--credential-cmd"]),
)
"""(name, `ckpt-tui serve` options) of each server the whole list runs against."""
P0 = "tinker://run-000/weights/0000"
EXTERNAL = "tinker://run-002/external_weights/final"
Check = Callable[[Store, str], bool]


@dataclass(frozen=True)
class Step:
    what: str
    argv: list[str]
    check: Check
    expect_success: bool = True
    within: float | None = None
    """Seconds the command may take at most (a refusal must not be retried for minutes)."""


def exists(store: Store, run_id: str, checkpoint_id: str) -> bool:
    try:
        store.get_checkpoint(run_id, checkpoint_id)
    except NotFoundError:
        return False
    return True


def ids(store: Store, run_id: str) -> list[str]:
    return sorted(c.checkpoint_id for c in store.list_run_checkpoints(run_id))


def p0_public(store: Store) -> bool:
    return store.get_checkpoint("run-000", "weights/0000").public


def p0_expires(store: Store) -> bool:
    return store.get_checkpoint("run-000", "weights/0000").expires_at is not None


def downloaded(root: Path) -> Check:
    """The official CLI wrote every file of EXTERNAL (as seeded in the folder store at
    `root`, whichever store serves it), byte for byte, and nothing else."""
    source = root / "runs" / "run-002" / "external_weights" / "final"
    target = download_dir(root) / "run-002_external_weights_final"

    def files(top: Path) -> dict[str, bytes]:
        return {str(p.relative_to(top)): p.read_bytes() for p in top.rglob("*") if p.is_file()}

    return lambda _store, _out: target.is_dir() and files(target) == files(source)


def download_dir(root: Path) -> Path:
    return root.parent / "downloaded"


def says(*words: str) -> Check:
    return lambda store, out: all(word in out for word in words)


def cli_steps(store: Store, root: Path) -> list[Step]:
    """The CLI commands to try, each with what must hold afterwards."""
    times = {c.checkpoint_id: c.time for c in store.list_run_checkpoints("run-001")}
    after, before = format_time(times["weights/0000"]), format_time(times["weights/0003"])
    ck = ["checkpoint"]
    paths = [f"tinker://run-000/weights/000{i}" for i in (2, 3)]
    return [
        Step("list", [*ck, "list"], says("run-000", "run-002")),
        Step("list run", [*ck, "list", "--run-id", "run-000"], says("weights/0003")),
        Step("info", [*ck, "info", P0], says("weights/0000", "run-000", "Rank 32")),
        Step("publish", [*ck, "publish", P0], lambda s, out: p0_public(s)),
        # Publishing twice answers 409 (as the hosted service does) with `x-should-retry:
        # false`; SDK 0.38.0's RestClient retries every 409 for 300 s whatever the headers
        # (see the spec), so the 409 and its header are checked over HTTP (CONFLICT_SCRIPT).
        Step("unpublish", [*ck, "unpublish", P0], lambda s, out: not p0_public(s)),
        Step("download", [*ck, "download", EXTERNAL, "-o", "{download}"], downloaded(root)),
        Step("ttl", [*ck, "set-ttl", P0, "--ttl", "7200"], lambda s, out: p0_expires(s)),
        Step("no ttl", [*ck, "set-ttl", P0, "--remove"], lambda s, out: not p0_expires(s)),
        Step("delete paths", [*ck, "delete", *paths, "-y"],
             lambda s, out: ids(s, "run-000") == ["weights/0000", "weights/0001"]),
        Step("delete filtered",
             [*ck, "delete", "--run-id", "run-001", "--type", "weights", "--before", before,
              "--after", after, "-y"],
             lambda s, out: ids(s, "run-001")
             == ["sampler_weights/0000", "weights/0000", "weights/0003"]),
        Step("run list", ["run", "list"], says("run-000", "run-001", "run-002")),
        Step("run info", ["run", "info", "run-002"], says("run-002", "Qwen/Qwen3-8B")),
        Step("json list", ["--format", "json", *ck, "list"], says('"checkpoints"')),
        Step("unknown", [*ck, "info", "tinker://run-000/weights/9"],
             lambda s, out: "Traceback" not in out and "not found" in out.lower(),
             expect_success=False),
        Step("unknown run", ["run", "info", "nope"],
             lambda s, out: "Traceback" not in out and "not found" in out.lower(),
             expect_success=False),
    ]  # fmt: skip


SDK_SCRIPT = """
import tinker
rc = tinker.RestClient()
page = rc.list_user_checkpoints(limit=2, offset=1).result()
assert len(page.checkpoints) == 2 and page.cursor.total_count >= 6, page
runs = rc.list_training_runs(limit=2).result()
assert runs.cursor.total_count == 3 and len(runs.training_runs) == 2, runs
run = rc.get_training_run("run-002").result()
assert run.lora_rank == 32 and run.last_checkpoint is not None, run
listed = rc.list_checkpoints("run-002").result()
assert [c.checkpoint_id for c in listed.checkpoints][0] == "weights/0000", listed
path = listed.checkpoints[0].tinker_path
info = rc.get_weights_info_by_tinker_path(path).result()
assert info.base_model == "Qwen/Qwen3-8B" and info.is_lora, info
assert rc.get_training_run_by_tinker_path(path).result().training_run_id == "run-002"
rc.publish_checkpoint_from_tinker_path(path).result()
rc.unpublish_checkpoint_from_tinker_path(path).result()
rc.set_checkpoint_ttl_from_tinker_path(path, 86400).result()
rc.set_checkpoint_ttl_from_tinker_path(path, None).result()
rc.delete_checkpoint_from_tinker_path(path).result()
try:
    rc.get_training_run("no-such-run").result()
except tinker.NotFoundError:
    pass
else:
    raise AssertionError("expected NotFoundError")
print("SDK OK")
"""


AFTER_EXPIRY_SCRIPT = f"""
import time
import tinker
rc = tinker.RestClient()
assert rc.list_training_runs(limit=1).result().cursor.total_count == 3
time.sleep({JWT_LIFETIME} + 1.5)  # the first JWT has expired by now
assert rc.list_training_runs(limit=1).result().cursor.total_count == 3
print("SDK after expiry OK")
"""

REPLAY_SCRIPT = """
import base64, json, time
import tinker
rc = tinker.RestClient()
rc.list_training_runs(limit=1).result()
def part(data):
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()
now = int(time.time())
forged = ".".join([part({"alg": "HS256", "typ": "JWT"}), part({"iat": now, "exp": now + 3600}),
                   "bm90LXNpZ25lZC1ieS10aGUtc2VydmVy"])
# Private SDK state, on purpose: make its cached JWT one the server never signed, so the next
# call is refused with invalid_token and must be replayed with a freshly exchanged JWT.
rc.holder._default_auth._token = forged
assert rc.list_training_runs(limit=1).result().cursor.total_count == 3
print("SDK replay OK")
"""


CONFLICT_SCRIPT = """
import json, os, subprocess
import httpx
base = os.environ["TINKER_BASE_URL"] + "/api/v1"
key = os.environ.get("TINKER_API_KEY") or subprocess.run(
    os.environ["TINKER_CREDENTIAL_CMD"], shell=True, capture_output=True, text=True).stdout.strip()
config = httpx.post(base + "/client/config", json={}, headers={"X-API-Key": key}).json()
if config.get("pjwt_auth_enabled"):
    key = httpx.post(base + "/auth/token", json={}, headers={"X-API-Key": key}).json()["jwt"]
route = base + "/training_runs/run-000/checkpoints/weights/0000/publish"
for method in ("POST", "DELETE"):
    assert httpx.request(method, route, headers={"X-API-Key": key}).status_code == 204
    again = httpx.request(method, route, headers={"X-API-Key": key})
    assert again.status_code == 409, again.text
    assert again.headers["x-should-retry"] == "false", again.headers
print("409 OK")
"""


def run_tinker(
    argv: list[str], env: dict[str, str], verbose: bool, timeout: float = 120
) -> tuple[int, str]:
    try:
        result = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        return -1, f"still running after {timeout:g} s: stopped"
    output = result.stdout + result.stderr
    if verbose:
        print(output)
    return result.returncode, output


def seeded(root: Path) -> Store:
    store = Store.open(root)
    seed_store(store, runs=3, per_run=4)
    time = store.get_checkpoint("run-001", "weights/0001").time + timedelta(seconds=30)
    store.add_checkpoint("run-001", "sampler_weights/0000", {"adapter.bin": b"s"}, created=time)
    external = {
        "adapter_model.safetensors": os.urandom(3_000_000),
        "adapter_config.json": b'{"r": 32}',
        "nested/tokenizer.json": b"{}",
    }
    store.add_checkpoint("run-002", "external_weights/final", external)
    return store


def tinker_steps(venv: Path, store: Store, root: Path, jwt: bool) -> list[tuple[list[str], Step]]:
    """(argv, step) for every CLI command and SDK script of one server mode (`root`: the
    folder store seeded, which a bucket store is a copy of)."""
    where = {"{download}": str(download_dir(root))}
    commands = [
        ([str(venv / "bin" / "tinker"), *(where.get(a, a) for a in s.argv)], s)
        for s in cli_steps(store, root)
    ]
    python = str(venv / "bin" / "python")
    scripts = [
        ("SDK RestClient", SDK_SCRIPT, "SDK OK"),
        ("409 over HTTP", CONFLICT_SCRIPT, "409 OK"),
    ]
    if jwt:
        scripts += [
            ("SDK call after the first JWT expired", AFTER_EXPIRY_SCRIPT, "after expiry OK"),
            ("SDK replay after invalid_token", REPLAY_SCRIPT, "replay OK"),
        ]
    for what, script, ok in scripts:
        commands.append(([python, "-c", script], Step(what, [], says(ok))))
    return commands


def client_env(tmp: Path, url: str, credential_cmd: bool) -> dict[str, str]:
    """The tinker CLI's environment: the key, or only a command that prints it."""
    env = {**os.environ, "TINKER_BASE_URL": url, "HOME": str(tmp), "COLUMNS": "250"}
    env.pop("TINKER_API_KEY", None)
    env.pop("TINKER_CREDENTIAL_CMD", None)
    if credential_cmd:
        runs = tmp / "credential-cmd-runs"
        env["TINKER_CREDENTIAL_CMD"] = f"echo run >> '{runs}'; printf %s {API_KEY}"
    else:
        env["TINKER_API_KEY"] = API_KEY
    return env


def in_bucket(root: Path, stack: ExitStack) -> Store:
    """The seeded store at `root` copied to a new bucket on a test S3 server, with its
    checkpoints' created times in the bucket's metadata, opened as `serve s3://…` opens it
    (its objects count as settled at once)."""
    from ckpt_tui.locations import parse_location
    from ckpt_tui.store.blobs.objects import ObjectStorage
    from ckpt_tui.store.bucket import BucketStore
    from tests.support.s3_server import s3_server

    server = stack.enter_context(s3_server())
    bucket = server.make_bucket()
    server.upload(bucket, "store", root, skip=(".ckpt-tui",))
    with Store.open(root, readonly=True) as folder:
        created: dict[str, dict[str, dict[str, int]]] = {}
        for c in folder.list_checkpoints(0, 1000)[0]:
            run_id = c.tinker_path.split("/", 3)[2]
            entry = {"created_us": int(c.time.timestamp() * 1e6)}
            created.setdefault(run_id, {})[c.checkpoint_id] = entry
    document = json.dumps({"version": 1, "checkpoints": created, "runs": {}}).encode()
    server.put(bucket, "store/.ckpt-tui/meta.json", document)
    location = parse_location(f"s3://{bucket}/store", endpoint=server.endpoint)
    assert location is not None
    for name, value in server.environment().items():
        os.environ.setdefault(name, value)
    store = BucketStore.open_bucket(ObjectStorage.open(location), settle_seconds=0)
    stack.callback(store.close)
    return store


def run_mode(
    name: str, options: list[str], venv: Path, verbose: bool, bucket: bool = False
) -> tuple[int, int]:
    """Every step against a server started with `serve` `options`: (checks, failures)."""
    failures = 0
    with tempfile.TemporaryDirectory(prefix="ckpt-tinker-check-") as tmp, ExitStack() as stack:
        root = Path(tmp) / "store"
        auth = auth_options(build_parser().parse_args(["serve", str(root), *options]))
        store = seeded(root)
        if bucket:
            store.close()
            store = in_bucket(root, stack)
        app = build_app(store, auth)
        with run_server(app) as url:
            env = client_env(Path(tmp), url, auth.credential_cmd)
            commands = tinker_steps(venv, store, root, auth.jwt_lifetime is not None)
            for argv, step in commands:
                started = time.monotonic()
                limit = 120.0 if step.within is None else step.within + 1
                code, output = run_tinker(argv, env, verbose, limit)
                took = time.monotonic() - started
                ok = (code == 0) == step.expect_success and step.check(store, output)
                ok = ok and (step.within is None or took <= step.within)
                failures += not ok
                shown = " ".join(["tinker", *step.argv]) if step.argv else step.what
                print(f"{'PASS' if ok else 'FAIL'}  exit {code}  [{name}] {shown}")
                if not ok and not verbose:
                    print("      " + output.strip().replace("\n", "\n      ")[-2000:])
        store.close()
        failures += not server_side(name, app.state.jwt_issuer, Path(tmp), len(commands))
    return len(commands) + 1, failures


def server_side(name: str, issuer: Any, tmp: Path, clients: int) -> bool:
    """What the server saw: at least one JWT per client process; the command really ran."""
    problems = []
    if issuer is not None and issuer.issued < clients:
        problems.append(f"only {issuer.issued} JWTs were issued for {clients} clients")
    runs = tmp / "credential-cmd-runs"
    if name == "credential command" and not runs.exists():
        problems.append("TINKER_CREDENTIAL_CMD never ran")
    issued = "" if issuer is None else f", {issuer.issued} JWTs issued"
    ran = f", the command ran {len(runs.read_text().splitlines())} times" if runs.exists() else ""
    print(f"{'FAIL' if problems else 'PASS'}  [{name}] server side{issued}{ran}")
    for problem in problems:
        print(f"      {problem}")
    return not problems


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tinker-venv", type=Path, default=Path("/work/tinkervenv"))
    parser.add_argument("--verbose", action="store_true", help="print each command's output")
    parser.add_argument("--bucket", action="store_true", help="serve the store from a bucket")
    args = parser.parse_args()
    venv = args.tinker_venv.resolve()
    checks = failures = 0
    for name, options in SERVER_MODES:
        print(f"-- ckpt-tui serve STORE {' '.join(options).replace(API_KEY, 'KEY')}")
        ran, failed = run_mode(name, options, venv, args.verbose, args.bucket)
        checks, failures = checks + ran, failures + failed
    print(f"{checks - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
