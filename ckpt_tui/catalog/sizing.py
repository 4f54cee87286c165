"""Sizes of one run's checkpoints: the server's exact bytes, else a calibrated estimate."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

from ckpt_tui.api_types import Checkpoint, CheckpointType, WeightsInfo
from ckpt_tui.catalog.rows import is_incomplete
from ckpt_tui.sizes import (
    Size,
    calibrated_bytes_per_param,
    calibrated_estimate,
    checkpoint_param_count,
    estimate_checkpoint_size,
)

NO_MODEL = Size.unknown("the server gave no size and the run's model is not known")
NOT_STORED = Size.unknown("no longer stored (deleted or expired)")


class RunSizer:
    """Gives every checkpoint of one run a size, exact where the server knows it.

    Where checkpoints of the same run and type have exact sizes, their measured bytes per
    parameter replace the dtype assumption: that is the best evidence there is.
    """

    def __init__(self, info: WeightsInfo | None, checkpoints: Sequence[Checkpoint]) -> None:
        self.info = info
        self.checkpoints = checkpoints
        self._estimates: dict[CheckpointType, Size] = {}  # one per kind: they are all alike
        self._exact: dict[int, Size] = {}
        """One Size per byte count: a run's checkpoints of a kind are mostly the same size,
        and 100,000 rows held 100,000 equal Sizes (5 MB)."""

    @cached_property
    def params(self) -> int | None:
        return None if self.info is None else checkpoint_param_count(self.info)

    @cached_property
    def exact_by_type(self) -> dict[CheckpointType, list[int]]:
        """Measured sizes per kind; worked out on the first estimate (most runs need none)."""
        found: dict[CheckpointType, list[int]] = {}
        for ckpt in self.checkpoints:
            if ckpt.size_bytes is not None:
                found.setdefault(ckpt.checkpoint_type, []).append(ckpt.size_bytes)
        return found

    def size_of(self, ckpt: Checkpoint) -> Size:
        """Exact (partial while `ckpt-tui serve` says it is still written), else estimated."""
        size_bytes = ckpt.size_bytes
        if size_bytes is not None:
            if ckpt.user_metadata and is_incomplete(ckpt):
                return Size.partial(size_bytes)
            size = self._exact.get(size_bytes)
            if size is None:
                size = self._exact[size_bytes] = Size.exact(size_bytes)
            return size
        if self.info is None:
            return NO_MODEL
        estimate = self._estimates.get(ckpt.checkpoint_type)
        if estimate is None:
            estimate = self._estimates[ckpt.checkpoint_type] = self.estimate(ckpt.checkpoint_type)
        return estimate

    @staticmethod
    def unknown_missing() -> Size:
        return NOT_STORED

    def estimate(self, kind: CheckpointType) -> Size:
        base = estimate_checkpoint_size(self.info, kind) if self.info else Size.unknown()
        measured = self.exact_by_type.get(kind, [])
        if self.params is None or not measured or not base.is_known:
            return base
        per_param = calibrated_bytes_per_param(measured, self.params)
        if per_param is None:
            return base
        basis = base.basis.split(",")[0] + f", from {len(measured)} measured checkpoints"
        return calibrated_estimate(self.params, per_param, basis)
