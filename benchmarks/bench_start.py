"""Seconds from `ckpt-tui`'s start to the app's first frame, as a person sees it in a terminal.

    python benchmarks/bench_start.py [--reps 5] [--compare OLD_CKPT_TUI] [--py-spy DIR]

Each command runs in a tmux window of 120x36 (a tmux server of its own; a clean environment:
HOME, XDG_* and the working folder in a fresh temporary folder, no TINKER_* variables, so no
config file or credential adds a backend), and the window is read every 20 ms. Python may write
its bytecode caches (PYTHONDONTWRITEBYTECODE is dropped, as a pip install has them) and one
untimed run of each command comes first: without them every start compiled each module of
ckpt-tui again (this machine sets PYTHONDONTWRITEBYTECODE=1), which is not what a user waits
for. The first frame is the first
reading with the terminal in the alternate screen (where the app draws) and text on it; what a
command prints before the app starts (the demo's "Demo written to ...") does not count. The
complete view is the first reading that shows the command's final text. Beside the first
frame's time, the CPU time the process had used by then (/proc), which a busy machine inflates
far less. Commands, turn about,
`--reps` times each:
- `ckpt-tui --local EMPTY_FOLDER` (complete: "no checkpoints found");
- `ckpt-tui demo --dir DIR` (it writes the demo first, which counts: the person waits for it;
  complete: the header marks the three demo backends loaded).
With `--compare PATH`, the same with another ckpt-tui executable (e.g. one of an older commit's
virtualenv), turn about with this one. Prints each run, then the medians. The target (issue 27):
the first frame within 1 s of the start. `--py-spy DIR` also records one run of each command
with py-spy (in the test venv: `pip install py-spy`) into DIR/<case>.txt, to see where the time
goes. A bucket's first frame: `bench_bucket.py --reps 0 --tui`, which uses `screen_times`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from bench_ls import default_ckpt_tui

POLL = 0.02
TMUX = ["tmux", "-L", f"bench-start-{os.getpid()}"]
"""A tmux server of its own: another user of the default one cannot end it mid-run."""


def with_bytecode_caches(env: Mapping[str, str]) -> dict[str, str]:
    """`env` without PYTHONDONTWRITEBYTECODE: Python keeps its compiled modules, as after a
    pip install (this machine sets it, and every start then compiled ckpt-tui again)."""
    return {name: value for name, value in env.items() if name != "PYTHONDONTWRITEBYTECODE"}


def clean_environment(home: Path) -> dict[str, str]:
    """The environment a command runs in: this one without TINKER_* (the hosted service would
    join as a backend), with HOME and XDG folders of its own (no config file, no credentials,
    an empty cache)."""
    env = with_bytecode_caches(
        {name: value for name, value in os.environ.items() if not name.startswith("TINKER_")}
    )
    for name, folder in (("XDG_CONFIG_HOME", "config"), ("XDG_CACHE_HOME", "cache")):
        env[name] = str(home / folder)
    env["HOME"] = str(home)
    return env


Complete = Callable[[str], bool]
"""Whether a reading of the screen shows the complete view."""


class ScreenTimes(NamedTuple):
    first: float
    """Seconds from the start to the app's first frame."""
    complete: float
    """Seconds from the start to the complete view."""
    first_cpu: float
    """CPU seconds the process had used when the first frame was seen: what the start costs,
    which a busy machine's waits do not inflate (up to one reading late)."""
    complete_cpu: float = 0.0
    """CPU seconds the process had used when the complete view was seen."""


def screen_times(
    command: Sequence[str], env: Mapping[str, str], complete: Complete, limit: float = 900
) -> ScreenTimes:
    """The times to the app's first frame and to the first screen `complete` accepts, read
    from a tmux window of 120x36 that runs `command` with exactly `env`."""
    session = "timed"
    start = time.perf_counter()
    run_in_window(session, command, env)
    pid = subprocess.run(
        [*TMUX, "display", "-p", "-t", session, "#{pane_pid}"], capture_output=True, text=True
    ).stdout.strip()  # `env` runs the command in its own process
    first = first_cpu = None
    read = [*TMUX, "display", "-p", "-t", session, "#{alternate_on}", ";"]
    read += ["capture-pane", "-p", "-t", session]
    try:
        while time.perf_counter() - start < limit:
            answer = subprocess.run(read, capture_output=True, text=True).stdout
            now = time.perf_counter() - start
            alternate, _, screen = answer.partition("\n")
            if first is None and alternate == "1" and screen.strip():
                first, first_cpu = now, cpu_seconds(pid)
            if first is not None and first_cpu is not None and complete(screen):
                return ScreenTimes(first, now, first_cpu, cpu_seconds(pid))
            time.sleep(POLL)
        sys.exit(f"{command[0]}: no complete view within {limit:.0f} s")
    finally:
        subprocess.run([*TMUX, "kill-session", "-t", session], check=False)


