"""A bucket prefix through obstore (S3, GCS, Azure; memory and local stores): what the walk's
`Storage` on a bucket (`bucket.tree.ListedTree`) lists, stats and reads.

Keys are paths from the bucket's top; the store's root is the location's prefix. The whole
prefix is listed at once (`list_all`, every page followed, bounded in objects and time); the
walk's levels are answered from that listing (`bucket.tree.ListedTree`), so this class lists
no single level; a file's header is read with ranged GETs. Credentials come from each
cloud's standard environment (obstore reads `AWS_*`, `GOOGLE_*`, `AZURE_*`), never from a
file of ours; error texts keep the cloud's reason and drop everything else.
"""

from __future__ import annotations

import asyncio
import os
import re
import threading
from collections.abc import Callable, Coroutine, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

import obstore

from ckpt_tui.locations import BucketLocation, reads_aws_profile, url_key
from ckpt_tui.store.blobs.base import Entry, StorageReadError

if TYPE_CHECKING:
    from obstore import ObjectMeta
    from obstore.store import ObjectStore

T = TypeVar("T")

MAX_REASON = 300
"""The most of a cloud's error text kept in a problem line."""
MAX_LISTED = 2_000_000
"""The most objects one listing holds in memory (about 200 bytes each)."""
LIST_WAIT_SECONDS = 300.0
"""The longest a listing waits for its next thousand objects (a page, or a few): a server
answering empty pages that each name a next one is not listed forever. Longer than obstore
retries one request (180 s), so a slow page says its own error first."""
LISTS_IN_FLIGHT = 16
"""Prefixes listed at once (`list_all`)."""
ONE_PAGE = 1000
"""Objects a listing request asks for (S3's most): a prefix of fewer is listed in one."""
SPREAD_LEVELS = 2
"""How deep `list_all` looks for prefixes to list side by side (while fewer than
LISTS_IN_FLIGHT are found): `team/` then `team/runs/`, `team/trainer/`, then their children."""


ENDPOINT_KEYS = {"gs": "base_url"}
"""obstore's name for a store's endpoint where it is not `endpoint` (GCS: its base URL)."""
ENDPOINT_VARIABLES = {
    "s3": ("AWS_ENDPOINT_URL",),
    "gs": ("GOOGLE_BASE_URL",),
    "az": ("AZURE_STORAGE_ENDPOINT", "AZURE_ENDPOINT"),
}
"""The standard variables naming each cloud's endpoint (obstore reads them too)."""
STOPPED = "not read: the store was closed"
"""Why a request is not sent once the storage is stopped (`ObjectStorage.stop`)."""
AZURITE_ENDPOINT = "http://127.0.0.1:10000"
"""Where `AZURE_STORAGE_USE_EMULATOR` points obstore (Azurite's default port)."""


def environment_endpoint(scheme: str) -> str | None:
    """The endpoint the cloud's environment names for `scheme`, if any: a bucket there is
    not the cloud's bucket of the same name, and a plain-HTTP one must be allowed."""
    for name in ENDPOINT_VARIABLES.get(scheme, ()):
        if os.environ.get(name):
            return os.environ[name]
    emulator = os.environ.get("AZURE_STORAGE_USE_EMULATOR", "").lower() in ("1", "true")
    return AZURITE_ENDPOINT if scheme == "az" and emulator else None


