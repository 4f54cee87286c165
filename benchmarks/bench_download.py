"""`ckpt-tui download` against the official `tinker checkpoint download`, and a killed download.

    python benchmarks/bench_download.py [--gib 2] [--shards 8] [--tinker VENV] [--latency 0.05]

Writes a store with one external checkpoint of `--shards` safetensors shards (`--gib` GiB in
all; each shard one U8 tensor, its data a sparse file of zeros), serves it with `ckpt-tui serve`
in another process behind bench_ls's proxy that holds each request `--latency` seconds, and:
- downloads it with `ckpt-tui download` and, with `--tinker VENV`, with the official CLI from
  that virtualenv, side by side, `--reps` times each: seconds, MiB/s and CPU seconds of each
  run, and whether every file arrived whole;
- starts `ckpt-tui download` again, kills its process group once half the bytes are in
  `.part` files, reruns it, and prints the share of the checkpoint the rerun fetched
  (its `--json` `fetched_bytes`).
Targets (issue 28): ckpt-tui's throughput at least the official CLI's; the rerun fetches at
most 55% of the bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import struct
import subprocess
import tempfile
import time
from pathlib import Path

from bench_ls import LOOPBACK, LatencyProxy, default_ckpt_tui, served

from ckpt_tui.store import Store

RUN, NAME = "bench-run", "final"
TINKER_PATH = f"tinker://{RUN}/external_weights/{NAME}"
FOLDER = f"{RUN}_external_weights_{NAME}"
MIB = 1024 * 1024


def write_shard(path: Path, data_bytes: int) -> None:
    """A valid safetensors file: one U8 tensor of `data_bytes` zeros (sparse on disk)."""
    header = {"w": {"dtype": "U8", "shape": [data_bytes], "data_offsets": [0, data_bytes]}}
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    with path.open("wb") as out:
        out.write(struct.pack("<Q", len(raw)) + raw)
        out.truncate(8 + len(raw) + data_bytes)


def make_store(root: Path, total: int, shards: int) -> int:
    """The store with the one checkpoint; its size in bytes."""
    with Store.open(root) as store:
        store.create_run(RUN, "bench/model")
        store.add_checkpoint(RUN, f"external_weights/{NAME}", {"config.json": b"{}"})
        folder = store.checkpoint_dir(RUN, f"external_weights/{NAME}")
        for index in range(shards):
            write_shard(folder / f"model-{index:05d}-of-{shards:05d}.safetensors", total // shards)
        store.refresh_checkpoint(RUN, f"external_weights/{NAME}")
    return sum(p.stat().st_size for p in folder.iterdir())


def same_files(left: Path, right: Path) -> bool:
    def files(root: Path) -> dict[str, int]:
        return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}

    return files(left) == files(right)  # sizes; every byte is a zero and verify checked headers


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process): on a busy machine the CPU time is the
    steadier figure of what the tool itself costs."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{argv[0]} failed ({done.returncode}): {done.stderr[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return time.perf_counter() - start, cpu


def killed_at_half(argv: list[str], env: dict[str, str], folder: Path, total: int) -> int:
    """Start `argv`, kill it once half the bytes are in `.part` files; the bytes it kept."""
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    kept = 0
    try:
        while process.poll() is None and kept < total // 2:
            time.sleep(0.005)
            kept = sum(p.stat().st_size for p in folder.glob("*.part")) if folder.exists() else 0
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    return sum(p.stat().st_size for p in folder.glob("*.part"))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--gib", type=float, default=2.0, help="checkpoint size in GiB")
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--tinker", type=Path, help="a virtualenv with the official tinker CLI")
    parser.add_argument("--ckpt-tui", default=default_ckpt_tui(), help="the ckpt-tui to time")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per request")
    parser.add_argument("--reps", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-download-") as tmp:
        work = Path(tmp)
        total = make_store(work / "store", int(args.gib * 1024 * MIB), args.shards)
        source = work / "store" / "runs" / RUN / "external_weights" / NAME
        env = {**os.environ, "HOME": str(work), "TINKER_API_KEY": "tml-bench"}
        env.pop("TINKER_CREDENTIAL_CMD", None)
        with (
            served(work / "store", args.ckpt_tui) as port,
            LatencyProxy(port, args.latency) as proxy,
        ):
            url = f"http://{LOOPBACK}:{proxy.port}"
            env["TINKER_BASE_URL"] = url
            ours = [args.ckpt_tui, "download", TINKER_PATH, "--url", url, "--no-tinker"]
            tools = {"ckpt-tui download": ours}
            if args.tinker:
                tools["tinker checkpoint download"] = [
                    str(args.tinker / "bin" / "tinker"), "checkpoint", "download", TINKER_PATH
                ]  # fmt: skip
            latency = f"{args.latency * 1000:.0f} ms a request"
            print(f"{total / MIB:.0f} MiB in {args.shards + 1} files, {latency}")
            for rep in range(args.reps):
                for name, argv in tools.items():
                    out = work / f"out-{rep}-{name.split()[0]}"
                    seconds, cpu = timed([*argv, "-o", str(out)], env)
                    ok = same_files(out / FOLDER, source)
                    rate = f"{total / MIB / seconds:.0f} MiB/s"
                    print(f"  {name}: {seconds:.2f} s, {rate}, {cpu:.2f} s CPU, whole: {ok}")
                    subprocess.run(["rm", "-rf", str(out)], check=True)
            resume_out = work / "resume"
            kept = killed_at_half([*ours, "-o", str(resume_out)], env, resume_out / FOLDER, total)
            again = subprocess.run([*ours, "-o", str(resume_out), "--json"], env=env,
                                   capture_output=True, text=True, check=True)  # fmt: skip
            fetched = json.loads(again.stdout)["downloads"][0]["fetched_bytes"]
            whole = same_files(resume_out / FOLDER, source)
            print(f"  killed with {kept / total:.0%} kept; the rerun fetched {fetched / total:.0%}"
                  f" of the bytes (target <= 55%); whole: {whole}")  # fmt: skip


if __name__ == "__main__":
    main()
