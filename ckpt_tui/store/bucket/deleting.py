"""Deleting checkpoints from a bucket: many objects, no rename, and a crash at any moment.

A checkpoint is every object under `<prefix>/<checkpoint>/`, or, when there is none, the one
object `<prefix>/<checkpoint>` (a `torch.save` file). `BucketDeleter.delete_batch` deletes the
checkpoints asked for together (`delete`: one):

1. lists them (checkpoints side by side in one folder through one listing of the folder,
   `_look`; a failed list changes nothing; folder markers are folders, not objects), and
   refuses, each alone while the others go ahead, a checkpoint whose listing failed, names a
   key not under its own prefix plus `/`, whose record recovery would refuse (`intent.py`),
   or that is still being written (an object newer than the settle time, as `settle.py`
   judges files; or the layout's own signs, which discovery gives as `incomplete_reason`);
2. writes ONE intent record, `<prefix>/.ckpt-tui/deletes/<id>.json`, naming every key of
   every checkpoint going ahead: the confirmed set. Nothing outside it is ever deleted. (One
   checkpoint's record is its `DeleteIntent`, as before batches; several: a `BatchIntent`);
3. deletes the keys in batches spanning checkpoints (one DeleteObjects request per
   `BATCH_KEYS` keys on S3; on `file://`, through folder descriptors, `local_delete`), every
   weight file of the batch before any other file (`_weights_first`);
4. lists again (as in 1): a key still there failed (with its batch's error) and fails only
   its own checkpoint; a key not in the record appeared meanwhile and is left alone;
5. drops the metadata of the checkpoints positively gone (listed again, nothing is under
   their path; one write), then the record once no key of it failed.

A delete killed half-way leaves its record: the next open finishes it or reports it
(`recovery.py`, through `BucketDeleter.recover`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from itertools import chain
from typing import TYPE_CHECKING

import obstore
from obstore.exceptions import BaseError

from ckpt_tui.store.blobs.objects import every_object, reason
from ckpt_tui.store.bucket.grouping import Want, by_folder, picked, split_listing
from ckpt_tui.store.bucket.intent import (
    DELETES,
    MAX_INTENT_BYTES,
    MAX_INTENT_CHECKPOINTS,
    MAX_INTENT_KEYS,
    DeleteIntent,
    check_intent,
    encoded,
    refuse_outside,
    want_after,
)
from ckpt_tui.store.bucket.local_delete import unlink_below
from ckpt_tui.store.bucket.metadata import BucketMeta
from ckpt_tui.store.bucket.outcome import (
    DeleteOutcome,
    Found,
    Recovery,
    modified_us,
    object_us,
)
from ckpt_tui.store.bucket.place import (
    BucketPlace,
    checked_rel,
    local_root,
    read_failed,
    refuse_links,
)
from ckpt_tui.store.bucket.recovery import recover
from ckpt_tui.store.discover import loose
from ckpt_tui.store.errors import (
    ConflictError,
    NotFoundError,
    StorageFailedError,
    StoreError,
)
from ckpt_tui.store.settle import SETTLE_SECONDS, Settling, unsettled_reason
from ckpt_tui.store.times import to_us
from ckpt_tui.timekeeping.clock import SYSTEM_CLOCK, Clock

if TYPE_CHECKING:
    from obstore import ObjectMeta

__all__ = [  # with what the delete's callers use of `intent.py` and `outcome.py`
    "DELETES",
    "BucketDeleter",
    "DeleteAsk",
    "DeleteOutcome",
    "Recovery",
]

BATCH_KEYS = 1000
"""Keys per DeleteObjects request: S3's most."""
RECORD_BYTES = MAX_INTENT_BYTES - 1024
"""Bytes of checkpoints' records one batch record holds at most (room left for the
`BatchIntent` around them): a bigger batch writes several records, each done in turn."""
FOLDER_OBJECTS = 5000
"""Objects a folder's listing may hold to stand for the listings of its checkpoints in a
batch; a folder holding more (or whose listing failed) has each checkpoint listed alone."""
LISTS_AT_ONCE = 16
"""Listings of one batch sent side by side."""


@dataclass(frozen=True)
class DeleteAsk:
    """One checkpoint asked to be deleted (`BucketDeleter.delete_batch`)."""

    checkpoint: str
    """Its name below the store's prefix (`run/step-10`)."""
    run_id: str
    checkpoint_id: str
    incomplete_reason: str | None = None
    """Why discovery found it incomplete (it is refused), or None."""


