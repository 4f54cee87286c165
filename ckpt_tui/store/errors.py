"""Errors the store raises; the server maps each to one HTTP status."""


class StoreError(Exception):
    """Base class; the message is shown to people as is, so it says what to do."""


class NotFoundError(StoreError):
    """No such run or checkpoint (HTTP 404)."""


class ConflictError(StoreError):
    """The change conflicts with the current state, e.g. publishing a public checkpoint (409)."""


class InvalidRequestError(StoreError):
    """Bad input: an unsafe name, a TTL out of range (400)."""


class ReadOnlyStoreError(StoreError):
    """The store's folder cannot be written; browsing works, changes do not (HTTP 403)."""


class StoreClosedError(StoreError):
    """The store was closed (the server is stopping): HTTP 503, try again later."""
