"""One store is one backend: what a backend is, however its name or place is spelled.

- A local store is the device and inode of its folder, links resolved: `/x`, `/x/../x` and
  a link to `/x` are one store.
- A server is its scheme, machine, port and path: the host in lower case, and `localhost`,
  `127.0.0.1` and `::1` (any loopback address) are one machine.
- ckpt-tui's own server also says which store it serves: the store id its health check
  reports (`GET /api/v1/healthz`), kept in the store's metadata so it outlives restarts. A
  `--url` of `ckpt-tui serve /x` and `--local /x` are then one store too, and so are two
  URLs of one server (an SSH tunnel and its direct address).

- A bucket (`--local s3://…`) is its location at its endpoint (`url_key`'s spelling): the
  same location at the same endpoint, however spelled, is refused before anything opens. The
  same location at two endpoints may be two stores (two servers) or one (a server and a proxy
  in front of it): the store ids the opened stores report tell (`one_store_problem`), as for
  two URLs of one server.

- Nor may one local store's folder be inside another's (`nested_folders`): the outer store
  would see the inner one's files as its own, and a change through one would reach the
  other's checkpoints.

Two backends that are one store would list its checkpoints twice and plan them twice, and a
change through one would go around the other's read-only setting: they are refused.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence

from ckpt_tui.backends.connection import Connection
from ckpt_tui.backends.descriptor import Backend
from ckpt_tui.client import ClientError
from ckpt_tui.locations import PlaceKey, has_scheme, url_key


def place_key(backend: Backend, bucket_endpoint: str | None = None) -> PlaceKey:
    """What `backend` is, as far as its description says (equal keys: one store); a bucket
    with the endpoint named for it (None: the environment's or the cloud's own)."""
    folder = file_url_folder(backend)
    if folder is not None:
        return folder_key(folder)
    if is_bucket(backend):  # the location is already spelled one way (`parse_location`)
        return ("bucket", backend.location, url_key(bucket_endpoint) if bucket_endpoint else None)
    return folder_key(backend.location) if backend.is_local else url_key(backend.location)


def is_bucket(backend: Backend) -> bool:
    return backend.is_local and has_scheme(backend.location)


def file_url_folder(backend: Backend) -> str | None:
    """The folder a `file:///x` location reads (x, as a bucket): it is that folder's store."""
    scheme, sep, rest = backend.location.partition("://")
    if not is_bucket(backend) or not sep or scheme.lower() != "file":
        return None
    return "/" + rest.lstrip("/")


def folder_key(folder: str) -> PlaceKey:
    """The folder's device and inode (links followed); its real path when it cannot be
    looked at (a missing folder is that backend's own error)."""
    try:
        info = os.stat(folder)
    except OSError:
        return ("path", os.path.realpath(folder))
    return ("inode", info.st_dev, info.st_ino)


FolderId = tuple[int, int]


def folder_chain(folder: str) -> list[FolderId]:
    """The device and inode of the folder (links resolved) and of each folder above it, up
    to `/`, innermost first; empty when it cannot be looked at (that backend's own error).
    Comparing these, not spellings, finds nesting through links and bind mounts too."""
    real = os.path.realpath(folder)
    chain: list[FolderId] = []
    while True:
        try:
            info = os.stat(real)
        except OSError:
            return []
        chain.append((info.st_dev, info.st_ino))
        parent = os.path.dirname(real)
        if parent == real:
            return chain
        real = parent


def nested_folders(locals_: Sequence[Backend]) -> str | None:
    """Why one of the local backends' folders (or bucket prefixes) is inside another's; None
    when none is."""
    buckets = [b for b in locals_ if is_bucket(b) and file_url_folder(b) is None]
    for inner in buckets:
        for outer in buckets:
            if inner.location.startswith(outer.location + "/"):
                return nested_message(outer, inner)
    folders = [backend for backend in locals_ if backend not in buckets]
    chains = [
        (backend, folder_chain(file_url_folder(backend) or backend.location)) for backend in folders
    ]
    for inner, chain in chains:
        for outer, outer_chain in chains:
            if outer is not inner and chain and outer_chain and outer_chain[0] in chain[1:]:
                return nested_message(outer, inner)
    return None


def nested_message(outer: Backend, inner: Backend) -> str:
    return (
        f"{inner.name} ({inner.place}) is inside {outer.name} ({outer.place}): one store's "
        "folder cannot hold another's (a change through one would reach the other's "
        "checkpoints, around its settings such as read-only). Give folders that do not "
        "overlap, or name only one with --backend NAME"
    )


def one_store_message(first: Backend, second: Backend, why: str) -> str:
    """What refusing two backends that are one store says: both, why, and what to do."""
    return (
        f"{first.name} ({first.place}) and {second.name} ({second.place}) are one store "
        f"({why}): its checkpoints would be listed and planned twice, and a change through "
        "one would go around the other's settings (read-only). Give it once: drop one from "
        "the command line or the config, or name the others with --backend NAME"
    )


def same_place_message(first: Backend, second: Backend) -> str:
    """`one_store_message` for two backends whose descriptions are one place."""
    if first.location == second.location:
        return f"{second.place} was given twice (as {first.name} and {second.name}): give it once"
    why = "the same folder" if first.is_local else "the same server"
    return one_store_message(first, second, why)


async def store_id_of(connection: Connection) -> str | None:
    """The store id the backend reports; None when it reports none or cannot be asked (a
    backend that cannot be reached fails its own load)."""
    if connection.problem is not None:
        return None
    try:
        return await connection.client.store_id()
    except ClientError:
        return None


async def one_store_problem(connections: Sequence[Connection]) -> str | None:
    """Why two of `connections` are one store, by the store ids they report; None when no
    two are. One small request per backend, none for a single backend."""
    usable = [connection for connection in connections if connection.problem is None]
    if len(usable) < 2:
        return None
    ids = await asyncio.gather(*(store_id_of(connection) for connection in usable))
    seen: dict[str, Backend] = {}
    for connection, store_id in zip(usable, ids, strict=True):
        if store_id is None:
            continue
        first = seen.setdefault(store_id, connection.backend)
        if first is not connection.backend:
            return one_store_message(first, connection.backend, f"store id {store_id}")
    return None
