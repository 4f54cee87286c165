"""ckpt-tui: a terminal checkpoint manager for fine-tuning runs."""

import sys

__version__ = "0.1.0"

# httpx imports its own command-line client (click, rich and pygments: 25 ms of every start,
# benchmarks/bench_ls.py) whenever those are installed, as Textual and uvicorn install them.
# ckpt-tui never runs it; a None entry makes that import fail, and httpx then goes without.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
