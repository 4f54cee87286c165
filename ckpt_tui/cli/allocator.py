"""How the process's C allocator returns big blocks to the system (glibc only).

Only the long-running commands (the app, `demo`, `serve`) set it: a one-shot listing keeps no
memory between refreshes, and would only pay a page fault for every big buffer it reads.
"""

from __future__ import annotations

import ctypes

M_MMAP_THRESHOLD = -3
"""glibc's mallopt parameter: blocks at least this big get a mapping of their own."""
BIG_BLOCK = 128 * 1024
"""glibc's own starting threshold, kept fixed."""


def map_big_blocks() -> bool:
    """Give every block of 128 KiB or more its own mapping, returned to the system when freed.

    glibc starts so, but raises the threshold each time such a block is freed (up to 32 MiB).
    From then on a refresh's page buffers and big lists come from the heap, whose free space
    between live blocks is never returned: 15-47 MiB more resident memory over 20 refreshes
    at 100,000 checkpoints (benchmarks/bench_memory.py). Fixing the threshold keeps it where
    glibc starts. False where there is no glibc `mallopt` (nothing changes there).
    """
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, BIG_BLOCK))
