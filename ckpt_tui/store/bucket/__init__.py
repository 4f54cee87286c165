"""The write side of a checkpoint store kept in a bucket (S3, GCS, Azure, or obstore's
local and memory stores): the shared metadata documents (`metadata.py`, written with
conditional writes: `versioned.py`) and the crash-safe delete of a checkpoint's objects
(`deleting.py`). Everything is kept under the store's prefix, in `<prefix>/.ckpt-tui/`.
"""
