"""Deleting checkpoints from a bucket: many objects, no rename, and a crash at any moment.

A checkpoint is every object under `<prefix>/<checkpoint>/`, or, when there is none, the one
object `<prefix>/<checkpoint>` (a `torch.save` file). `BucketDeleter.delete_batch` deletes the
checkpoints asked for together (`delete`: one):

1. lists them (checkpoints side by side in one folder through one listing of the folder,
   `_look`; a failed list changes nothing), and refuses, each alone while the others go
   ahead, a checkpoint whose listing failed, names a key not under its own prefix plus `/`,
   or that is still being written (an object newer than the settle time, as `settle.py`
   judges files; or the layout's own signs, which discovery gives as `incomplete_reason`);
2. writes ONE intent record, `<prefix>/.ckpt-tui/deletes/<id>.json`, naming every key of
   every checkpoint going ahead: the confirmed set. Nothing outside it is ever deleted. (One
   checkpoint's record is its `DeleteIntent`, as before batches; several: a `BatchIntent`);
3. deletes the keys in batches spanning checkpoints (one DeleteObjects request per
   `BATCH_KEYS` keys on S3);
4. lists again (as in 1): a key still there failed (with its batch's error) and fails only
   its own checkpoint; a key not in the record appeared meanwhile and is left alone;
5. drops the metadata of the checkpoints whose objects are all gone (one write), then the
   record once no key of it failed.

A delete killed half-way leaves its record: `recover` (at the next open) finishes it, acting
only on the record's keys, and leaves alone a key rewritten after the delete was asked (newer
than the newest object the delete saw). A record that is damaged, or names a key outside its
checkpoint, is reported and left as it is.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from itertools import chain

import msgspec
import obstore
from obstore.exceptions import BaseError
from obstore.store import LocalStore

from ckpt_tui.store.blobs.objects import every_object, reason
from ckpt_tui.store.bucket.grouping import Want, by_folder, picked, split_listing
from ckpt_tui.store.bucket.metadata import BucketMeta
from ckpt_tui.store.bucket.place import BucketPlace, checked_rel
from ckpt_tui.store.bucket.versioned import read_doc
from ckpt_tui.store.errors import (
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    StorageFailedError,
    StoreError,
)
from ckpt_tui.store.settle import SETTLE_SECONDS, Settling, unsettled_reason
from ckpt_tui.store.times import to_us
from ckpt_tui.timekeeping.clock import SYSTEM_CLOCK, Clock

DELETES = "deletes"
BATCH_KEYS = 1000
"""Keys per DeleteObjects request: S3's most."""
MAX_CHECKPOINT_OBJECTS = 1_000_000
"""A checkpoint with more objects is refused (a prefix that is not one checkpoint)."""
RECORD_KEYS = 100_000
"""Keys one intent record names at most: a bigger batch writes several records, each done in
turn (a record stays far below the largest document read back, `MAX_DOC_BYTES`)."""
RECORD_CHECKPOINTS = 1000
"""Checkpoints one intent record names at most; a record naming more is not acted on (the
work of recovering it is bounded)."""
FOLDER_OBJECTS = 5000
"""Objects a folder's listing may hold to stand for the listings of its checkpoints in a
batch; a folder holding more (or whose listing failed) has each checkpoint listed alone."""
LISTS_AT_ONCE = 16
"""Listings of one batch sent side by side."""

Found = dict[str, int] | StoreError
"""A checkpoint's objects as a look found them (key -> last modified), or why not."""


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


@dataclass(frozen=True)
class DeleteAsk:
    """One checkpoint asked to be deleted (`BucketDeleter.delete_batch`)."""

    checkpoint: str
    """Its name below the store's prefix (`run/step-10`)."""
    run_id: str
    checkpoint_id: str
    incomplete_reason: str | None = None
    """Why discovery found it incomplete (it is refused), or None."""


