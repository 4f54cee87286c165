"""Fetching a snapshot page by page, so the screen can fill in while the rest arrives."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from ckpt_tui.api_types import Checkpoint
from ckpt_tui.catalog.join import RowCache
from ckpt_tui.client import CheckpointClient
from ckpt_tui.loader import LogDirSettings, Snapshot, fetch_weights_info
from ckpt_tui.logdirs import Discovery

PARTIAL_EVERY = 0.25
"""Seconds between partial snapshots while pages arrive (each one re-joins every row)."""

Progress = Callable[[int, int], None]
PartialSnapshot = Callable[[Snapshot], None]


def unique_checkpoints(items: list[Checkpoint]) -> list[Checkpoint]:
    """Newest first, one per tinker path (pages may overlap if the list shifted meanwhile)."""
    seen: dict[str, Checkpoint] = {}
    for item in items:
        seen.setdefault(item.tinker_path, item)
    return sorted(seen.values(), key=lambda c: (c.time, c.tinker_path), reverse=True)


async def load_progressively(
    client: CheckpointClient,
    settings: LogDirSettings,
    on_progress: Progress,
    on_partial: PartialSnapshot,
    cache: RowCache,
) -> Snapshot:
    """Runs, then checkpoint pages as they arrive (with partial snapshots), then the logs.

    Every snapshot shares `cache`, so each re-join only builds rows for what is new.
    """
    discovery_task = asyncio.ensure_future(asyncio.to_thread(settings.discover))
    try:
        runs = await client.list_all_training_runs()
        checkpoints: list[Checkpoint] = []
        last_partial = 0.0  # the first page is shown at once, later ones every PARTIAL_EVERY
        async for page in client.iter_checkpoint_pages():
            checkpoints.extend(page.items)
            on_progress(len(checkpoints), page.total)
            if time.monotonic() - last_partial > PARTIAL_EVERY:
                discovery = discovery_task.result() if discovery_task.done() else Discovery([], [])
                partial = await asyncio.to_thread(
                    Snapshot, runs, unique_checkpoints(checkpoints), discovery, {}, cache
                )
                on_partial(partial)
                last_partial = time.monotonic()
        infos = await fetch_weights_info(client, checkpoints)
        discovery = await discovery_task
    except BaseException:
        discovery_task.cancel()
        raise
    return await asyncio.to_thread(
        Snapshot, runs, unique_checkpoints(checkpoints), discovery, infos, cache
    )


def refresh_log_dirs(snapshot: Snapshot) -> bool:
    """Re-read the log dirs whose checkpoints.jsonl changed; True if any did (blocking I/O)."""
    changed = [log_dir.refresh() for log_dir in snapshot.discovery.log_dirs]
    if any(changed):
        snapshot.rebuild()
    return any(changed)