class ObjectStorage:
    def __init__(self, store: ObjectStore, url: str, prefix: str = "") -> None:
        self._store = store
        self._url = url
        self._root = prefix.strip("/")
        self.place_scope = ""
        """Where the bucket is served from, one spelling per endpoint (`locations.url_key`:
        no user info, host in lower case, default port, no trailing `/`) and, on Azure, the
        account: one bucket name at two endpoints is two buckets. "" for the cloud's own
        endpoint and for local stores."""
        self.cache_scope: str | None = None
        """What tells this bucket from another of the same name (its endpoint and location):
        the key of what is kept of it on this machine (`bucket.read_cache`). None for a
        memory or local store, whose ETags are counters or file times, not the contents'."""
        self._stopping = threading.Event()

    def stop(self) -> None:
        """Send no request from now on: each one not sent fails with STOPPED, and a run of
        several (a listing, `read_many`) ends once those already in flight are answered.

        For a store closed while another thread still reads it (the app quitting during a
        bucket's first look): the process must not end with a request in flight. obstore
        answers from threads of its own, which call into Python; one that does so while the
        interpreter finalizes is ended inside Rust code, and that aborts the process
        (SIGABRT). So requests are let finish rather than abandoned or cancelled."""
        self._stopping.set()

    @property
    def stopped(self) -> bool:
        """Whether `stop` was called: a caller between requests ends its work."""
        return self._stopping.is_set()

    def _go_on(self) -> None:
        if self.stopped:
            raise StorageReadError(STOPPED)

    @classmethod
    def open(cls, location: BucketLocation) -> ObjectStorage:
        """The bucket of `location`, with credentials from the environment; StorageReadError
        when the client cannot be made (an unknown region, a malformed endpoint...)."""
        from obstore.store import from_url

        config: dict[str, Any] = {}
        endpoint = location.endpoint or environment_endpoint(location.scheme)
        if location.endpoint:
            config[ENDPOINT_KEYS.get(location.scheme, "endpoint")] = location.endpoint
        if location.region and location.scheme == "s3":
            config["region"] = location.region
        client: dict[str, Any] = {}
        if endpoint and endpoint.startswith("http://"):
            client["allow_http"] = True  # a plain-HTTP endpoint the user named (a test server)
        if location.scheme == "file":  # the whole folder is the store; its root is its top
            try:
                return cls(from_url(location.url), location.url)
            except Exception as exc:
                raise StorageReadError(f"cannot open {location.url}: {reason(exc)}") from None
        provider = profile_provider(location, config)
        try:
            store = from_url(
                f"{location.scheme}://{location.bucket}",
                config=config or None,  # type: ignore[arg-type]
                client_options=client or None,  # type: ignore[arg-type]
                credential_provider=provider,  # type: ignore[arg-type]
            )
        except Exception as exc:  # obstore raises its own kinds and ValueError
            raise StorageReadError(f"cannot open {location.url}: {reason(exc)}") from None
        opened = cls(store, location.url, location.prefix)
        account = os.environ.get("AZURE_STORAGE_ACCOUNT_NAME") if location.scheme == "az" else None
        if endpoint or account:
            opened.place_scope = f"{url_key(endpoint) if endpoint else ''}\0{account or ''}"
        opened.cache_scope = f"{opened.place_scope}\0{location.url}"
        return opened

    @property
    def url(self) -> str:
        return self._url

    @property
    def root(self) -> str:
        return self._root

    @property
    def object_store(self) -> ObjectStore:
        """The obstore store: the write side's conditional writes and prefix listings."""
        return self._store

    def list_all(self, expected: int | None = None) -> Iterator[tuple[str, Entry]]:
        """(key, file) for every object under the root; StorageReadError when a request
        fails (the caller must not take the part as the whole). Listed side by side
        (`list_side_by_side`), not as one long sequence of pages; or flat, when `expected`
        (what the last look listed) fits one page: one request, where the levels found
        first to list side by side cost two requests one after the other."""
        try:
            if expected is not None and expected < ONE_PAGE:
                whole = listed_under(
                    self._store, self._root or None, MAX_LISTED, lambda: self.stopped
                )
                listed = _run(whole)
            else:
                listed = _run(self._list_side_by_side())
        except FileNotFoundError as exc:  # no such bucket: not an empty one
            raise StorageReadError(f"not found: {reason(exc)}") from None
        except StorageReadError:
            raise
        except Exception as exc:
            raise _read_error(exc) from None
        for meta in listed:
            key = meta["path"]
            yield key, entry_of(key.rsplit("/", 1)[-1], meta)

    async def _list_side_by_side(self) -> list[Any]:
        """Every object under the root: the top level and, while there are few prefixes, the
        level below listed with a delimiter; then each prefix found listed flat (pages of
        1,000, continuation tokens), LISTS_IN_FLIGHT at a time. A flat listing of the whole
        root is one request after another; prefixes listed side by side wait together."""
        objects: list[Any] = []
        prefixes = [self._root] if self._root else [""]
        failed: list[Exception] = []  # the first failure stops the others' next pages

        def stopped() -> bool:
            return bool(failed) or self.stopped

        for _ in range(SPREAD_LEVELS):
            if len(prefixes) >= LISTS_IN_FLIGHT:
                break
            self._go_on()
            levels = await asyncio.gather(
                *(self._level(prefix) for prefix in prefixes), return_exceptions=True
            )
            prefixes = []
            for level in levels:
                if isinstance(level, BaseException):
                    raise level
                objects.extend(level["objects"])
                prefixes.extend(p.rstrip("/") for p in level["common_prefixes"])
        gate = asyncio.Semaphore(LISTS_IN_FLIGHT)

        async def flat(prefix: str) -> list[Any]:
            async with gate:
                try:
                    return await listed_under(self._store, prefix, MAX_LISTED, stopped)
                except Exception as exc:  # raised once every listing in flight has ended
                    failed.append(exc)
                    return []

        parts = await asyncio.gather(*(flat(prefix) for prefix in prefixes))
        if failed:
            raise failed[0]
        for part in parts:
            objects.extend(part)
            if len(objects) > MAX_LISTED:
                raise StorageReadError(f"more than {MAX_LISTED:,} objects under {self._url}")
        return objects

    async def _level(self, prefix: str) -> Any:
        level = obstore.list_with_delimiter_async(self._store, f"{prefix}/" if prefix else None)
        try:
            return await asyncio.wait_for(level, LIST_WAIT_SECONDS)
        except asyncio.TimeoutError:  # TimeoutError from 3.11 on
            raise StorageReadError(
                f"listing {prefix or 'the top level'} brought no object for "
                f"{LIST_WAIT_SECONDS:g} s (a server naming next pages without end?)"
            ) from None

    def stat(self, path: str) -> Entry | None:
        self._go_on()
        key = key_of(path)
        try:
            meta = obstore.head(self._store, key)
        except FileNotFoundError:  # obstore's "not found" (an OSError: the key is not there)
            return None
        except Exception as exc:
            raise _read_error(exc) from None
        return entry_of(key.rsplit("/", 1)[-1], meta)

    def read_range(self, path: str, start: int, length: int) -> bytes:
        if length <= 0:
            return b""
        self._go_on()
        try:
            data = obstore.get_range(self._store, key_of(path), start=start, length=length)
        except Exception as exc:
            raise _read_error(exc) from None
        return bytes(data)

    def read_many(
        self, wanted: Sequence[tuple[str, int, int]], in_flight: int
    ) -> dict[tuple[str, int], bytes]:
        """(key, start) -> bytes for many ranged reads (key, start, length), `in_flight` at
        a time; a read that fails is left out (whoever needs it reads it again and says why)."""

        async def one(gate: asyncio.Semaphore, key: str, start: int, length: int) -> bytes | None:
            async with gate:
                if self.stopped:
                    return None
                try:
                    got = await obstore.get_range_async(
                        self._store, key, start=start, length=length
                    )
                except Exception:
                    return None
                return bytes(got)

        async def every() -> list[bytes | None]:
            gate = asyncio.Semaphore(in_flight)
            return await asyncio.gather(*(one(gate, *item) for item in wanted))

        answers = _run(every())
        pairs = zip(wanted, answers, strict=True)
        return {(key, start): got for (key, start, _), got in pairs if got is not None}

    def delete_batch(self, paths: Sequence[str]) -> dict[str, str | None]:
        """One DeleteObjects per 1,000 keys on S3 (obstore batches them). A batch that fails
        as a whole leaves every key's outcome unknown: each says so."""
        if self.stopped:
            return dict.fromkeys(paths, STOPPED)
        keys = [key_of(path) for path in paths]
        try:
            obstore.delete(self._store, keys)
        except Exception as exc:
            why = reason(exc)
            return {path: why for path in paths}
        return dict.fromkeys(paths)