@dataclass(frozen=True)
class _Planned:
    """A checkpoint going ahead: its record, what the first look found, the record's size."""

    intent: DeleteIntent
    found: dict[str, int]
    size: int


class BucketDeleter:
    """Deletes checkpoints' objects (see the module's docstring)."""

    def __init__(
        self,
        place: BucketPlace,
        meta: BucketMeta | None = None,
        *,
        clock: Clock = SYSTEM_CLOCK,
        settle_seconds: float = SETTLE_SECONDS,
        batch_keys: int = BATCH_KEYS,
    ) -> None:
        self.place = place
        self.meta = meta
        self.clock = clock
        self.settle_us = int(settle_seconds * 1_000_000)
        self.batch_keys = max(1, min(batch_keys, BATCH_KEYS))
        self.before_record: Callable[[], None] | None = None
        """Called before a delete record is written, once nothing was refused: the bucket
        store keeps its id then (`BucketChanges.keep_store_id`)."""
        self.step_hook: Callable[[str], None] | None = None
        """Called after the intent is written and after each batch: tests stop there."""
        self._listed_alone: set[str] = set()
        """Folders whose checkpoints are listed each alone (`_look_in`)."""

    # --- deleting ---------------------------------------------------------------------------
    def delete(
        self,
        checkpoint: str,
        run_id: str,
        checkpoint_id: str,
        *,
        incomplete_reason: str | None = None,
    ) -> DeleteOutcome:
        """Delete every object of `checkpoint`: `delete_batch` of one, its refusal raised."""
        (outcome,) = self.delete_batch(
            [DeleteAsk(checkpoint, run_id, checkpoint_id, incomplete_reason)]
        )
        if isinstance(outcome, StoreError):
            raise outcome
        return outcome

    def delete_batch(self, asks: Sequence[DeleteAsk]) -> list[DeleteOutcome | StoreError]:
        """Delete every object of each checkpoint asked for (see the module's docstring).
        Returns each one's outcome in order: an error for a refusal or a failed first look
        (nothing of it was deleted), else what each of its keys did (`DeleteOutcome.done`,
        else `.error()`)."""
        results: dict[int, DeleteOutcome | StoreError] = {}
        going: dict[int, str] = {}
        for n, ask in enumerate(asks):
            try:
                prefix = self.place.key(checked_rel(ask.checkpoint))
                if ask.incomplete_reason is not None:
                    raise ConflictError(_still_written(ask.checkpoint, ask.incomplete_reason))
                if prefix in going.values():  # a record names a checkpoint once
                    raise ConflictError(f"{ask.checkpoint} is asked twice in one batch")
            except StoreError as exc:
                results[n] = exc
            else:
                going[n] = prefix
        looks = self._look(dict.fromkeys(going.values(), "either"))
        settling = Settling(to_us(self.clock.now()), self.settle_us)
        planned: dict[int, _Planned] = {}
        for n, prefix in going.items():
            try:
                planned[n] = _planned(self.place, asks[n], looks[prefix], settling)
            except StoreError as exc:
                results[n] = exc
        for numbers in _records(planned):
            chosen = [planned[n] for n in numbers]
            done = self._delete_recorded([p.intent for p in chosen], [p.found for p in chosen])
            results.update(zip(numbers, done, strict=True))
        return [results[n] for n in range(len(asks))]

    def _delete_recorded(
        self, intents: list[DeleteIntent], found: list[dict[str, int]]
    ) -> list[DeleteOutcome | StoreError]:
        """Steps 2 to 5 for checkpoints whose keys fit one record."""
        if self.before_record is not None:
            self.before_record()
        record = self.place.meta_key(f"{DELETES}/{uuid.uuid4().hex}.json")
        try:
            obstore.put(self.place.store, record, encoded(intents), use_multipart=False)
        except (BaseError, OSError, StoreError) as exc:
            why = str(exc) if isinstance(exc, StoreError) else reason(exc)
            return [
                StorageFailedError(
                    f"deleting {intent.checkpoint} failed: its delete record could not be "
                    f"written to {self.place.name} ({why}); nothing was deleted"
                )
                for intent in intents
            ]
        self._step("intent")
        return list(self.finish(record, intents, list(found)))

    def finish(
        self, record: str, intents: list[DeleteIntent], found: list[Found]
    ) -> list[DeleteOutcome]:
        """Steps 3 to 5 for the keys of `intents` that `found` (a look at each) still holds."""
        outcomes = [DeleteOutcome(intent.checkpoint) for intent in intents]
        doomed: list[list[str]] = []
        for intent, outcome, now in zip(intents, outcomes, found, strict=True):
            if isinstance(now, StoreError):
                outcome.problem = f"its objects could not be listed ({now})"
                doomed.append([])
            else:
                doomed.append(_doomed(intent, now, outcome))
        keys = sorted(set(chain.from_iterable(doomed)), key=_weights_first)
        errors, requests = self._delete_batches(keys)
        for outcome, keys_of_one in zip(outcomes, doomed, strict=True):
            outcome.requests = sum(1 for sent in requests if not sent.isdisjoint(keys_of_one))
        wants = {self.place.key(i.checkpoint): want_after(self.place, i) for i in intents}
        after = self._look(wants)
        gone: list[bool] = []
        for intent, outcome, keys_of_one in zip(intents, outcomes, doomed, strict=True):
            now = after[self.place.key(intent.checkpoint)]
            if outcome.problem is None:
                _verified(intent, outcome, keys_of_one, now, errors)
            gone.append(not isinstance(now, StoreError) and not now)
        self._forget(record, intents, outcomes, gone)
        return outcomes

    def _delete_batches(self, keys: list[str]) -> tuple[dict[str, str], list[set[str]]]:
        """Delete `keys` in batches, in their order: (key -> its batch's error, for batches
        that raised or keys not deleted; the keys of each request sent)."""
        errors: dict[str, str] = {}
        sent: list[set[str]] = []
        folder = local_root(self.place)
        for start in range(0, len(keys), self.batch_keys):
            batch = keys[start : start + self.batch_keys]
            sent.append(set(batch))
            if folder is not None:  # file://: through folder descriptors, no link followed
                errors.update(unlink_below(folder, batch))
            else:
                try:
                    obstore.delete(self.place.store, batch)
                except (BaseError, OSError) as exc:
                    errors.update(dict.fromkeys(batch, reason(exc)))
            self._step("batch")
        return errors, sent

    def _forget(
        self,
        record: str,
        intents: list[DeleteIntent],
        outcomes: list[DeleteOutcome],
        gone: list[bool],
    ) -> None:
        """Step 5: the metadata of the checkpoints wholly `gone` (listed again, nothing is
        under their path; one write), then the record once no key failed (kept if the
        metadata could not be written, so the next open drops it)."""
        dropped = [
            (i.run_id, i.checkpoint_id)
            for i, o, g in zip(intents, outcomes, gone, strict=True)
            if o.done and g
        ]
        finished = all(not o.failed and o.problem is None for o in outcomes)
        try:
            if self.meta is not None and dropped:
                self.meta.apply(delete=dropped)
            if finished:
                self._remove_record(record)
        except StoreError as exc:
            _said([o for o in outcomes if o.done], f"its metadata could not be dropped ({exc})")
        except (BaseError, OSError) as exc:
            why = f"its delete record could not be removed ({reason(exc)})"
            _said([o for o in outcomes if not o.failed and o.problem is None], why)

    def _remove_record(self, record: str) -> None:
        """Remove a delete's record; on `file://` through folder descriptors, as the
        checkpoint's files (`local_delete`): a link in its way (`.ckpt-tui` swapped for one)
        is refused, never followed. OSError when it stays."""
        folder = local_root(self.place)
        if folder is None:
            obstore.delete(self.place.store, record)
            return
        refused = unlink_below(folder, [record])
        if refused:
            raise OSError(refused[record])

    # --- at open ----------------------------------------------------------------------------
    def recover(self, *, readonly: bool = False, records: Sequence[str] | None = None) -> Recovery:
        """Finish every interrupted delete (read-only: report them): `recovery.recover`."""
        return recover(self, readonly=readonly, records=records)

    # --- listing ----------------------------------------------------------------------------
    def _look(self, wants: dict[str, Want]) -> dict[str, Found]:
        """What `wants` asks of each checkpoint prefix, side by side: the checkpoints of one
        folder (two or more) through one listing of it, the others each alone."""
        jobs: list[Callable[[], dict[str, Found]]] = []
        for folder, prefixes in by_folder(wants).items():
            if folder and len(prefixes) > 1 and folder not in self._listed_alone:
                jobs.append(partial(self._look_in, folder, prefixes, wants))
            else:
                jobs.extend(partial(self._looks_alone, [prefix], wants) for prefix in prefixes)
        if len(jobs) == 1:
            return jobs[0]()
        looks: dict[str, Found] = {}
        with ThreadPoolExecutor(min(LISTS_AT_ONCE, max(1, len(jobs)))) as pool:
            for done in pool.map(lambda job: job(), jobs):
                looks.update(done)
        return looks

    def _look_in(
        self, folder: str, prefixes: list[str], wants: dict[str, Want]
    ) -> dict[str, Found]:
        """The checkpoints at `prefixes` through one listing of `folder`; each alone when
        that listing fails or holds more than `FOLDER_OBJECTS` (and from then on: a crowded
        folder is not listed again for every batch)."""
        try:
            children = split_listing(folder, self.listed_keys(folder, FOLDER_OBJECTS))
        except StoreError:
            self._listed_alone.add(folder)
            return self._looks_alone(prefixes, wants)
        return {prefix: picked(children, prefix, wants[prefix]) for prefix in prefixes}

    def _looks_alone(self, prefixes: list[str], wants: dict[str, Want]) -> dict[str, Found]:
        """What `wants` asks of each checkpoint at `prefixes`, from its own listing (or a
        HEAD of the object of its name)."""
        looks: dict[str, Found] = {}
        for prefix in prefixes:
            want = wants[prefix]
            try:
                under = self.listed_keys(prefix)
                if want == "file":
                    looks[prefix] = {**self.single(prefix), **under}
                else:
                    looks[prefix] = under or ({} if want == "folder" else self.single(prefix))
            except StoreError as exc:
                looks[prefix] = exc
        return looks

    def single(self, key: str) -> dict[str, int]:
        """{key: last modified} of the one object `key`, or {} when there is none."""
        try:
            found = obstore.head(self.place.store, key)
        except FileNotFoundError:
            return {}
        except (BaseError, OSError) as exc:
            raise read_failed(self.place, key, exc) from exc
        refuse_links(self.place, [key])
        return {key: object_us(found["last_modified"])}

    def listed_keys(self, prefix: str, most: int = MAX_INTENT_KEYS) -> dict[str, int]:
        """key -> last modified (microseconds) of every object under `prefix` + `/`."""
        return modified_us(self.listed(prefix, most))

    def listed(self, prefix: str, most: int = MAX_INTENT_KEYS) -> dict[str, ObjectMeta]:
        """key -> what the listing says of every object under `prefix` + `/` (at most
        `most`: more, or pages without end, fail), folder markers left out."""
        try:
            found = {item["path"]: item for item in every_object(self.place.store, prefix, most)}
        except (BaseError, OSError) as exc:
            raise StorageFailedError(
                f"listing {prefix} in {self.place.name} failed ({reason(exc)})"
            ) from exc
        for key in self._markers(prefix, found):
            del found[key]  # a folder, not an object of the checkpoint
        refuse_outside(found, prefix)
        refuse_links(self.place, found)
        return found

    def _markers(self, prefix: str, found: dict[str, ObjectMeta]) -> list[str]:
        """The listed objects that are folder markers: zero-byte keys ending in `/` (the S3
        console's "Create folder" writes one), which obstore lists without their `/` and
        cannot address (its paths never end in `/`), so they can be neither read nor
        deleted through it. Listed under `prefix/`, `prefix` itself is one; any other
        zero-byte key that HEAD does not find is one too (its real key ends in `/`). The
        HEADs go `LISTS_AT_ONCE` at a time: a checkpoint of many empty files is asked about
        each (300 of them through 50 ms of latency: 1.6-1.8 s, against 17.0-17.1 s one
        after another; on moto alone no faster, as moto answers one at a time)."""
        empty = [key for key, meta in found.items() if meta["size"] == 0 and key != prefix]
        markers = [prefix] if prefix in found and found[prefix]["size"] == 0 else []
        if not empty:
            return markers
        with ThreadPoolExecutor(min(LISTS_AT_ONCE, len(empty))) as pool:
            heads = list(pool.map(self.single, empty))
        return markers + [key for key, head in zip(empty, heads, strict=True) if not head]

    def _step(self, name: str) -> None:
        if self.step_hook is not None:
            self.step_hook(name)


