"""The store's one lock and its closed flag: every public call runs under `Guard.held`."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from ckpt_tui.store.errors import StoreClosedError

P = ParamSpec("P")
R = TypeVar("R")


class Guard:
    """One re-entrant lock for the index and the metadata, and whether the store is closed."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.lock = threading.RLock()
        self.closed = False

    def check_open(self) -> None:
        if self.closed:
            raise StoreClosedError(f"the store at {self.root} is closed; open it again")

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold the lock; StoreClosedError if the store was closed."""
        with self.lock:
            self.check_open()
            yield


class Guarded(Protocol):
    @property
    def guard(self) -> Guard: ...


G = TypeVar("G", bound=Guarded)


def locked(method: Callable[Concatenate[G, P], R]) -> Callable[Concatenate[G, P], R]:
    """Run a public method under the store's lock, refusing a closed store."""

    @functools.wraps(method)
    def wrapper(self: G, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with self.guard.held():
            return method(self, *args, **kwargs)

    return wrapper