def every_object(store: ObjectStore, prefix: str | None, most: int) -> list[ObjectMeta]:
    """`listed_under`, awaited from code that is not async."""
    return _run(listed_under(store, prefix, most))


async def listed_under(
    store: ObjectStore,
    prefix: str | None,
    most: int,
    stopped: Callable[[], bool] = lambda: False,
) -> list[ObjectMeta]:
    """Every object under `prefix` (all pages); StorageReadError when there are more than
    `most`, when `LIST_WAIT_SECONDS` pass without the next objects, or when `stopped()`
    before a next page is asked for (STOPPED); the cloud's errors as they are raised."""
    found: list[ObjectMeta] = []
    stream = obstore.list(store, prefix, chunk_size=ONE_PAGE)
    while True:
        if stopped():
            raise StorageReadError(STOPPED)
        try:
            chunk = await asyncio.wait_for(anext(stream), LIST_WAIT_SECONDS)
        except StopAsyncIteration:
            return found
        except asyncio.TimeoutError:  # TimeoutError from 3.11 on
            raise StorageReadError(
                f"the listing brought no object for {LIST_WAIT_SECONDS:g} s after "
                f"{len(found):,} (a server naming next pages without end?)"
            ) from None
        found.extend(chunk)
        if len(found) > most:
            raise StorageReadError(f"more than {most:,} objects are listed")


