"""Where a store's files live: a folder or a bucket prefix, behind one small interface.

`Storage` (`base.py`) lists one level, stats, reads a byte range and deletes a batch;
`FolderStorage` (`folder.py`) is a folder on disk; on a bucket (S3, GCS, Azure, or obstore's
memory and local stores) `ObjectStorage` (`objects.py`) lists the whole prefix at once and
`bucket.tree.ListedTree` answers the levels from that listing. Discovery
(`store/discover/`) reads through it: `files.py` sends its reads to the storage of the walk in
progress (`reading_from`), so every layout a folder holds is read from a bucket by the same code.
A failed list or read raises an OSError (a problem, never an absence); a key that is
positively not there raises FileNotFoundError.
"""

from ckpt_tui.store.blobs.base import Entry, Storage, StorageReadError
from ckpt_tui.store.blobs.folder import FolderStorage

__all__ = ["Entry", "FolderStorage", "Storage", "StorageReadError"]
