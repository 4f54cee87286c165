"""Running a command without the powers that let root read any folder.

CI runs as root, and root ignores permission bits: `chmod 000` hides nothing from it. setpriv
drops CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH and CAP_FOWNER from the command's bounding set, so
it sees folders the way a second user on a shared training box does. Not root: the permission
bits already apply, and the command runs as it is.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence

import pytest

DROPPED = "-dac_override,-dac_read_search,-fowner"
SETPRIV = ["setpriv", "--bounding-set", DROPPED, "--inh-caps", DROPPED]
TIMEOUT = 120.0
"""Seconds a command may take (a busy machine); a hang fails the test instead of holding CI."""


def as_a_user(argv: Sequence[str]) -> list[str]:
    """`argv` run without root's power to read what permission bits forbid."""
    if os.geteuid() != 0:
        return list(argv)
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv (util-linux): cannot drop CAP_DAC_OVERRIDE")
    return [*SETPRIV, *argv]


def ckpt_tui_as_a_user(
    args: Sequence[str], env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`ckpt-tui ARGS` in a subprocess, as `as_a_user` says."""
    argv = as_a_user([sys.executable, "-m", "ckpt_tui", *args])
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=TIMEOUT, env=dict(env or os.environ)
    )


def python_as_a_user(code: str) -> subprocess.CompletedProcess[str]:
    """`python -c CODE` in a subprocess, as `as_a_user` says; it must succeed."""
    argv = as_a_user([sys.executable, "-c", code])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    return done