def cpu_seconds(pid: str) -> float:
    """User and system CPU seconds process `pid` has used, all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_in_window(session: str, command: Sequence[str], env: Mapping[str, str]) -> None:
    """Start `command` with exactly `env` in a new window of 120x36 named `session`."""
    tmux = [*TMUX, "new-session", "-d", "-s", session, "-x", "120", "-y", "36"]
    exports = [f"{name}={value}" for name, value in env.items()]
    subprocess.run([*tmux, "env", "-i", *exports, *command], check=True, cwd=env.get("HOME"))


def empty_complete(screen: str) -> bool:
    return "no checkpoints found" in screen


def demo_complete(screen: str) -> bool:
    """The header marks each of the demo's three backends loaded (✓)."""
    return screen.partition("\n")[0].count("✓") == 3


def record(command: Sequence[str], env: Mapping[str, str], out: Path, seconds: float) -> None:
    """py-spy's record of `command` (the first `seconds`), as collapsed stacks in `out`."""
    py_spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or "py-spy"
    spy = [py_spy, "record", "--format", "raw", "--subprocesses", "--idle", "--rate", "250"]
    spy += ["--duration", str(int(seconds)), "-o", str(out), "--", *command]
    run_in_window("spied", spy, env)
    try:
        deadline = time.monotonic() + seconds + 30
        while time.monotonic() < deadline and not out.exists():
            time.sleep(0.2)
        time.sleep(1)
    finally:
        subprocess.run([*TMUX, "kill-session", "-t", "spied"], check=False, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--ckpt-tui", default=default_ckpt_tui(), help="the ckpt-tui to time")
    parser.add_argument("--compare", help="another ckpt-tui executable, timed turn about")
    parser.add_argument("--py-spy", type=Path, help="record one run of each command here")
    args = parser.parse_args()
    executables = {"this": args.ckpt_tui} | ({"compare": args.compare} if args.compare else {})
    with tmux_server():
        measure(args, executables)


@contextmanager
def tmux_server() -> Iterator[None]:
    """Our own tmux server, kept alive between windows (a window's end would otherwise end
    it while the next one starts), and ended on the way out."""
    keeper = [*TMUX, "new-session", "-d", "-s", "keeper", "sleep", "86400"]
    subprocess.run(keeper, check=True)
    try:
        yield
    finally:
        subprocess.run([*TMUX, "kill-server"], check=False)


def measure(args: argparse.Namespace, executables: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-start-") as tmp:
        root = Path(tmp)
        empty = root / "empty"
        empty.mkdir()

        def cases(exe: str) -> dict[str, tuple[list[str], Complete]]:
            demo = [exe, "demo", "--dir", str(root / "demo")]
            return {
                "empty folder": ([exe, "--local", str(empty)], empty_complete),
                "demo": (demo, demo_complete),
            }

        if args.py_spy is not None:
            args.py_spy.mkdir(parents=True, exist_ok=True)
            for case, (command, _) in cases(args.ckpt_tui).items():
                home = Path(tempfile.mkdtemp(dir=root))
                out = args.py_spy / f"{case.replace(' ', '-')}.txt"
                record(command, clean_environment(home), out, 8)
                print(f"py-spy record of {case}: {out}", flush=True)
        for exe in executables.values():  # bytecode caches written, files in the page cache
            for command, complete in cases(exe).values():
                home = Path(tempfile.mkdtemp(dir=root))
                screen_times(command, clean_environment(home), complete)
        times: dict[tuple[str, str], list[ScreenTimes]] = {}
        for rep in range(args.reps):
            for label, exe in executables.items():
                for case, (command, complete) in cases(exe).items():
                    home = Path(tempfile.mkdtemp(dir=root))
                    seen = screen_times(command, clean_environment(home), complete)
                    times.setdefault((label, case), []).append(seen)
                    print(f"  run {rep + 1}: {label} {case}: first frame {seen.first:.2f} s "
                          f"({seen.first_cpu:.2f} s CPU), complete {seen.complete:.2f} s",
                          flush=True)  # fmt: skip
    print(f"\nmedian of {args.reps} (load average {os.getloadavg()[0]:.1f} at the end):")
    for (label, case), values in times.items():
        first, whole, cpu = (statistics.median(value[i] for value in values) for i in range(3))
        print(f"  {label:8} {case:13} first frame {first:5.2f} s ({cpu:4.2f} s CPU), "
              f"complete view {whole:5.2f} s")  # fmt: skip


if __name__ == "__main__":
    main()
