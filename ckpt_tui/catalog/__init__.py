"""The joined view: server runs and checkpoints joined with training-log records."""

from ckpt_tui.catalog.join import Catalog, build_catalog
from ckpt_tui.catalog.rows import (
    CheckpointRow,
    RowState,
    RunSummary,
    soonest_expiry,
    stored_only,
)

__all__ = [
    "Catalog",
    "CheckpointRow",
    "RowState",
    "RunSummary",
    "build_catalog",
    "soonest_expiry",
    "stored_only",
]
