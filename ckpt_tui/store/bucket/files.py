"""A bucket checkpoint's files, for downloads: what they are, and each one served.

The files are what a delete would take (`BucketDeleter.listed`): every object under
`<prefix>/<checkpoint>/` by its key below that, folder markers left out and a listed key
outside the prefix refused; or, when there is none, the one object `<prefix>/<checkpoint>`
under its own name (a `torch.save` file). Objects still being written under a temporary
name are left out, as a folder's are (`ckpt_tui.store.files.strip_temp`).

A file is served by ranged GETs of the version first seen (`If-Match` its ETag, and the
answer's ETag checked too, for servers that ignore the header), `WINDOW_BYTES` at a time: a
file replaced while it is sent fails the answer (the client sees a short body and asks
again) rather than mixing two versions. On `file://` (obstore's local store) the files are
listed and read by the folder code instead (`ckpt_tui.store.export`: folder descriptors,
no link followed), as a delete there goes through `local_delete`.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING

import obstore
from obstore.exceptions import BaseError

from ckpt_tui.store import export
from ckpt_tui.store.bucket.place import BucketPlace, local_root, read_failed
from ckpt_tui.store.errors import NotFoundError, StoreError
from ckpt_tui.store.export import (
    MAX_FILES,
    CheckpointFile,
    OpenedFile,
    ServedFile,
    servable_name,
    strong_etag,
)
from ckpt_tui.store.files import strip_temp
from ckpt_tui.store.layout import checked_file_parts

if TYPE_CHECKING:
    from obstore import GetOptions, ObjectMeta

    from ckpt_tui.store.bucket.deleting import BucketDeleter

WINDOW_BYTES = 32 * 1024 * 1024
"""Bytes one ranged GET asks for; its answer is streamed on as it comes, a chunk at a time,
so a file being sent holds about one chunk in memory however slowly the client reads (read
whole, 32 MiB windows held 32 MiB per client that stopped reading). Each GET costs a round
trip: on S3 about 20-50 ms, so 32 MiB at 100 MiB/s loses under a tenth to them. (moto, the
test server, reads the whole object for each ranged GET: 218 ms per 1 MiB range of a 256
MiB object, 5.9 ms of a 2 MiB one, so on moto the window sets the speed: one 256 MiB file,
`--local s3://… download`, quiet machine, 37 MiB/s in windows of 8 MiB, 72-79 in windows
of 32 MiB, 105-111 in windows of 128 MiB, as fast as whole windows were.) obstore ends a
request after 30 s, so a client slower than about 1 MiB/s sees its answer cut within a
window, and resumes from where it stopped (ckpt_tui.client.download)."""


def checkpoint_files(place: BucketPlace, deleter: BucketDeleter, key: str) -> list[CheckpointFile]:
    """The files of the checkpoint at `key` (its objects' key, checked by the caller)."""
    folder = local_root(place)
    if folder is not None:
        return export.list_files(folder, key)
    listed = deleter.listed(key, MAX_FILES)
    if not listed:
        name = servable_name(key.rpartition("/")[2], f"{key} in {place.name}")
        return [CheckpointFile(name, _head(place, key)["size"])]
    files: list[CheckpointFile] = []
    for found, meta in sorted(listed.items()):
        name = found[len(key) + 1 :]
        if not strip_temp(name.rpartition("/")[2])[1]:
            where = f"{found} in {place.name}"
            files.append(CheckpointFile(servable_name(name, where), meta["size"]))
    return files


def open_file(place: BucketPlace, deleter: BucketDeleter, key: str, name: str) -> ServedFile:
    """The file `name` of the checkpoint at `key`; NotFoundError when it has none such."""
    folder = local_root(place)
    if folder is not None:
        return OpenedFile(export.open_file(folder, key, name))
    parts = checked_file_parts(name)
    if strip_temp(parts[-1])[1]:
        raise NotFoundError(f"no file {name!r} in this checkpoint (not a finished file)")
    try:
        return ObjectFile(place, f"{key}/{name}", _head(place, f"{key}/{name}"))
    except NotFoundError:
        # a checkpoint that is one object (and no folder of the same name) is that object
        if parts != [key.rpartition("/")[2]] or deleter.listed_keys(key):
            raise
    return ObjectFile(place, key, _head(place, key))


def _head(place: BucketPlace, key: str) -> ObjectMeta:
    try:
        return obstore.head(place.store, key)
    except FileNotFoundError:
        raise NotFoundError(f"no file {key} in {place.name}") from None
    except (BaseError, OSError) as exc:
        raise read_failed(place, key, exc) from exc


class ObjectFile:
    """A `ServedFile` read from one object of a bucket, by ranged GETs of one version."""

    def __init__(self, place: BucketPlace, key: str, meta: ObjectMeta) -> None:
        self._place, self._key = place, key
        self._version = meta["e_tag"]
        self.size = meta["size"]
        modified = meta["last_modified"].isoformat()
        self.etag = strong_etag(f"{key}\0{self._version}\0{self.size}\0{modified}")

    def chunks(self, start: int, end: int, chunk_bytes: int) -> Generator[bytes, None, None]:
        offset = start
        while offset < end:
            stop = min(end, offset + WINDOW_BYTES)
            yield from self._window(offset, stop, chunk_bytes)
            offset = stop

    def _window(self, start: int, stop: int, chunk_bytes: int) -> Generator[bytes, None, None]:
        """The bytes [start, stop) of the version first seen, as they arrive; StoreError
        when that version is not what answers (replaced, shortened) or the read fails."""
        options: GetOptions = {"range": (start, stop)}
        if self._version:
            options["if_match"] = self._version
        sent = 0
        try:
            answer = obstore.get(self._place.store, self._key, options=options)
            if self._version and answer.meta["e_tag"] != self._version:
                raise self._changed()
            for piece in answer.stream(min_chunk_size=chunk_bytes):
                sent += len(piece)
                yield piece
        except (BaseError, OSError) as exc:
            raise read_failed(self._place, self._key, exc) from exc
        if sent != stop - start:
            raise self._changed()

    def _changed(self) -> StoreError:
        return StoreError(f"{self._key} in {self._place.name} changed while it was sent")

    def close(self) -> None:
        """Nothing is held between reads."""
