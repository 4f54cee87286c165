"""Sizes of one run's checkpoints: the server's exact bytes, else a calibrated estimate."""

from __future__ import annotations

from collections.abc import Sequence

from ckpt_tui.api_types import Checkpoint, CheckpointType, WeightsInfo
from ckpt_tui.sizes import (
    Size,
    calibrated_bytes_per_param,
    calibrated_estimate,
    checkpoint_param_count,
    estimate_checkpoint_size,
)


class RunSizer:
    """Gives every checkpoint of one run a size, exact where the server knows it.

    Where checkpoints of the same run and type have exact sizes, their measured bytes per
    parameter replace the dtype assumption: that is the best evidence there is.
    """

    def __init__(self, info: WeightsInfo | None, checkpoints: Sequence[Checkpoint]) -> None:
        self.info = info
        self.params = None if info is None else checkpoint_param_count(info)
        self.exact_by_type: dict[CheckpointType, list[int]] = {}
        for ckpt in checkpoints:
            if ckpt.size_bytes is not None:
                self.exact_by_type.setdefault(ckpt.checkpoint_type, []).append(ckpt.size_bytes)

    def size_of(self, ckpt: Checkpoint) -> Size:
        if ckpt.size_bytes is not None:
            return Size.exact(ckpt.size_bytes)
        if self.info is None:
            return Size.unknown("the server gave no size and the run's model is not known")
        return self.estimate(ckpt.checkpoint_type)

    @staticmethod
    def unknown_missing() -> Size:
        return Size.unknown("no longer stored (deleted or expired)")

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