def _run(work: Coroutine[Any, Any, T]) -> T:
    """Await `work` in a thread of its own: the caller may be inside an event loop (the
    app's)."""
    with ThreadPoolExecutor(1) as runner:
        return runner.submit(asyncio.run, work).result()


def profile_provider(
    location: BucketLocation, config: dict[str, Any]
) -> Callable[[], dict[str, Any]] | None:
    """The keys of `AWS_PROFILE` for an S3 location, unless keys are in the environment
    (which come first, as in the AWS SDKs); its region goes into `config` unless given."""
    if not reads_aws_profile(location):
        return None
    provider, region = profile_credentials(os.environ["AWS_PROFILE"])
    if region:
        config.setdefault("region", region)
    return provider


def profile_credentials(profile: str) -> tuple[Callable[[], dict[str, Any]], str | None]:
    """(what gives obstore the keys of AWS profile `profile`, the profile's region), read
    by boto3 from the shared config files as the AWS CLI reads them; obstore reads no
    profiles itself. StorageReadError saying what to do when it cannot be read."""
    try:
        import boto3
        from botocore.exceptions import BotoCoreError
    except ImportError:
        raise StorageReadError(
            f"AWS_PROFILE={profile} is set, but reading profiles needs boto3 "
            "(pip install boto3); or export the profile's keys: "
            'eval "$(aws configure export-credentials --format env)"'
        ) from None
    try:
        session = boto3.Session(profile_name=profile)
        credentials = session.get_credentials()
    except BotoCoreError as exc:
        raise StorageReadError(f"AWS_PROFILE={profile}: {type(exc).__name__}") from None
    if credentials is None:
        raise StorageReadError(f"AWS_PROFILE={profile}: the profile holds no credentials")

    def provide() -> dict[str, Any]:
        frozen = credentials.get_frozen_credentials()
        return {
            "access_key_id": frozen.access_key,
            "secret_access_key": frozen.secret_key,
            "token": frozen.token,
            "expires_at": None,
        }

    return provide, session.region_name


def key_of(path: str) -> str:
    """A storage path as a key: `os.path.join` of an empty root gives `./x`, `.` or `x/`."""
    key = path.strip("/")
    while key.startswith("./"):
        key = key[2:]
    return "" if key == "." else key


def entry_of(name: str, meta: Any) -> Entry:
    modified = meta["last_modified"]
    mtime_ns = int(modified.timestamp() * 1_000_000) * 1000
    return Entry(name, False, int(meta["size"]), mtime_ns, str(meta.get("e_tag") or ""))


def _read_error(exc: Exception) -> OSError:
    if isinstance(exc, FileNotFoundError):
        return FileNotFoundError(2, "not found")
    return StorageReadError(reason(exc))


def reason(exc: BaseException) -> str:
    """A cloud error's reason in one line, bounded: the status the server answered and the
    request (no query string), else the error's first line; a URL in it is kept without its
    user info (an endpoint may carry a password) and query string."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    found = _STATUS.search(text)
    if found is not None:
        method, url, status = found.groups()
        text = f"the server answered {status.strip()} ({method} {url.split('?', 1)[0]})"
    return _URL.sub(r"\1\2", text)[:MAX_REASON]


_URL = re.compile(r"(\w+://)(?:[^\s/?#@]*@)?([^\s?#]*)[?#]?\S*")
"""A URL in an error text: (scheme, host and path), leaving out user info and query."""
_STATUS = re.compile(
    r"Error performing (\w+) (\S+) in [^-]*- Server returned non-2xx status code: ([^:]+)"
)
