"""Several backends at once: their descriptions, their states side by side, and totals.

Core: no Textual here. The command line builds a `Connection` (a `Backend` and its own
client) per backend; a `Fleet` holds each backend's latest state, replaced one backend at a
time as loads finish.
"""

from ckpt_tui.backends.connection import Connection
from ckpt_tui.backends.descriptor import (
    NAME_RULE,
    RATE_DEFAULT,
    RATE_FROM_BILLING,
    RATE_SET_BY_YOU,
    Backend,
    BackendKind,
    RateSource,
    check_name,
)
from ckpt_tui.backends.fleet import BackendState, Fleet, Totals, combined

__all__ = [
    "NAME_RULE",
    "RATE_DEFAULT",
    "RATE_FROM_BILLING",
    "RATE_SET_BY_YOU",
    "Backend",
    "BackendKind",
    "BackendState",
    "Connection",
    "Fleet",
    "RateSource",
    "Totals",
    "check_name",
    "combined",
]
