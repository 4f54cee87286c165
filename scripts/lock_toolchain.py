"""Refresh `constraints.txt`, the pinned toolchain that CI and the README's test command install.

    python scripts/lock_toolchain.py               # pyproject.toml changed: keeps every pin it can
    python scripts/lock_toolchain.py --upgrade     # the newest release of everything, on purpose
    python scripts/lock_toolchain.py --upgrade-package textual    # the newest of one package

`pyproject.toml` keeps the ranges users install with; `constraints.txt` pins one version of every
package the tests need (dependencies, the `test` extra and theirs), so that a new release of a
dependency cannot change CI without a change here. It is resolved once for every Python from
`requires-python` up (`uv pip compile --universal`): a package whose newest release dropped an
old Python gets a pin per Python, each with its marker. Extra arguments go to `uv pip compile`.
It needs uv (`.venv/bin/pip install uv`). After a change of the lock, run the tests on the oldest
and the newest Python supported (README, "Development").
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOCK = "constraints.txt"
REFRESH = "python scripts/lock_toolchain.py"


def oldest_python() -> str:
    """The lower bound of pyproject.toml's requires-python (`>=3.N`), the lock's oldest Python."""
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    found = re.search(r'^requires-python = ">=(\d+\.\d+)"$', text, re.MULTILINE)
    if found is None:
        sys.exit("pyproject.toml has no requires-python of the form '>=3.N'")
    return found.group(1)


def uv_command() -> list[str]:
    """uv from this interpreter's environment, else from the PATH."""
    if importlib.util.find_spec("uv") is not None:
        return [sys.executable, "-m", "uv"]
    on_path = shutil.which("uv")
    if on_path is None:
        sys.exit("uv is not installed: run `.venv/bin/pip install uv`, then this script again.")
    return [on_path]


def main(extra_args: list[str]) -> int:
    command = [
        *uv_command(),
        "pip",
        "compile",
        "pyproject.toml",
        "--extra",
        "test",
        "--universal",
        "--python-version",
        oldest_python(),
        "--custom-compile-command",
        REFRESH,
        "--output-file",
        LOCK,
        *extra_args,
    ]
    done = subprocess.run(command, cwd=REPO, check=False)
    if done.returncode == 0:
        print(
            f"{LOCK} written. If it changed, run the tests on the oldest and the newest Python"
            " supported before committing it (README, 'Development')."
        )
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
