"""Rows kept from one join for the next: a refresh makes only the rows that changed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ckpt_tui.api_types import Checkpoint, TinkerPath
from ckpt_tui.catalog.row_maker import make_row, parts_of
from ckpt_tui.catalog.rows import NO_ROWS, CheckpointRow, PathIndex, RecordRef
from ckpt_tui.catalog.sizing import RunSizer


class RowCache:
    """Rows of the previous join, reused when their inputs are equal.

    While pages arrive the view is re-joined a few times a second, and a poll re-joins it all
    again; reusing unchanged rows makes that a dictionary lookup per row instead of a new row.
    An estimated size is part of the inputs, since calibration depends on the rest of the run.

    One cache serves one backend: `backend` is the name its rows and runs carry. A cache that
    is not `reused` (a one-shot load: `ls`, `prune`) keeps nothing after a join.
    """

    def __init__(self, backend: str = "", *, reused: bool = True) -> None:
        self.backend = backend
        self.reused = reused
        self._kept = NO_ROWS
        self.deleted_here: set[str] = set()
        """Paths deleted through ckpt-tui, in this session or before (the actions log, read by
        `load_snapshot`): a training log naming one does not make it "missing" (the user
        knows where it went), in this join or any later one."""

    def stored(
        self,
        run_name: str,
        run_id: str,
        checkpoints: Sequence[Checkpoint],
        refs: Mapping[str, RecordRef],
        sizer: RunSizer,
    ) -> list[CheckpointRow]:
        """The rows of one run's checkpoints the server has, in their order: the last join's
        row of each, if it still fits. One call per run, so the loop over 100,000 checkpoints
        a join runs here rather than as 100,000 calls."""
        old, backend = self._kept.mapping().get, self.backend
        rows: list[CheckpointRow] = []
        add = rows.append
        for ckpt in checkpoints:
            key = ckpt.tinker_path
            ref = refs.get(key)
            row = old(key)
            if (
                row is None
                or row.run_name != run_name
                or row.ref != ref
                or (row.server is not ckpt and row.server != ckpt)
                or (ckpt.size_bytes is None and row.size != sizer.size_of(ckpt))
            ):
                if key == f"tinker://{run_id}/{ckpt.checkpoint_id}":  # as expected: no parsing
                    path = (run_id, ckpt.checkpoint_id, key, ckpt.checkpoint_type)
                else:
                    path = parts_of(TinkerPath.parse(key))
                row = make_row(run_name, path, ckpt, ref, sizer.size_of(ckpt), backend)
            add(row)
        return rows

    def missing(self, run_name: str, text: str, ref: RecordRef) -> CheckpointRow:
        """The row of a checkpoint a training log names but the server no longer has."""
        row = self._kept.mapping().get(text)
        if row is None or row.run_name != run_name or row.server is not None or row.ref != ref:
            path = parts_of(TinkerPath.parse(text))
            row = make_row(run_name, path, None, ref, RunSizer.unknown_missing(), self.backend)
        return row

    def keep(self, paths: PathIndex) -> None:
        """Remember this join's rows for the next one, indexed by path now (in the joining
        thread: the next refresh looks its pages up in it as they arrive)."""
        if self.reused:
            paths.mapping()
            self._kept = paths

    def known(self, items: list[Checkpoint]) -> list[Checkpoint]:
        """`items`, each one that equals the checkpoint of the last join's row replaced by it.

        Applied to each page as it arrives, a refresh holds one copy of every unchanged
        checkpoint and frees the page's copies at once, instead of holding 100,000 copies
        until the join drops them (which left that much memory fragmented after a refresh);
        the join then finds them by identity.
        """
        old = self._kept.mapping()
        if not old:
            return items
        get = old.get
        return [
            kept if (row := get(ckpt.tinker_path)) is not None and (kept := row.server) == ckpt
            else ckpt
            for ckpt in items
        ]  # fmt: skip
