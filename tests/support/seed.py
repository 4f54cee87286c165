"""Fill a store with predictable runs and checkpoints for tests."""

from __future__ import annotations

from datetime import datetime, timedelta

from ckpt_tui.store import Store

BASE_MODEL = "Qwen/Qwen3-8B"


def seed_store(store: Store, runs: int = 3, per_run: int = 4) -> list[tuple[str, str]]:
    """Create `runs` runs of `per_run` training checkpoints each, all before the store's now.

    Checkpoint k (counting over all runs) was made k minutes after the first, so the global
    order is known. Returns `(run_id, checkpoint_id)` pairs, oldest first.
    """
    total = runs * per_run
    start: datetime = store.clock.now() - timedelta(minutes=total + 1)
    made: list[tuple[str, str]] = []
    for r in range(runs):
        run_id = f"run-{r:03d}"
        store.create_run(run_id, BASE_MODEL, lora_rank=32, created=start)
        for c in range(per_run):
            k = c * runs + r  # interleave runs so /checkpoints mixes them
            checkpoint_id = f"weights/{c:04d}"
            created = start + timedelta(minutes=k + 1)
            store.add_checkpoint(run_id, checkpoint_id, {"adapter.bin": b"x" * 16}, created=created)
            made.append((run_id, checkpoint_id))
    made.sort(key=lambda pair: int(pair[1][-4:]) * runs + int(pair[0][-3:]))
    return made


def path_of(pair: tuple[str, str]) -> str:
    """The tinker path of a (run id, checkpoint id) pair as `seed_store` returns them."""
    return f"tinker://{pair[0]}/{pair[1]}"


def seed_backend(store: Store, prefix: str, per_run: int, size: int = 1) -> None:
    """Two runs named after a backend (`PREFIX-run-0`, `PREFIX-run-1`), `per_run` checkpoints
    of `size` bytes each, made in the hour before the store's now."""
    start = store.clock.now() - timedelta(hours=1)
    for r in range(2):
        run_id = f"{prefix}-run-{r}"
        store.create_run(run_id, BASE_MODEL, lora_rank=8, created=start)
        for c in range(per_run):
            created = start + timedelta(minutes=10 * c + r)
            files = {"a.bin": b"x" * size}
            store.add_checkpoint(run_id, f"weights/{c:04d}", files, created=created)
