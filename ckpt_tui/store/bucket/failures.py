"""A failed bucket request in words a person can act on, never with a URL or a credential.

obstore's messages name the request's URL (and a server's answer is hostile input), so only
the error's kind and the HTTP status are kept.
"""

from __future__ import annotations

import re

from obstore.exceptions import (
    AlreadyExistsError,
    NotSupportedError,
    PermissionDeniedError,
    PreconditionError,
    UnauthenticatedError,
)

_STATUS = re.compile(r"status code: (\d{3})")
_CODE = re.compile(r"\(code: ([A-Za-z]{1,64})\)")
"""An S3 error code (`AccessDenied`) that a batch delete answered for a key."""
_KINDS: tuple[tuple[type[BaseException], str], ...] = (
    (PermissionDeniedError, "the bucket refused access (permission denied)"),
    (UnauthenticatedError, "the bucket refused the credentials"),
    (PreconditionError, "another writer changed the object first"),
    (AlreadyExistsError, "the object exists already"),
    (NotSupportedError, "the server does not support this request"),
    (FileNotFoundError, "the object is not there"),
)


def bucket_why(exc: BaseException) -> str:
    """Why a bucket request failed: its kind and HTTP status, without the URL."""
    what = next((words for kind, words in _KINDS if isinstance(exc, kind)), None)
    found = _STATUS.search(str(exc))
    status = f"HTTP {found.group(1)}" if found else None
    code = _CODE.search(str(exc))
    if what is None and code is not None:
        what, status = "the bucket refused to delete it", code.group(1)
    if what is None:
        what = "the bucket did not answer" if status is None else "the bucket answered an error"
    return f"{what} ({status})" if status else what
