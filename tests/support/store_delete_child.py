"""A process that deletes checkpoints of a store in one batch, for tests that kill it half-way.

    python -m tests.support.store_delete_child STORE STEP COUNT RUN/CHECKPOINT...

It calls `Store.delete_checkpoints` once for all the checkpoints named, prints each step of
the delete (`trash.DELETE_STEPS`) as it is done and, at the COUNT-th STEP, says "stopped" and
waits for stdin to close: the test kills it with SIGKILL meanwhile.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ckpt_tui.store import Store


def main(store_dir: str, stop_step: str, stop_count: str, *checkpoints: str) -> None:
    store = Store.open(Path(store_dir), create=False)
    seen = 0

    def report(step: str) -> None:
        nonlocal seen
        print(step, flush=True)
        seen += step == stop_step
        if step == stop_step and seen == int(stop_count):
            print("stopped", flush=True)
            sys.stdin.read()  # the test kills the process here

    store.delete_step_hook = report
    keys = [(pair.split("/", 1)[0], pair.split("/", 1)[1]) for pair in checkpoints]
    outcomes = store.delete_checkpoints(keys)
    print("done", [repr(outcome) for outcome in outcomes], flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
