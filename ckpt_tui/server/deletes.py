"""DELETEs asked for at the same time, done together: one worker-thread call per batch.

A bulk delete sends many DELETEs at once (32 in flight). Done one per worker thread, each
paid a thread hand-off and then queued for the store's lock, the threads fighting over the
interpreter lock meanwhile. Here they wait in one queue; a drain takes everything queued
and hands it to `Store.delete_checkpoints` in one call (each delete still its own crash-safe
delete, answered with its own outcome once committed; its files are removed after, see
`Store.delete_checkpoints`). While one batch holds the store's lock, the next is gathered
and waits for it (`MAX_BATCHES` at once).
"""

from __future__ import annotations

import asyncio

from starlette.concurrency import run_in_threadpool

from ckpt_tui.store import Store

MAX_BATCH = 256
"""The most deletes one call to the store takes (bounds the time the store's lock is held)."""
MAX_BATCHES = 2
"""Batches in progress at once: one holding the store's lock, one waiting for it."""


class DeleteQueue:
    """The DELETEs waiting for the store, and the drains doing them (event-loop side only)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._waiting: list[tuple[str, str, asyncio.Future[None]]] = []
        self._drains: set[asyncio.Task[None]] = set()

    @property
    def waiting(self) -> int:
        """DELETEs not taken into a batch yet."""
        return len(self._waiting)

    @property
    def draining(self) -> int:
        """Batches being done (or gathered): at most `MAX_BATCHES`."""
        return sum(not drain.done() for drain in self._drains)

    async def delete(self, run_id: str, checkpoint_id: str) -> None:
        """Delete one checkpoint; raises what `Store.delete_checkpoint` would."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append((run_id, checkpoint_id, done))
        # Count the drains still running: one that has just found nothing left is done but
        # stays in the set until its callback runs, and counted it left this one unserved.
        if self.draining < MAX_BATCHES:
            drain = asyncio.create_task(self._drain(), name="ckpt-tui-deletes")
            self._drains.add(drain)
            drain.add_done_callback(self._drains.discard)
        # A request cancelled while waiting (its client went away) cancels `done`, not the
        # delete: that is done all the same, as a DELETE whose answer was lost.
        await done

    async def _drain(self) -> None:
        while self._waiting:
            batch, self._waiting = self._waiting[:MAX_BATCH], self._waiting[MAX_BATCH:]
            keys = [(run_id, checkpoint_id) for run_id, checkpoint_id, _ in batch]
            try:
                outcomes = await run_in_threadpool(self._store.delete_checkpoints, keys)
            except Exception as exc:  # e.g. the store was closed: every one of them failed
                outcomes = [exc] * len(batch)
            for (_, _, done), outcome in zip(batch, outcomes, strict=True):
                if done.done():  # its request was cancelled
                    continue
                if outcome is None:
                    done.set_result(None)
                else:
                    done.set_exception(outcome)
