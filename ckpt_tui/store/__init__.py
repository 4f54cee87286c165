"""The local checkpoint store: files on disk plus a SQLite metadata index.

No HTTP and no Textual here. The server (`ckpt_tui.server`) is a thin layer over `Store`.
"""

from ckpt_tui.store.errors import (
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    ReadOnlyStoreError,
    StoreError,
)
from ckpt_tui.store.store import Store

__all__ = [
    "ConflictError",
    "InvalidRequestError",
    "NotFoundError",
    "ReadOnlyStoreError",
    "Store",
    "StoreError",
]
