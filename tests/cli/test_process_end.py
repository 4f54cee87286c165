"""The executable ends without finalizing the interpreter, its output flushed first
(`cli.common.end_process`): obstore answers a bucket's requests from threads of its own that
call into Python, and one doing so while the interpreter finalizes aborts the process
(SIGABRT: the demo quit that way while its bucket was still being read)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import layouts as L

GUARD = 120.0
"""Seconds the command may take before the test calls it a hang."""
MARKED = (
    "import atexit, sys; atexit.register(print, 'the interpreter was finalized'); "
    "sys.argv[0] = 'ckpt-tui'; from ckpt_tui.cli import console_main; "
    "raise SystemExit(console_main())"
)
"""`ckpt-tui` as the executable runs it, with a mark printed if the interpreter finalizes."""


@pytest.mark.parametrize("stderr", ["open", "closed"])
def test_a_command_on_a_bucket_ends_with_its_output_and_without_finalizing(
    tmp_path: Path, stderr: str
) -> None:
    """Also with stderr closed (`2>&-`: `sys.stderr` is None), which has nothing to flush."""
    L.hf_trainer_output(tmp_path / "bucket/out", steps=(100, 200))
    command = [
        sys.executable,
        "-c",
        MARKED,
        "backends",
        "--local",
        f"team=file://{tmp_path}/bucket",
    ]
    if stderr == "closed":
        command = ["/bin/sh", "-c", 'exec "$@" 2>&-', "sh", *command]
    result = subprocess.run(
        command,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home")},
        capture_output=True,  # stdout a pipe: block-buffered, so it must be flushed first
        text=True,
        timeout=GUARD,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "reachable" in result.stdout  # the bucket's line
    assert "finalized" not in result.stdout
