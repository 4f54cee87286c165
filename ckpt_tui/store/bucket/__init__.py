"""A store on a bucket prefix (S3, GCS, Azure, or obstore's memory and local stores).

`BucketStore` (`store.py`) is the folder `Store` with a watcher that reads the bucket
(`watcher.py`): the same index, the same lists and the same discovery code (`store/discover`,
reading through `store/blobs`), so the server serves a bucket as it serves a folder.

The write side keeps everything under the store's prefix, in `<prefix>/.ckpt-tui/`: the shared
metadata documents (`metadata.py`, written with conditional writes: `versioned.py`) and the
crash-safe delete of a checkpoint's objects (`deleting.py`).
"""

from ckpt_tui.store.bucket.store import BucketStore

__all__ = ["BucketStore"]
