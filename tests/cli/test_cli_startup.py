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

import ckpt_tui.cli


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
    the server and Starlette took 50 ms; a local store imports them when it is opened)."""
    uses = "import ckpt_tui.cli, ckpt_tui.cli.ls, ckpt_tui.backends.load, ckpt_tui.cli.documents"
    heavy = ("ckpt_tui.store", "ckpt_tui.server", "starlette", "uvicorn", "textual")
    listing = f"sorted(m for m in sys.modules if m.startswith({heavy!r}))"
    code = f"{uses}\nimport sys\nprint({listing})"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]", result.stdout
