"""A backend as the user names it: where it is, whether it may change, and its storage rate."""

from __future__ import annotations

import math
import re
from typing import Literal

import msgspec

from ckpt_tui.client.endpoint import without_user_info
from ckpt_tui.client.pacing import DEFAULT_MAX_IN_FLIGHT
from ckpt_tui.words import shorten_middle

BackendKind = Literal["tinker", "url", "local"]
"""`tinker`: the connection the environment or `tinker auth login` gives; `url`: a checkpoint
server named by --url or the config file; `local`: a store folder opened in-process."""

NAME_RULE = "letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64"
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")

RateSource = Literal["billing endpoint", "set by you", "default"]
RATE_SET_BY_YOU: RateSource = "set by you"
"""The backend's `storage_rate` (config file) or --storage-rate / $CKPT_TUI_STORAGE_RATE."""
RATE_FROM_BILLING: RateSource = "billing endpoint"
"""`effective_rate_usd_per_gigabyte_month` of the backend's billing endpoint."""
RATE_DEFAULT: RateSource = "default"
"""Neither: no rate, so no cost is shown (ckpt-tui does not guess a price)."""

LOCAL_PLACE = "local store "
"""What a local store's place starts with."""

KIND_WORDS: dict[BackendKind, str] = {
    "tinker": "Tinker",
    "url": "server",
    "local": "local store",
}


def check_name(name: str) -> str:
    """`name` if it can name a backend; ValueError saying what a name may hold otherwise."""
    if NAME_PATTERN.fullmatch(name) is None:
        raise ValueError(f"backend name {name!r} is not usable: use {NAME_RULE} characters")
    return name


class Backend(msgspec.Struct, frozen=True):
    """One backend the user opened, by its unique, user-facing name ("tinker", "box1").

    Only the description: the key and the client live elsewhere (a `Connection` pairs this
    with the client that talks to it; `ckpt_tui.client.Endpoint` is the resolved URL and
    credential that client uses).
    """

    name: str
    kind: BackendKind
    location: str
    """The base URL (`tinker`, `url`), or the store folder's absolute path (`local`)."""
    readonly: bool = False
    """Refuse every change on this backend (its own setting, or --readonly for all)."""
    storage_rate: float | None = None
    """USD per GiB-month set by the user; None: ask the billing endpoint, then the default."""
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    """The most changes its client sends at once (the config file's `max_in_flight`)."""

    def __post_init__(self) -> None:
        check_name(self.name)
        rate = self.storage_rate
        if rate is not None and (not math.isfinite(rate) or rate < 0):
            raise ValueError(f"backend {self.name}: a storage rate must be >= 0, got {rate}")
        if self.max_in_flight < 1:
            raise ValueError(f"backend {self.name}: max_in_flight must be >= 1")

    @property
    def is_local(self) -> bool:
        return self.kind == "local"

    @property
    def place(self) -> str:
        """Where it is, for people: 'local store /data/ckpts', 'http://127.0.0.1:8751'."""
        return self.place_prefix + self.shown_location

    @property
    def place_prefix(self) -> str:
        return LOCAL_PLACE if self.is_local else ""

    @property
    def shown_location(self) -> str:
        """The location as it may be shown: a URL without user info."""
        return self.location if self.is_local else without_user_info(self.location)

    def short_place(self, width: int) -> str:
        """`place` in at most `width` cells (when it has that many): a long location is
        shortened in the middle ('local store /home/me/…/outputs/store'), its kind kept."""
        room = max(width - len(self.place_prefix), 1)
        return self.place_prefix + shorten_middle(self.shown_location, room)

    def describe(self) -> str:
        """Its name and place, for dialogs and "Deleting 3 checkpoints on box1 (...)"."""
        readonly = ", read-only" if self.readonly else ""
        return f"{self.name} ({self.place}{readonly})"

    def document(self) -> dict[str, str]:
        """Its JSON object in `ls --json` / `prune --json`: name, kind, and url or path."""
        where = "path" if self.is_local else "url"
        shown = self.location if self.is_local else without_user_info(self.location)
        return {"name": self.name, "kind": self.kind, where: shown}
