"""Bucket locations: `s3://bucket/prefix`, `gs://…`, `az://…`, told from folder paths.

A location with a scheme (`word://`) is never a folder: one this build cannot open is refused
(`UnsupportedLocationError`), so `serve s3:/x` never makes a folder `./s3:/x`. Credentials are
not part of a location: each cloud's client reads its standard environment variables.
"""

from __future__ import annotations

import ipaddress
import os
import posixpath
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

SCHEMES = {
    "s3": "S3",
    "gs": "Google Cloud Storage",
    "az": "Azure Blob Storage",
    "file": "a folder read as a bucket (obstore's LocalStore: what the demo's bucket is)",
}
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):/")
PlaceKey = tuple[object, ...]
LOOPBACK = "loopback"
DEFAULT_PORTS = {"http": 80, "https": 443}


class UnsupportedLocationError(ValueError):
    """A location with a scheme this build cannot open, or a malformed bucket location."""


@dataclass(frozen=True)
class BucketLocation:
    scheme: str
    bucket: str
    prefix: str
    """The store's root inside the bucket: no leading or trailing `/` ("" for all of it)."""
    endpoint: str | None = None
    region: str | None = None

    @property
    def url(self) -> str:
        """`scheme://bucket/prefix`: what people see (no credentials are ever in it)."""
        if self.scheme == "file":
            return f"file:///{self.prefix}"
        return f"{self.scheme}://{self.bucket}/{self.prefix}".rstrip("/")


def reads_aws_profile(location: BucketLocation) -> bool:
    """Whether opening `location` reads `AWS_PROFILE` (with boto3: 0.27-0.31 s of CPU to
    import and make a session, here): an S3 location, a profile named and no keys in the
    environment (which come first, as in the AWS SDKs)."""
    has_profile = bool(os.environ.get("AWS_PROFILE"))
    return location.scheme == "s3" and has_profile and not os.environ.get("AWS_ACCESS_KEY_ID")


def has_scheme(text: str) -> bool:
    """Whether `text` names a location by scheme (`s3://…`, `http://…`), not a folder path."""
    return _SCHEME.match(text) is not None and not re.match(r"^[A-Za-z]:[\\/]", text)


def parse_location(
    text: str, endpoint: str | None = None, region: str | None = None
) -> BucketLocation | None:
    """The bucket location `text` names; None for a folder path; UnsupportedLocationError for
    any other scheme or a location without a bucket."""
    if not has_scheme(text):
        return None
    scheme, _, rest = text.partition("://")
    scheme = scheme.lower()
    if scheme not in SCHEMES or not _:
        known = ", ".join(f"{s}://" for s in SCHEMES if s != "file")
        raise UnsupportedLocationError(
            f"cannot open {_shown(text)}: this build opens folders and buckets ({known}); "
            "give a folder path or a bucket location"
        )
    bucket, _, prefix = rest.partition("/")
    if scheme == "file":  # file:///absolute/folder: no bucket, the path is the prefix
        if bucket:
            raise UnsupportedLocationError(f"{text}: give file:///absolute/folder")
        return BucketLocation(scheme, "", "/".join(p for p in prefix.split("/") if p))
    if not bucket or "@" in bucket:
        raise UnsupportedLocationError(
            f"{scheme}://{bucket.rpartition('@')[2]}/…: give the bucket after {scheme}:// "
            f"(e.g. {scheme}://my-bucket/checkpoints); credentials come from the environment"
        )
    parts = [part for part in prefix.split("/") if part]
    if any(part in (".", "..") for part in parts):
        raise UnsupportedLocationError(f"{scheme}://{bucket}/{prefix}: '.' and '..' are not keys")
    return BucketLocation(scheme, bucket, "/".join(parts), endpoint, region)


def _shown(text: str) -> str:
    """A location as it may be shown: user info (`user:secret@`) left out."""
    scheme, sep, rest = text.partition("://")
    host, slash, path = rest.partition("/")
    return f"{scheme}{sep}{host.rpartition('@')[2]}{slash}{path}"


def url_key(url: str) -> PlaceKey:
    """Scheme, machine, port (the scheme's default when none is given) and path."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # not a usable URL: that backend's own error
        return ("text", url)
    scheme = parts.scheme.lower()
    path = posixpath.normpath(parts.path or "/")
    return ("url", scheme, machine(parts.hostname or ""), port or DEFAULT_PORTS.get(scheme), path)


def machine(host: str) -> str:
    """The host as one spelling per machine: lower case, loopback names and addresses as one."""
    host = host.lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return LOOPBACK
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return LOOPBACK if address.is_loopback else address.compressed