@dataclass
class DeleteOutcome:
    """What one checkpoint's delete did, key by key."""

    checkpoint: str
    deleted: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    """key -> why it is still there."""
    left: dict[str, str] = field(default_factory=dict)
    """Keys under the checkpoint not deleted on purpose (appeared or rewritten meanwhile)."""
    requests: int = 0
    """Delete requests (batches) that carried its keys."""
    problem: str | None = None
    """Why the delete is not finished although no key failed (e.g. the metadata write)."""

    @property
    def done(self) -> bool:
        return not self.failed and not self.left and self.problem is None

    def error(self) -> StoreError:
        """The error to answer for an unfinished delete, saying exactly what happened."""
        total = len(self.deleted) + len(self.failed)
        parts = [f"{len(self.deleted)} of {total} objects were deleted"]
        if self.failed:
            key, why = next(iter(sorted(self.failed.items())))
            parts.append(f"{len(self.failed)} could not be (first: {key}: {why})")
        if self.left:
            key, why = next(iter(sorted(self.left.items())))
            parts.append(f"{len(self.left)} were left alone ({key}: {why})")
        if self.problem:
            parts.append(self.problem)
        return StorageFailedError(
            f"deleting {self.checkpoint} is not finished: {'; '.join(parts)}; the store "
            "finishes the delete when it is next opened, or delete it again"
        )


