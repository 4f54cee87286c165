"""Keys as values that never show: `Secret` has a redacted `str` and `repr`, and is revealed
only where the `X-API-Key` header is written.

Rich's traceback renderer shows each frame's locals, and it takes msgspec structs apart field
by field (their `__rich_repr__`), so a struct's own redacted `repr` does not protect a key it
holds as a string. A `Secret` is a plain object: every renderer falls back to its `repr`.

A key is checked when it is read (`checked_key`): printable ASCII without spaces is all an
HTTP header can carry as is. What is wrong is said without echoing the key.
"""

from __future__ import annotations

HIDDEN = "********"
"""What a Secret shows in its place (`str`, and so f-strings)."""


class Secret:
    """A key, credential or token; `reveal()` is its only way out."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The value itself: only for the header that carries it."""
        return self._value

    def __repr__(self) -> str:
        return f"Secret({HIDDEN!r})"

    def __str__(self) -> str:
        return HIDDEN

    def __bool__(self) -> bool:
        return bool(self._value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


class UnusableKey(ValueError):
    """A key that no header can carry; the message says why, never what the key is."""


def key_problem(text: str) -> str | None:
    """Why `text` cannot be sent as a key (without showing it); None when it can."""
    if not text:
        return "it is empty"
    if not text.isascii():
        return "it holds a character that is not ASCII (a key is ASCII letters, digits and marks)"
    if any(char.isspace() for char in text):
        return "it holds a space, tab or line break"
    if not text.isprintable():
        return "it holds a control character (such as NUL)"
    return None


def checked_key(text: str) -> Secret:
    """`text` as a Secret; UnusableKey saying what is wrong when a header cannot carry it."""
    problem = key_problem(text)
    if problem is not None:
        raise UnusableKey(problem)
    return Secret(text)


def as_secret(value: str | Secret | None) -> Secret | None:
    """A key given by a caller as a string or a Secret (empty: none), as a Secret."""
    if not value:
        return None
    return value if isinstance(value, Secret) else Secret(value)
