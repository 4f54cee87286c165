"""A one-line loss curve in block characters, with one step marked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

BLOCKS = "▁▂▃▄▅▆▇█"
PREFERRED_KEYS = ("train_loss", "loss", "train_mean_nll", "eval_loss", "test_loss")


@dataclass(frozen=True)
class Sparkline:
    """The curve's characters, the column of the marked step (or None) and the value range."""

    text: str
    marker: int | None
    low: float
    high: float
    first_step: int
    last_step: int


def pick_series(series: Mapping[str, Sequence[tuple[int, float]]]) -> str | None:
    """The loss-like series to draw: a well-known name, else any key containing 'loss'."""
    for key in PREFERRED_KEYS:
        if series.get(key):
            return key
    return next((key for key in series if "loss" in key and series[key]), None)


def sparkline(points: Sequence[tuple[int, float]], width: int, mark_step: int | None) -> Sparkline:
    """Average the points into `width` columns by step and draw each as a block."""
    if not points or width < 1:
        return Sparkline("", None, 0.0, 0.0, 0, 0)
    ordered = sorted(points)
    first, last = ordered[0][0], ordered[-1][0]
    span = max(last - first, 1)
    columns = min(width, len(ordered))
    sums = [0.0] * columns
    counts = [0] * columns
    for step, value in ordered:
        index = min(columns - 1, (step - first) * columns // span)
        sums[index] += value
        counts[index] += 1
    means: list[float] = []
    for total, count in zip(sums, counts, strict=True):
        # An empty column repeats its left neighbour, so columns stay aligned with steps.
        means.append(total / count if count else means[-1])
    low, high = min(means), max(means)
    scale = (len(BLOCKS) - 1) / (high - low) if high > low else 0.0
    text = "".join(BLOCKS[round((value - low) * scale)] for value in means)
    marker = None
    if mark_step is not None and first <= mark_step <= last:
        marker = min(columns - 1, (mark_step - first) * columns // span)
    return Sparkline(text, marker, low, high, first, last)
