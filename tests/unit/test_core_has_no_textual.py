"""The core (everything outside ckpt_tui/tui) must never import Textual."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import ckpt_tui

PACKAGE = Path(ckpt_tui.__file__).parent


def core_modules() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = relative.parts
        if "tui" in parts[1:2]:
            continue
        if parts[-1] == "__main__":
            continue
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_there_are_core_modules_to_check() -> None:
    assert "ckpt_tui.api_types" in core_modules()
    assert "ckpt_tui.store" in core_modules()


def test_core_never_imports_textual() -> None:
    imports = "\n".join(f"import {name}" for name in core_modules())
    listing = "sorted(m for m in sys.modules if m.startswith('textual'))"
    code = f"{imports}\nimport sys\nprint({listing})"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]", result.stdout
