"""The record a bucket delete writes before its first key goes (`deleting.py`), and the checks
that make a record read back from the bucket safe to act on.

A record is one checkpoint's `DeleteIntent` or, for checkpoints deleted together, a
`BatchIntent` of them; the checks below hold for each checkpoint it names, and one checkpoint
failing them makes the whole record not acted on (`read_intents`).

A record is hostile input: whoever can write to the bucket can write one, and the next open
acts on it. So a delete only writes, and recovery only acts on, a record that
- is at most MAX_INTENT_BYTES long, names at most MAX_INTENT_CHECKPOINTS checkpoints, each
  once, and for each at most MAX_INTENT_KEYS keys, each at most
  MAX_KEY_BYTES (S3's longest key);
- names a checkpoint path some layout gives a checkpoint: inside the store, not its root, not
  its own documents, no `.` or `..`, no deeper than the walk goes (`checked_checkpoint`);
- carries the run id and checkpoint id that layout gives that path, so the metadata it drops
  is that checkpoint's and no other's (`keys_at`);
- names only keys under that path plus `/` (or, for a checkpoint that is one file, just it).
Whether the path holds more than one checkpoint (a run named as a checkpoint) is judged on its
objects, by the walk itself (`more_than_one_checkpoint`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from ckpt_tui.store.blobs.objects import ObjectStorage, entry_of, key_of
from ckpt_tui.store.bucket.grouping import Want
from ckpt_tui.store.bucket.place import BucketPlace, checked_rel
from ckpt_tui.store.bucket.tree import ListedTree
from ckpt_tui.store.bucket.versioned import read_doc
from ckpt_tui.store.discover.walk import discover, keys_at
from ckpt_tui.store.errors import InvalidRequestError, StoreError
from ckpt_tui.store.files import reading_from
from ckpt_tui.store.layout import RUNS_DIR, SEGMENTS
from ckpt_tui.store.meta import Key
from ckpt_tui.store.names import UnsafeNameError, check_name, check_run_id, climbs

if TYPE_CHECKING:
    from obstore import ObjectMeta

DELETES = "deletes"
"""The records' folder, under the store's own documents (`.ckpt-tui/deletes/<id>.json`)."""
MAX_INTENT_KEYS = 100_000
"""The most keys one record names: a checkpoint with more objects is refused (a prefix that
is not one checkpoint)."""
MAX_KEY_BYTES = 1024
"""S3's longest key, in UTF-8 bytes."""
MAX_INTENT_BYTES = 16 * 1024 * 1024
"""The longest record read back (100,000 keys of 150 bytes)."""
MAX_INTENT_CHECKPOINTS = 1000
"""Checkpoints one record names at most (the work of recovering it is bounded); a bigger
batch writes several records."""


class DeleteIntent(msgspec.Struct, frozen=True):
    """The record written before the first key is deleted."""

    checkpoint: str
    """The checkpoint's name below the store's prefix (`run/step-10`)."""
    run_id: str
    checkpoint_id: str
    keys: list[str]
    newest_us: int
    """The newest object's time (the server's clock): a key newer than this at recovery was
    written again after the delete was asked, and is not deleted."""


class BatchIntent(msgspec.Struct, frozen=True):
    """The record of checkpoints deleted together: one `DeleteIntent` each."""

    batch: list[DeleteIntent]


def want_after(place: BucketPlace, intent: DeleteIntent) -> Want:
    """What to look at of `intent`'s checkpoint once the delete began: the one object of
    its name (and anything under its name plus `/`: a folder of that name is not gone
    because the file is) when that is what it deleted, else the objects under it."""
    return "file" if intent.keys == [place.key(intent.checkpoint)] else "folder"


def encoded(intents: list[DeleteIntent]) -> bytes:
    """The record of `intents`: one checkpoint's `DeleteIntent` (as before batches), else a
    `BatchIntent`; StoreError when it is longer or names more checkpoints than one read back
    may (`read_intents` would refuse it)."""
    if not 0 < len(intents) <= MAX_INTENT_CHECKPOINTS:
        raise StoreError(f"a record names 1 to {MAX_INTENT_CHECKPOINTS:,} checkpoints")
    data = msgspec.json.encode(intents[0] if len(intents) == 1 else BatchIntent(intents))
    if len(data) > MAX_INTENT_BYTES:
        raise StoreError(
            f"its delete record would be {len(data):,} bytes, more than {MAX_INTENT_BYTES:,}"
        )
    return data


