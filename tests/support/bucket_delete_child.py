"""A process that deletes checkpoints from a bucket, for tests that kill it half-way.

    python -m tests.support.bucket_delete_child ENDPOINT BUCKET CHECKPOINTS BATCH_KEYS STOP_AFTER

CHECKPOINTS is one name (`run/step-10`) or several joined by commas: deleted as one batch.

It prints a line after each step of the delete (`intent`, `batch`) and, after STOP_AFTER
batches (0: never), waits for stdin to close: the test kills it with SIGKILL meanwhile.
"""

from __future__ import annotations

import sys
from datetime import timedelta

from ckpt_tui.store.bucket.deleting import BucketDeleter, DeleteAsk, DeleteOutcome
from ckpt_tui.store.bucket.metadata import BucketMeta
from ckpt_tui.timekeeping.clock import FixedClock, SystemClock
from tests.support.bucket_places import bucket_place


def main(endpoint: str, bucket: str, checkpoints: str, batch_keys: str, stop_after: str) -> None:
    place = bucket_place(endpoint, bucket)
    later = FixedClock(SystemClock().now() + timedelta(days=1))  # every object has settled
    engine = BucketDeleter(
        place, BucketMeta(place, False, 0), clock=later, batch_keys=int(batch_keys)
    )
    batches = 0

    def report(step: str) -> None:
        nonlocal batches
        batches += step == "batch"
        print(step, flush=True)
        if step == "batch" and batches == int(stop_after):
            sys.stdin.read()  # the test kills the process here

    engine.step_hook = report
    names = checkpoints.split(",")
    asks = [  # the walk's ids: a checkpoint folder of weights is `weights/<name>`
        DeleteAsk(name, name.split("/")[0], f"weights/{name.split('/')[1]}") for name in names
    ]
    outcomes = engine.delete_batch(asks)
    done = all(isinstance(o, DeleteOutcome) and o.done for o in outcomes)
    print("done" if done else "not done", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
