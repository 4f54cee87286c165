"""Work a bucket store's open begins before it needs the answer (`BucketStore`): the prefix's
listing and the delete records' listing go out while the store's documents are read."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

T = TypeVar("T")


def begun(work: Callable[[], T], name: str) -> Future[T]:
    """`work()` begun now in a daemon thread named `name`: its result, or what it raised,
    once it ends. Nothing waits for it unless asked, so an open that fails says why at once
    (a listing it began ends at its next request once the storage is stopped)."""
    done: Future[T] = Future()
    done.set_running_or_notify_cancel()

    def run() -> None:
        try:
            done.set_result(work())
        except BaseException as exc:  # whoever takes the answer raises it, as its own
            done.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return done