def _planned(place: BucketPlace, ask: DeleteAsk, look: Found, settling: Settling) -> _Planned:
    """The record to delete what `look` found of `ask`'s checkpoint; its refusal raised
    (nothing of it is deleted)."""
    if isinstance(look, StoreError):  # the same error, saying so
        raise type(look)(f"{look}; nothing was deleted") from look
    if not look:
        raise NotFoundError(f"checkpoint {ask.checkpoint!r} has no objects in {place.name}")
    newest_us = max(look.values())
    unsettled = unsettled_reason(newest_us, settling)
    if unsettled is not None:
        raise ConflictError(_still_written(ask.checkpoint, unsettled))
    keys = sorted(look)
    intent = DeleteIntent(ask.checkpoint, ask.run_id, ask.checkpoint_id, keys, newest_us)
    check_intent(place, intent)  # what recovery would refuse to finish is not begun
    try:
        size = len(encoded([intent]))
    except StoreError as exc:
        raise StorageFailedError(
            f"refusing to delete {ask.checkpoint}: {exc}; nothing was deleted"
        ) from None
    return _Planned(intent, look, size)


def _records(planned: dict[int, _Planned]) -> list[list[int]]:
    """The checkpoints going ahead (by number) split into records of at most `RECORD_BYTES`
    (a checkpoint with more has a record of its own), `MAX_INTENT_KEYS` keys (ditto) and
    `MAX_INTENT_CHECKPOINTS` checkpoints."""
    records: list[list[int]] = []
    keys = size = 0
    for n, plan in planned.items():
        if (
            not records
            or len(records[-1]) >= MAX_INTENT_CHECKPOINTS
            or keys + len(plan.intent.keys) > MAX_INTENT_KEYS
            or size + plan.size + 1 > RECORD_BYTES
        ):
            records.append([])
            keys = size = 0
        records[-1].append(n)
        keys += len(plan.intent.keys)
        size += plan.size + 1  # and a comma
    return records


