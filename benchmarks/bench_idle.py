"""Memory while idle: the real `ckpt-tui` command, polling, with nobody at the keyboard.

Run: python benchmarks/bench_idle.py [--minutes 30] [--poll 2] [--store STORE --log-dir DIR]

Without --store it writes the demo (`ckpt-tui demo --no-tui`) into a temporary folder. It then
starts `ckpt-tui --local STORE --log-dir DIR --poll SECONDS` in a pseudo-terminal of 120x36,
as a person would, keeps reading its screen output (so it never blocks on a full terminal) and
samples the process's resident memory (VmRSS) every --sample seconds. It prints one line a
minute and then the figures the idle-memory goal is about: RSS after the first minute (the
app loaded and warmed up), at the end, the highest, and the growth from the first minute to
the end in percent. Flat means the growth stays within 10%.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import select
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

COLUMNS, LINES = 120, 36
BIN = Path(sys.executable).parent


def rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def write_demo(folder: Path) -> tuple[Path, Path]:
    command = [str(BIN / "ckpt-tui"), "demo", "--no-tui", "--dir", str(folder)]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return folder / "store", folder / "logs"


def drain(fd: int, seconds: float) -> None:
    """Read whatever the app draws for `seconds` (a terminal that is never read blocks it)."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                os.read(fd, 65536)
            except OSError:
                return


def run_idle(command: list[str], minutes: float, sample: float) -> list[tuple[float, float]]:
    """(seconds since start, RSS MiB) samples of `command` left idle in a pseudo-terminal."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(COLUMNS), "LINES": str(LINES)}
    process = subprocess.Popen(
        command, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True
    )
    os.close(slave)
    samples: list[tuple[float, float]] = []
    start = time.monotonic()
    next_report = 60.0
    try:
        while (elapsed := time.monotonic() - start) < minutes * 60:
            drain(master, sample)
            if process.poll() is not None:
                raise SystemExit(f"the app exited early with code {process.returncode}")
            rss = rss_mib(process.pid)
            if rss is not None:
                samples.append((time.monotonic() - start, rss))
            if elapsed >= next_report and samples:
                print(f"{elapsed / 60:5.1f} min: {samples[-1][1]:7.1f} MiB resident", flush=True)
                next_report += 60.0
    finally:
        os.write(master, b"q")
        drain(master, 2.0)
        if process.poll() is None:
            process.terminate()
        process.wait(10)
        os.close(master)
    return samples


def report(samples: list[tuple[float, float]], poll: float) -> None:
    warm = [rss for t, rss in samples if 50 <= t <= 70] or [samples[0][1]]
    end = [rss for t, rss in samples if t >= samples[-1][0] - 60]
    first, last = statistics.median(warm), statistics.median(end)
    peak = max(rss for _, rss in samples)
    growth = (last - first) / first * 100
    print(
        f"idle --poll {poll:g} for {samples[-1][0] / 60:.1f} min: "
        f"{first:.1f} MiB after 1 min (median), {last:.1f} MiB in the last minute (median), "
        f"peak {peak:.1f} MiB, growth {growth:+.1f}% ({'flat' if abs(growth) <= 10 else 'NOT flat'}"
        " within 10%)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--poll", type=float, default=2.0)
    parser.add_argument("--sample", type=float, default=5.0, help="seconds between samples")
    parser.add_argument("--store", type=Path, help="a store folder (default: a fresh demo)")
    parser.add_argument("--log-dir", type=Path, help="training logs of --store")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-idle-") as tmp:
        store, logs = (args.store, args.log_dir) if args.store else write_demo(Path(tmp) / "demo")
        command = [str(BIN / "ckpt-tui"), "--local", str(store), "--poll", str(args.poll)]
        if logs is not None:
            command += ["--log-dir", str(logs)]
        print("running:", " ".join(command), flush=True)
        samples = run_idle(command, args.minutes, args.sample)
    if not samples:
        raise SystemExit("no memory samples (is /proc mounted?)")
    report(samples, args.poll)


if __name__ == "__main__":
    main()