@dataclass
class Recovery:
    """What `recover` found: interrupted deletes finished (or not), and records not acted on."""

    finished: list[DeleteOutcome] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


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
        prefixes: dict[int, str] = {}
        for n, ask in enumerate(asks):
            try:
                prefixes[n] = self.place.key(checked_rel(ask.checkpoint))
                if ask.incomplete_reason is not None:
                    raise ConflictError(_still_written(ask.checkpoint, ask.incomplete_reason))
            except StoreError as exc:
                results[n] = exc
        going = {n: prefix for n, prefix in prefixes.items() if n not in results}
        looks = self._look(dict.fromkeys(going.values(), "either"))
        settling = Settling(to_us(self.clock.now()), self.settle_us)
        intents: dict[int, tuple[DeleteIntent, dict[str, int]]] = {}
        for n, prefix in going.items():
            try:
                intents[n] = _intent(asks[n], looks[prefix], settling, self.place.name)
            except StoreError as exc:
                results[n] = exc
        for numbers in _records(intents):
            chosen = [intents[n] for n in numbers]
            done = self._delete_recorded([i for i, _ in chosen], [f for _, f in chosen])
            results.update(zip(numbers, done, strict=True))
        return [results[n] for n in range(len(asks))]

    def _delete_recorded(
        self, intents: list[DeleteIntent], found: list[dict[str, int]]
    ) -> list[DeleteOutcome | StoreError]:
        """Steps 2 to 5 for checkpoints whose keys fit one record."""
        record = self.place.meta_key(f"{DELETES}/{uuid.uuid4().hex}.json")
        body = intents[0] if len(intents) == 1 else BatchIntent(intents)
        try:
            obstore.put(self.place.store, record, msgspec.json.encode(body), use_multipart=False)
        except (BaseError, OSError) as exc:
            return [
                StorageFailedError(
                    f"deleting {intent.checkpoint} failed: its delete record could not be "
                    f"written to {self.place.name} ({reason(exc)}); nothing was deleted"
                )
                for intent in intents
            ]
        self._step("intent")
        return list(self._finish(record, intents, list(found)))

    def _finish(
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
        errors, requests = self._delete_batches(sorted(set(chain.from_iterable(doomed))))
        for outcome, keys in zip(outcomes, doomed, strict=True):
            outcome.requests = sum(1 for sent in requests if not sent.isdisjoint(keys))
        after = self._look({self.place.key(i.checkpoint): _after(self.place, i) for i in intents})
        for intent, outcome, keys in zip(intents, outcomes, doomed, strict=True):
            if outcome.problem is None:
                _verified(intent, outcome, keys, after[self.place.key(intent.checkpoint)], errors)
        self._forget(record, intents, outcomes)
        return outcomes

    def _delete_batches(self, keys: list[str]) -> tuple[dict[str, str], list[set[str]]]:
        """Delete `keys` in batches: (key -> its batch's error, for batches that raised;
        the keys of each request sent)."""
        errors: dict[str, str] = {}
        sent: list[set[str]] = []
        for start in range(0, len(keys), self.batch_keys):
            batch = keys[start : start + self.batch_keys]
            sent.append(set(batch))
            try:
                obstore.delete(self.place.store, batch)
            except (BaseError, OSError) as exc:
                errors.update(dict.fromkeys(batch, reason(exc)))
            self._step("batch")
        return errors, sent

    def _forget(
        self, record: str, intents: list[DeleteIntent], outcomes: list[DeleteOutcome]
    ) -> None:
        """Step 5: the metadata of the checkpoints wholly gone (one write), then the record
        once no key failed (kept if the metadata could not be written, so the next open
        drops it)."""
        gone = [
            (i.run_id, i.checkpoint_id) for i, o in zip(intents, outcomes, strict=True) if o.done
        ]
        finished = all(not o.failed and o.problem is None for o in outcomes)
        try:
            if self.meta is not None and gone:
                self.meta.apply(delete=gone)
            if finished:
                obstore.delete(self.place.store, record)
        except StoreError as exc:
            _said([o for o in outcomes if o.done], f"its metadata could not be dropped ({exc})")
        except (BaseError, OSError) as exc:
            why = f"its delete record could not be removed ({reason(exc)})"
            _said([o for o in outcomes if not o.failed and o.problem is None], why)

    # --- at open ----------------------------------------------------------------------------
    def pending(self) -> list[str]:
        """The keys of the intent records in the bucket (interrupted deletes)."""
        return sorted(self._list(self.place.meta_key(DELETES)))

    def recover(self, *, readonly: bool = False) -> Recovery:
        """Finish every interrupted delete (read-only: report them); see the docstring."""
        recovery = Recovery()
        for record in self.pending():
            intents = self._read_intents(record, recovery)
            if readonly:
                recovery.problems.extend(
                    f"an interrupted delete of {intent.checkpoint} is waiting in "
                    f"{self.place.name}: open the store writable to finish it"
                    for intent in intents
                )
                continue
            if intents:
                prefixes = [self.place.key(intent.checkpoint) for intent in intents]
                looks = self._look(
                    {p: _after(self.place, i) for p, i in zip(prefixes, intents, strict=True)}
                )
                found = [looks[prefix] for prefix in prefixes]
                recovery.finished.extend(self._finish(record, intents, found))
        return recovery

    def _read_intents(self, record: str, recovery: Recovery) -> list[DeleteIntent]:
        """The checkpoints `record` names (a single checkpoint's record or a batch's), or
        none when it is gone or not to be acted on (said in `recovery`)."""
        try:
            intents = _recorded(self.place, record)
            for intent in intents:
                _check_intent(self.place, intent)
        except (StoreError, InvalidRequestError) as exc:
            recovery.problems.append(
                f"the delete record {record} was not acted on: {exc}; look at it, then remove it"
            )
            return []
        return intents

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
            children = split_listing(folder, self._list(folder, FOLDER_OBJECTS))
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
                found = {} if want == "file" else self._list(prefix)
                looks[prefix] = found or ({} if want == "folder" else self._single(prefix))
            except StoreError as exc:
                looks[prefix] = exc
        return looks

    def _single(self, key: str) -> dict[str, int]:
        """{key: last modified} of the one object `key`, or {} when there is none."""
        try:
            found = obstore.head(self.place.store, key)
        except FileNotFoundError:
            return {}
        except (BaseError, OSError) as exc:
            raise StorageFailedError(
                f"reading {key} in {self.place.name} failed ({reason(exc)}); nothing was deleted"
            ) from exc
        _refuse_links(self.place, [key])
        return {key: _us(found["last_modified"])}

    def _list(self, prefix: str, most: int = MAX_CHECKPOINT_OBJECTS) -> dict[str, int]:
        """key -> last modified (microseconds) of every object under `prefix` + `/`."""
        found: dict[str, int] = {}
        try:  # bounded: more objects than one checkpoint has, or pages without end, fail
            for item in every_object(self.place.store, prefix, most):
                found[item["path"]] = _us(item["last_modified"])
        except (BaseError, OSError) as exc:
            raise StorageFailedError(
                f"listing {prefix} in {self.place.name} failed ({reason(exc)}); nothing was deleted"
            ) from exc
        _refuse_outside(found, prefix)
        _refuse_links(self.place, found)
        return found

    def _step(self, name: str) -> None:
        if self.step_hook is not None:
            self.step_hook(name)


def _intent(
    ask: DeleteAsk, look: Found, settling: Settling, where: str
) -> tuple[DeleteIntent, dict[str, int]]:
    """The intent to delete what `look` found of `ask`'s checkpoint; its refusal raised."""
    if isinstance(look, StoreError):
        raise look
    if not look:
        raise NotFoundError(f"checkpoint {ask.checkpoint!r} has no objects in {where}")
    newest_us = max(look.values())
    unsettled = unsettled_reason(newest_us, settling)
    if unsettled is not None:
        raise ConflictError(_still_written(ask.checkpoint, unsettled))
    keys = sorted(look)
    return DeleteIntent(ask.checkpoint, ask.run_id, ask.checkpoint_id, keys, newest_us), look


def _records(intents: dict[int, tuple[DeleteIntent, dict[str, int]]]) -> list[list[int]]:
    """The intents (by number) split into records of at most `RECORD_KEYS` keys (a
    checkpoint with more has a record of its own) and `RECORD_CHECKPOINTS` checkpoints."""
    records: list[list[int]] = []
    keys = 0
    for n, (intent, _) in intents.items():
        if (
            not records
            or len(records[-1]) >= RECORD_CHECKPOINTS
            or (keys + len(intent.keys) > RECORD_KEYS)
        ):
            records.append([])
            keys = 0
        records[-1].append(n)
        keys += len(intent.keys)
    return records


def _doomed(intent: DeleteIntent, found: dict[str, int], outcome: DeleteOutcome) -> list[str]:
    """The keys of `intent` that `found` still holds, unless written again since (said in
    `outcome.left`)."""
    confirmed = set(intent.keys)
    doomed = []
    for key, modified_us in sorted(found.items()):
        if key not in confirmed:
            continue
        if modified_us > intent.newest_us:
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
    if isinstance(after, StoreError):
        outcome.problem = f"the objects could not be listed again to check ({after})"
        return
    for key in doomed:
        if key in after:
            outcome.failed[key] = errors.get(key, "still listed after the server deleted it")
        else:
            outcome.deleted.append(key)
    for key in sorted(set(after) - set(intent.keys)):
        outcome.left[key] = "appeared while the checkpoint was being deleted"


def _after(place: BucketPlace, intent: DeleteIntent) -> Want:
    """What to look at of `intent`'s checkpoint once the delete began: the one object of
    its name when that is what it deleted, else the objects under it."""
    return "file" if intent.keys == [place.key(intent.checkpoint)] else "folder"


def _said(outcomes: list[DeleteOutcome], problem: str) -> None:
    for outcome in outcomes:
        outcome.problem = problem


def _recorded(place: BucketPlace, record: str) -> list[DeleteIntent]:
    """The intents `record` holds: one (a single checkpoint's record, as written before
    batches) or a batch's; none when it is gone (another finished it); StoreError when it is
    damaged or names more than `RECORD_CHECKPOINTS` checkpoints."""
    raw = read_doc(place, record, msgspec.Raw).doc
    if raw is None:
        return []
    try:
        return [msgspec.json.decode(raw, type=DeleteIntent)]
    except msgspec.ValidationError:
        pass  # a batch's record, or damaged
    try:
        batch = msgspec.json.decode(raw, type=BatchIntent).batch
    except msgspec.ValidationError as exc:
        raise StoreError(f"{place.name}: {record} is damaged ({exc})") from None
    if not 0 < len(batch) <= RECORD_CHECKPOINTS:
        raise StoreError(
            f"{place.name}: {record} names {len(batch):,} checkpoints (at most "
            f"{RECORD_CHECKPOINTS:,} are deleted together)"
        )
    return batch


def _refuse_outside(keys: Iterable[str], prefix: str) -> None:
    """StoreError if a listed key is not under `prefix` + `/` (the server's answer is
    hostile input)."""
    for key in keys:
        if not key.startswith(prefix + "/"):
            raise StoreError(
                f"the server listed {key!r} under {prefix!r}, outside it; nothing was deleted"
            )


def _refuse_links(place: BucketPlace, keys: Iterable[str]) -> None:
    """StoreError if a key of obstore's local store (`file://`) is reached through a link:
    its listing follows links, so a delete through one would remove files outside the store
    (the folder store never follows a link)."""
    store = place.store
    if not isinstance(store, LocalStore) or store.prefix is None:
        return
    root, looked = str(store.prefix), set()
    for key in keys:
        folder = key.rpartition("/")[0]
        while folder and folder not in looked:
            looked.add(folder)
            if os.path.islink(os.path.join(root, folder)):
                raise StoreError(
                    f"{key} is reached through the link {folder} in {place.name}: links are "
                    "never followed; nothing was deleted"
                )
            folder = folder.rpartition("/")[0]


def _check_intent(place: BucketPlace, intent: DeleteIntent) -> None:
    prefix = place.key(checked_rel(intent.checkpoint))
    if intent.keys != [prefix]:  # a single file's record names just it
        _refuse_outside(intent.keys, prefix)


def _still_written(checkpoint: str, reason: str) -> str:
    return (
        f"refusing to delete {checkpoint}: it is incomplete ({reason}); a save may still be "
        "writing it: wait until it is complete (its objects stay the same)"
    )


def _us(moment: datetime) -> int:
    return to_us(moment, "an object's last modified time")