def _doomed(intent: DeleteIntent, found: dict[str, int], outcome: DeleteOutcome) -> list[str]:
    """The keys of `intent` that `found` still holds, unless written again since (said in
    `outcome.left`)."""
    confirmed = set(intent.keys)
    doomed = []
    for key, modified in sorted(found.items()):
        if key not in confirmed:
            continue
        if modified > intent.newest_us:
            outcome.left[key] = "written again after the delete was asked"
        else:
            doomed.append(key)
    return doomed


def _verified(
    intent: DeleteIntent,
    outcome: DeleteOutcome,
    doomed: list[str],
    after: Found,
    errors: dict[str, str],
) -> None:
    """Step 4 for one checkpoint: what the look `after` the batches says of each key."""
    if isinstance(after, StoreError):  # a failed list, or a link or key outside found meanwhile
        outcome.problem = f"the objects could not be listed again to check ({after})"
        return
    for key in doomed:
        if key in after:
            outcome.failed[key] = errors.get(key, "still listed after the server deleted it")
        else:
            outcome.deleted.append(key)
    for key in sorted(set(after) - set(intent.keys)):
        outcome.left[key] = "appeared while the checkpoint was being deleted"


def _said(outcomes: list[DeleteOutcome], problem: str) -> None:
    for outcome in outcomes:
        outcome.problem = problem


def _weights_first(key: str) -> tuple[bool, str]:
    """The order keys are deleted in: weight files (what the walk may take for checkpoints of
    their own) before the files that make a folder one checkpoint (configs, `.metadata`), so
    what a crash leaves is still that checkpoint, or no checkpoint at all: never what looks
    like a run of several, which recovery refuses (`more_than_one_checkpoint`). Sorted over a
    whole batch, every weight file of every checkpoint goes before any config: each
    checkpoint keeps that order whichever DeleteObjects request its keys fall in."""
    return (not loose.is_candidate(key.rpartition("/")[2]), key)


def _still_written(checkpoint: str, reason: str) -> str:
    return (
        f"refusing to delete {checkpoint}: it is incomplete ({reason}); a save may still be "
        "writing it: wait until it is complete (its objects stay the same)"
    )