def read_intents(place: BucketPlace, record: str) -> list[DeleteIntent]:
    """The checkpoints `record` names, each checked (`check_intent`): one (a single
    checkpoint's record) or a batch's; none when it is gone (another finished it). StoreError
    or InvalidRequestError when it is damaged, too long, names no checkpoint, more than
    MAX_INTENT_CHECKPOINTS or one twice, or any of them fails its checks."""
    raw = read_doc(place, record, msgspec.Raw, MAX_INTENT_BYTES).doc
    if raw is None:
        return []
    try:
        intents = [msgspec.json.decode(raw, type=DeleteIntent)]
    except msgspec.ValidationError:  # a batch's record, or damaged
        try:
            intents = msgspec.json.decode(raw, type=BatchIntent).batch
        except msgspec.ValidationError as exc:
            raise StoreError(f"{place.name}: {record} is damaged ({exc})") from None
    if not 0 < len(intents) <= MAX_INTENT_CHECKPOINTS:
        raise StoreError(
            f"it names {len(intents):,} checkpoints (1 to {MAX_INTENT_CHECKPOINTS:,} are "
            "deleted together)"
        )
    if len({intent.checkpoint for intent in intents}) != len(intents):
        raise StoreError("it names a checkpoint twice")
    for intent in intents:
        try:
            check_intent(place, intent)
        except StoreError as exc:  # InvalidRequestError is one too
            if len(intents) == 1:
                raise
            raise type(exc)(f"{intent.checkpoint}: {exc}") from None
    return intents


def check_intent(place: BucketPlace, intent: DeleteIntent) -> None:
    """InvalidRequestError or StoreError saying why `intent` must not be acted on."""
    checked_checkpoint(intent.checkpoint, (intent.run_id, intent.checkpoint_id))
    if len(intent.keys) > MAX_INTENT_KEYS:
        raise StoreError(f"it names {len(intent.keys):,} keys, more than {MAX_INTENT_KEYS:,}")
    if len(set(intent.keys)) != len(intent.keys):
        raise StoreError("it names a key twice")
    prefix = place.key(intent.checkpoint)
    if intent.keys != [prefix]:  # a single file's record names just it
        refuse_outside(intent.keys, prefix)
    for key in intent.keys:
        if len(key.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
            raise StoreError(f"it names a key longer than {MAX_KEY_BYTES} bytes")
        if climbs(key):
            raise StoreError(f"it names {key[:200]!r}, with an empty, '.' or '..' part")


def checked_checkpoint(rel: str, key: Key) -> None:
    """InvalidRequestError unless `rel` is a path a layout gives a checkpoint, and `key` the
    (run id, checkpoint id) it gives it: `runs/<run>/<segment>/<name>` (the Tinker layout),
    else a checkpoint the walk finds (`keys_at`)."""
    checked_rel(rel)
    parts = rel.split("/")
    if len(rel.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
        raise InvalidRequestError(f"{rel[:80]!r}… is longer than a key can be")
    allowed = _tinker_key(parts) if parts[0] == RUNS_DIR else keys_at(rel)
    if key not in allowed:
        run_id, checkpoint_id = key
        raise InvalidRequestError(
            f"{rel!r} is not where checkpoint {checkpoint_id!r} of run {run_id!r} is kept "
            "(no layout keeps a checkpoint of that name there)"
        )


def _tinker_key(parts: list[str]) -> set[Key]:
    if len(parts) != 4 or parts[2] not in SEGMENTS:
        return set()
    try:
        check_run_id(parts[1])
        check_name(parts[3])
    except UnsafeNameError:
        return set()
    return {(parts[1], f"{parts[2]}/{parts[3]}")}


def refuse_outside(keys: Iterable[str], prefix: str) -> None:
    """StoreError if a key is not under `prefix` + `/` (a listing or a record is hostile
    input)."""
    for key in keys:
        if not key.startswith(prefix + "/"):
            raise StoreError(f"{key!r} is named under {prefix!r}, outside it")


def more_than_one_checkpoint(
    place: BucketPlace, rel: str, objects: dict[str, ObjectMeta]
) -> str | None:
    """Why the objects under checkpoint path `rel` are not one checkpoint: the walk, run over
    them from the folder above, finds a checkpoint inside it (it is a run or a folder of
    runs), another store, or cannot read them; None when they are one checkpoint, or the
    remains of one a delete left."""
    storage = ObjectStorage(place.store, place.name, place.prefix)
    tree = ListedTree(
        storage, [(key, entry_of(key.rpartition("/")[2], meta)) for key, meta in objects.items()]
    )
    top = place.key(rel)
    with reading_from(tree):
        walked = discover(Path(top.rpartition("/")[0]))
    inside = sorted(
        key_of(found.location)
        for run in walked.runs
        for _, found, _ in run.checkpoints
        if key_of(found.location).startswith(top + "/")
    )
    if inside:
        return f"it holds other checkpoints ({inside[0]}…): a run, not one checkpoint"
    if walked.reading.stores:
        return "it holds a store of its own (.ckpt-tui)"
    if walked.reading.unread:
        where, why = next(iter(sorted(walked.reading.unread.items())))
        return f"its objects could not all be read ({where}: {why})"
    return None
