"""`ckpt-tui --local s3://… ls --json` against rclone's recursive listing of the same bucket.

    python benchmarks/bench_bucket.py [--checkpoints 10000] [--latency 0.05] [--reps 3]

Starts the test S3 server (moto's server mode) in a process of its own and fills a bucket with
`--checkpoints` checkpoints, Tinker and Trainer layouts half and half (about 3 objects each:
Tinker `runs/<run>/weights/<n>/` with an adapter and its config, and `run.json` per run;
Trainer `checkpoint-<step>/` with model.safetensors, config.json, trainer_state.json and
optimizer.pt), put straight into the server's memory. Then, behind a loopback proxy holding
every request `--latency` seconds (bench_ls.LatencyProxy), `--reps` times each, turn about:
- `ckpt-tui --local s3://bench/team ls --json` (this checkout's, or `--ckpt-tui PATH`), cold
  (an empty cache folder, `XDG_CACHE_HOME`: every file start is read from the bucket) and then
  warm (the cache folder the cold run of the same turn filled: only the listing is sent);
- `rclone lsjson -R --no-mimetype --use-server-modtime bench:bench/team` (Debian's rclone,
  its S3 remote configured by environment variables);
- the same with `--fast-list` (rclone's one flat listing), unless `--no-fast-list`;
- with `--against PATH`, that ckpt-tui too (an older checkout's), cold and warm on a cache
  folder of its own, in the same turns: a comparison that the machine's speed from one
  hour to the next does not skew.
Prints each one's median wall time, the ratios, and whether each listed every object or
checkpoint. Needs the test extra (moto) and rclone (`apt install rclone`).

With `--tui`, then (before any prune): the app, `ckpt-tui --local s3://bench/team`, in a tmux
window of 120x36, cold then warm (a cache of its own; `--tui-reps N` warm turns): seconds from
start to the first frame (the app's first screen with text, bench_start.screen_times) and to
the complete view (the header says "<N> checkpoints"), with the CPU time used by then; each
warm turn also times a warm `ls --json` on the same cache (after the app in odd turns, before
it in even ones) and prints how much later the app's complete view came (the target: no
later), and the median of that difference; with `--against`, each warm turn times that
ckpt-tui's app and `ls` the same way, after this one's. `--reps 0 --tui` times the app only.

With `--prune`, then once (it deletes): `ckpt-tui --local s3://bench/team prune --keep-last 1
--yes` through the same proxy, after the objects have settled (10 s after they were written).
Prints the checkpoints and objects deleted, objects deleted per second (over the whole command,
and over its deleting part: from the first PUT, an intent record, to the last DeleteObjects),
and the requests the proxy saw by kind: DeleteObjects batches, lists, PUTs (intent records),
GETs (the open reading file starts), the rest; the target is batches, not one request per
object. `--only-prune` skips the listings.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_ls import LatencyProxy, default_ckpt_tui
from bench_start import ScreenTimes, screen_times, tmux_server, with_bytecode_caches

from tests.support.s3_server import S3Server, s3_server

if TYPE_CHECKING:
    from multiprocessing.synchronize import Event

BUCKET, PREFIX = "bench", "team"
COLD = "ckpt-tui ls --json, cold cache"
WARM = "ckpt-tui ls --json, warm cache"
AGAINST_COLD = "--against ls --json, cold cache"
AGAINST_WARM = "--against ls --json, warm cache"
PER_RUN = 100


def tiny_safetensors(name: str) -> bytes:
    header = json.dumps({name: {"dtype": "F32", "shape": [4, 4], "data_offsets": [0, 64]}})
    raw = header.encode()
    return struct.pack("<Q", len(raw)) + raw + bytes(64)


def fill(server: S3Server, checkpoints: int) -> int:
    """Put the bucket's objects straight into moto's memory; the number of objects."""
    from moto.core import DEFAULT_ACCOUNT_ID  # type: ignore[attr-defined]
    from moto.s3.models import s3_backends

    server.make_bucket(BUCKET)
    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    objects = 0

    def put(key: str, data: bytes) -> None:
        nonlocal objects
        backend.put_object(BUCKET, f"{PREFIX}/{key}", data)
        objects += 1

    tinker = checkpoints // 2
    adapter = tiny_safetensors("base_model.model.q_proj.lora_A.weight")
    model = tiny_safetensors("model.embed_tokens.weight")
    config = json.dumps({"_name_or_path": "Qwen/Qwen3-8B", "model_type": "qwen3"}).encode()
    adapter_config = json.dumps({"peft_type": "LORA", "r": 32, "lora_alpha": 32}).encode()
    for i in range(tinker):
        run, n = divmod(i, PER_RUN)
        if n == 0:
            info = {"base_model": "Qwen/Qwen3-8B", "is_lora": True, "lora_rank": 32,
                    "created": "2026-11-01T00:00:00Z"}  # fmt: skip
            put(f"runs/run-{run:04d}/run.json", json.dumps(info).encode())
        folder = f"runs/run-{run:04d}/weights/{n:06d}"
        put(f"{folder}/adapter_model.safetensors", adapter)
        put(f"{folder}/adapter_config.json", adapter_config)
    for i in range(checkpoints - tinker):
        run, n = divmod(i, PER_RUN)
        step = (n + 1) * 100
        folder = f"trainer/sft-{run:04d}/checkpoint-{step}"
        state = {"global_step": step, "epoch": n, "log_history": [{"eval_loss": 1.0, "step": step}]}
        put(f"{folder}/model.safetensors", model)
        put(f"{folder}/config.json", config)
        put(f"{folder}/trainer_state.json", json.dumps(state).encode())
        put(f"{folder}/optimizer.pt", bytes(128))
    return objects


def serve(checkpoints: int, ready: multiprocessing.Queue[tuple[str, dict[str, str], int]],
          stop: Event) -> None:  # fmt: skip
    """In a process of its own (its own interpreter lock): moto, filled, until `stop`."""
    with s3_server() as server:
        objects = fill(server, checkpoints)
        ready.put((server.endpoint, server.environment(), objects))
        stop.wait()


def timed(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1) or not done.stdout.strip():
        sys.exit(f"{command[0]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return seconds, done.stdout


def ckpt_tui_count(out: str) -> int:
    return sum(len(run["checkpoints"]) for run in json.loads(out)["runs"])


def rclone_count(out: str) -> int:
    return sum(1 for item in json.loads(out) if not item.get("IsDir"))


class CountingProxy(LatencyProxy):
    """`LatencyProxy` that also counts the requests clients send, by kind (a request's first
    chunk starts with its method; a body sent in a later chunk is not counted again)."""

    def __init__(self, upstream_port: int, latency: float) -> None:
        super().__init__(upstream_port, latency)
        self.counts: dict[str, int] = {}
        self.first_put: float | None = None
        self.last_delete: float | None = None
        """When the first PUT (prune's first intent record) and the last DeleteObjects
        arrived (perf_counter): the deleting part of a prune, without its open."""

    def reset(self) -> None:
        self.counts = {}
        self.first_put = self.last_delete = None

    def count(self, data: bytes) -> None:
        line = data.split(b"\r\n", 1)[0].decode("latin-1")
        method, _, rest = line.partition(" ")
        if method not in ("GET", "PUT", "POST", "DELETE", "HEAD"):
            return
        target = rest.rsplit(" ", 1)[0]
        if method == "POST" and "?delete" in target:
            kind = "DeleteObjects"
        elif method == "GET" and "list-type=2" in target:
            kind = "ListObjectsV2"
        else:
            kind = method
        self.counts[kind] = self.counts.get(kind, 0) + 1
        if kind == "PUT" and self.first_put is None:
            self.first_put = time.perf_counter()
        elif kind == "DeleteObjects":
            self.last_delete = time.perf_counter()

    def asked(self, data: bytes) -> None:
        super().asked(data)
        self.count(data)


def tui_times(command: list[str], env: dict[str, str], checkpoints: int) -> ScreenTimes:
    """The times to the app's first frame and to its complete view, from a tmux window."""
    shown = f"{checkpoints:,} checkpoints"
    return screen_times(command, with_bytecode_caches(env), lambda screen: shown in screen)


def time_the_app(args: argparse.Namespace, env: dict[str, str], ls: list[str], cache: str) -> None:
    """The app's first frame and complete view, cold then warm (`--tui-reps` warm turns), each
    warm one beside a warm `ls --json` on the same cache, so that the two compare; with
    `--against`, that ckpt-tui's app and `ls` too in each warm turn, on the same cache. The
    app goes first in odd turns and `ls` in even ones: in three pairs of a request trace on
    moto, the first of two listings in a row was the slower each time (by 0.13-1.35 s), so
    the app always first would count that against the app."""
    env = {**env, "XDG_CACHE_HOME": cache}
    builds = {"": args.ckpt_tui} | ({"--against ": args.against} if args.against else {})
    after_ls: dict[str, list[float]] = {label: [] for label in builds}
    with tmux_server():
        for turn in range(args.tui_reps + 1):  # turn 0: cold
            for label, ckpt_tui in builds.items():
                if turn == 0 and label:
                    continue
                app = [ckpt_tui, "--local", f"s3://{BUCKET}/{PREFIX}"]
                its_ls = [ckpt_tui, *ls[1:]]
                ls_first = turn > 0 and turn % 2 == 0
                seconds = timed(its_ls, env)[0] if ls_first else 0.0
                seen = tui_times(app, env, args.checkpoints)
                print(f"  {label}the app, {'warm' if turn else 'cold'} cache: first frame "
                      f"{seen.first:.2f} s ({seen.first_cpu:.2f} s CPU), complete view "
                      f"{seen.complete:.2f} s ({seen.complete_cpu:.2f} s CPU)", end="")  # fmt: skip
                if turn == 0:
                    print()
                    continue
                if not ls_first:
                    seconds = timed(its_ls, env)[0]
                after_ls[label].append(seen.complete - seconds)
                when = "just before" if ls_first else "right after"
                print(f"; ls --json {when}: {seconds:.2f} s "
                      f"(the app {seen.complete - seconds:+.2f} s)", flush=True)  # fmt: skip
    for label, differences in after_ls.items():
        if differences:
            print(f"  {label}the app's complete view minus ls's time, median of "
                  f"{len(differences)}: {statistics.median(differences):+.2f} s")  # fmt: skip


def object_count(environment: dict[str, str], upstream: str) -> int:
    """Objects under the bench prefix, listed straight from moto (no proxy)."""
    import boto3

    client = boto3.client(
        "s3",
        endpoint_url=upstream,
        region_name=environment["AWS_REGION"],
        aws_access_key_id=environment["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=environment["AWS_SECRET_ACCESS_KEY"],
    )
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=f"{PREFIX}/")
    return sum(
        1
        for page in pages
        for item in page.get("Contents", [])
        if "/.ckpt-tui/" not in f"/{item['Key']}"
    )


def bench_prune(
    args: argparse.Namespace,
    proxy: CountingProxy,
    env: dict[str, str],
    upstream: str,
    written_at: float,
) -> None:
    """One `prune --keep-last 1 --yes` over the whole bucket, through the proxy."""
    wait = 10.5 - (time.monotonic() - written_at)  # the settle time: objects newer are kept
    if wait > 0:
        time.sleep(wait)
    before = object_count(env, upstream)
    command = [args.ckpt_tui, "--local", f"s3://{BUCKET}/{PREFIX}", "prune", "--keep-last", "1"]
    proxy.reset()
    start = time.perf_counter()
    done = subprocess.run(
        [*command, "--yes", "--json"], env=env, capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - start
    counts = dict(proxy.counts)
    after = object_count(env, upstream)
    try:
        outcomes = json.loads(done.stdout)["outcomes"]
    except (ValueError, KeyError):
        sys.exit(f"prune failed ({done.returncode}): {done.stderr[-2000:]}")
    deleted = sum(1 for o in outcomes if o.get("ok"))
    objects = before - after
    total = sum(counts.values())
    print(f"\nprune --keep-last 1 --yes over {args.checkpoints:,} checkpoints "
          f"(+{args.latency * 1000:.0f} ms per request), exit {done.returncode}:")  # fmt: skip
    rate = objects / seconds
    print(f"  {len(outcomes):,} deletes asked, {deleted:,} answered done; "
          f"{objects:,} objects deleted in {seconds:.1f} s: {rate:,.0f} objects/s")  # fmt: skip
    kinds = ", ".join(f"{kind} {n:,}" for kind, n in sorted(counts.items()))
    batches = counts.get("DeleteObjects", 0)
    print(f"  {total:,} requests: {kinds}; {batches / max(objects, 1):.3f} DeleteObjects "
          f"and {total / max(objects, 1):.2f} requests per object deleted")  # fmt: skip
    if proxy.first_put is not None and proxy.last_delete is not None:
        phase = max(proxy.last_delete - proxy.first_put, 1e-9)
        print(f"  deleting, from the first PUT (an intent record) to the last DeleteObjects: "
              f"{phase:.1f} s, {objects / phase:,.0f} objects/s (the rest: opening the "
              "bucket and planning)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--checkpoints", type=int, default=10_000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument(
        "--cold-reps",
        type=int,
        help="cold runs (the first turns; default --reps): later "
        "turns time the warm run on the first turn's cache",
    )
    parser.add_argument("--ckpt-tui", default=default_ckpt_tui(), help="the ckpt-tui to time")
    parser.add_argument(
        "--against", help="another ckpt-tui (e.g. an older checkout's) timed in the same turns"
    )
    parser.add_argument("--rclone", default=shutil.which("rclone") or "rclone")
    parser.add_argument("--no-fast-list", action="store_true", help="leave out --fast-list")
    parser.add_argument("--prune", action="store_true", help="then time prune (it deletes)")
    parser.add_argument("--tui", action="store_true", help="then time the app's frames")
    parser.add_argument("--tui-reps", type=int, default=1, help="warm turns of the app and ls")
    parser.add_argument("--only-prune", action="store_true", help="time prune only")
    args = parser.parse_args()
    ready: multiprocessing.Queue[tuple[str, dict[str, str], int]] = multiprocessing.Queue()
    stop = multiprocessing.Event()
    moto = multiprocessing.Process(target=serve, args=(args.checkpoints, ready, stop))
    moto.start()
    try:
        started = time.perf_counter()
        upstream, environment, objects = ready.get(timeout=600)
        written_at = time.monotonic()
        print(f"{args.checkpoints:,} checkpoints, {objects:,} objects written in "
              f"{time.perf_counter() - started:.1f} s")  # fmt: skip
        port = int(upstream.rsplit(":", 1)[1])
        proxy = CountingProxy(port, args.latency)
        with proxy:
            endpoint = f"http://127.0.0.1:{proxy.port}"
            env = {**os.environ, **environment, "AWS_ENDPOINT_URL": endpoint}
            env.pop("AWS_CA_BUNDLE", None)  # plain HTTP: rclone's SDK refuses a bundle then
            env.update(
                RCLONE_CONFIG_BENCH_TYPE="s3",
                RCLONE_CONFIG_BENCH_PROVIDER="Other",
                RCLONE_CONFIG_BENCH_ENDPOINT=endpoint,
                RCLONE_CONFIG_BENCH_ACCESS_KEY_ID=env["AWS_ACCESS_KEY_ID"],
                RCLONE_CONFIG_BENCH_SECRET_ACCESS_KEY=env["AWS_SECRET_ACCESS_KEY"],
                RCLONE_CONFIG_BENCH_REGION=env["AWS_REGION"],
                RCLONE_CONFIG_BENCH_FORCE_PATH_STYLE="true",
            )
            rclone = [args.rclone, "lsjson", "-R", "--no-mimetype", "--use-server-modtime"]
            ls = [args.ckpt_tui, "--local", f"s3://{BUCKET}/{PREFIX}", "ls", "--json"]
            commands = {
                COLD: (ls, ckpt_tui_count, args.checkpoints),
                WARM: (ls, ckpt_tui_count, args.checkpoints),
                "rclone lsjson -R": ([*rclone, f"bench:{BUCKET}/{PREFIX}"], rclone_count, objects),
            }  # fmt: skip
            if args.against:
                against = [args.against, *ls[1:]]
                commands[AGAINST_COLD] = (against, ckpt_tui_count, args.checkpoints)
                commands[AGAINST_WARM] = (against, ckpt_tui_count, args.checkpoints)
            if not args.no_fast_list:
                fast = [*rclone, "--fast-list", f"bench:{BUCKET}/{PREFIX}"]
                commands["rclone lsjson -R --fast-list"] = (fast, rclone_count, objects)
            times: dict[str, list[float]] = {name: [] for name in commands}
            caches = tempfile.TemporaryDirectory(prefix="bench-bucket-cache-")
            for rep in range(0 if args.only_prune else args.reps):
                cold_reps = args.reps if args.cold_reps is None else args.cold_reps
                cache = os.path.join(caches.name, str(min(rep, cold_reps - 1)))
                for name, (command, count, expected) in commands.items():  # COLD fills it
                    if name in (COLD, AGAINST_COLD) and rep >= cold_reps:
                        continue
                    own = cache + ("-against" if name in (AGAINST_COLD, AGAINST_WARM) else "")
                    seconds, out = timed(command, {**env, "XDG_CACHE_HOME": own})
                    whole = count(out) == expected
                    times[name].append(seconds)
                    print(f"  run {rep + 1}: {name}: {seconds:.2f} s, whole: {whole}", flush=True)
            if args.tui:
                time_the_app(args, env, ls, os.path.join(caches.name, "tui"))
            if args.prune or args.only_prune:
                bench_prune(args, proxy, env, upstream, written_at)
    finally:
        stop.set()
        moto.join(30)
    if args.only_prune or not args.reps:
        return
    print(f"\n{args.checkpoints:,} checkpoints, {objects:,} objects on moto, "
          f"+{args.latency * 1000:.0f} ms per request, median of {args.reps}:")  # fmt: skip
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, median in medians.items():
        print(f"  {name:32} {median:7.2f} s")
    fastest = min(median for name, median in medians.items() if name.startswith("rclone"))
    for name in (COLD, WARM, AGAINST_COLD, AGAINST_WARM):
        if name not in medians:
            continue
        print(f"  rclone's fastest / {name}: {fastest / medians[name]:.2f}x "
              f"({'faster' if medians[name] < fastest else 'slower'} than rclone)")  # fmt: skip


if __name__ == "__main__":
    main()
