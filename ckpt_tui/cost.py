"""Storage cost: what checkpoints cost per month at a rate in USD per GiB-month.

The rate comes from `--storage-rate` if given, else from $CKPT_TUI_STORAGE_RATE; the flag wins,
so one command can try another rate without touching the environment. With neither, no cost
is shown (ckpt-tui does not guess a price).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping

import msgspec

from ckpt_tui.sizes import SizeTotal

STORAGE_RATE_ENV = "CKPT_TUI_STORAGE_RATE"
GIB = 2**30


class RateError(ValueError):
    """A storage rate that is not a usable number; the message says where it came from."""


class MonthlyCost(msgspec.Struct, frozen=True, gc=False):
    """USD per month for some bytes; `at_least` when some sizes were unknown."""

    usd: float
    at_least: bool = False
    estimated: bool = False


def parse_rate(text: str, source: str) -> float:
    """A rate from text: a finite number >= 0 (USD per GiB-month)."""
    try:
        rate = float(text.strip().lstrip("$"))
    except ValueError:
        raise RateError(
            f"{source} must be a number of USD per GiB-month (e.g. 0.10), got {text!r}"
        ) from None
    if not math.isfinite(rate) or rate < 0:
        raise RateError(f"{source} must be a finite number of at least 0, got {text!r}")
    return rate


def resolve_storage_rate(
    flag: str | None, environ: Mapping[str, str] | None = None
) -> float | None:
    """The rate from the flag, else the environment, else None. RateError if it is bad."""
    if flag is not None:
        return parse_rate(flag, "--storage-rate")
    env = os.environ if environ is None else environ
    text = env.get(STORAGE_RATE_ENV, "").strip()
    return parse_rate(text, f"${STORAGE_RATE_ENV}") if text else None


def monthly_cost(size: SizeTotal, rate: float) -> MonthlyCost:
    """What `size` costs per month at `rate` USD per GiB-month."""
    if not math.isfinite(rate) or rate < 0:
        raise RateError(f"a storage rate must be a finite number of at least 0, got {rate}")
    return MonthlyCost(
        usd=size.bytes / GIB * rate,
        at_least=size.is_at_least,
        estimated=size.estimate_count > 0,
    )


def format_cost(cost: MonthlyCost) -> str:
    """'$12.40/mo', '≈ $12.40/mo' (from estimates) or 'at least $12.40/mo' (unknown sizes).

    A cost that rounds to nothing but is not nothing reads '< $0.01/mo'.
    """
    text = "< $0.01/mo" if 0 < cost.usd < 0.005 else f"${cost.usd:,.2f}/mo"
    if cost.estimated:
        text = f"≈ {text}"
    return f"at least {text}" if cost.at_least else text
