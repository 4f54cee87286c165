"""Where a store lives in a bucket: an obstore store and a prefix, and the keys under it.

Keys are `/`-separated. A store's own documents live under `<prefix>/.ckpt-tui/`; a
checkpoint is every object under `<prefix>/<checkpoint>/`. A relative name that is empty,
has an empty, `.` or `..` part, or starts in `.ckpt-tui` is refused before any request.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from obstore.store import LocalStore, ObjectStore

from ckpt_tui.store.blobs.objects import reason
from ckpt_tui.store.errors import InvalidRequestError, StorageFailedError, StoreError
from ckpt_tui.store.names import climbs

META_FOLDER = ".ckpt-tui"
"""The store's own documents, under the prefix (as `STORE/.ckpt-tui/` in a folder)."""


@dataclass(frozen=True)
class BucketPlace:
    """An obstore store (one bucket) and the prefix the checkpoint store is rooted at."""

    store: ObjectStore
    prefix: str
    """Without a leading or trailing `/`; "" for the whole bucket."""
    name: str
    """How the place is shown (`s3://bucket/prefix`), never with credentials in it."""

    def key(self, rel: str) -> str:
        """The object key of `rel` (checked by `checked_rel`) below the prefix."""
        rel = checked_rel(rel)
        return f"{self.prefix}/{rel}" if self.prefix else rel

    def meta_key(self, name: str) -> str:
        """The key of one of the store's own documents (`name` is ours, not user input)."""
        return f"{self.prefix}/{META_FOLDER}/{name}" if self.prefix else f"{META_FOLDER}/{name}"


def checked_rel(rel: str) -> str:
    """`rel` if it names something inside the store other than its own documents."""
    if not rel or climbs(rel) or rel.split("/")[0] == META_FOLDER:
        raise InvalidRequestError(
            f"{rel!r} does not name a checkpoint inside the store: use a path like run/step-10"
        )
    return rel


def read_failed(place: BucketPlace, key: str, exc: BaseException) -> StorageFailedError:
    """The error for a read of `key` the bucket failed (the cloud's reason, no secret)."""
    return StorageFailedError(f"reading {key} in {place.name} failed ({reason(exc)})")


def local_root(place: BucketPlace) -> str | None:
    """The folder of obstore's local store (`file://`); None for any other store."""
    store = place.store
    if not isinstance(store, LocalStore) or store.prefix is None:
        return None
    return str(store.prefix)


def refuse_links(place: BucketPlace, keys: Iterable[str]) -> None:
    """StoreError if a key of obstore's local store (`file://`) is reached through a link:
    its listing follows links, so a delete through one would remove files outside the store
    (the folder store never follows a link). A link made after this check is not followed
    either: the delete goes through folder descriptors (`local_delete`), as a download's
    reads do (`ckpt_tui.store.export`, which needs no check first)."""
    root = local_root(place)
    if root is None:
        return
    looked: set[str] = set()
    for key in keys:
        folder = key.rpartition("/")[0]
        while folder and folder not in looked:
            looked.add(folder)
            if os.path.islink(os.path.join(root, folder)):
                raise StoreError(
                    f"{key} is reached through the link {folder} in {place.name}: links are "
                    "never followed"
                )
            folder = folder.rpartition("/")[0]
