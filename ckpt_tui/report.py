"""`ckpt-tui ls` output: a plain table for people and one JSON document for scripts.

The JSON schema (`ckpt-tui.ls/1`) is described in the README; change it only with a new version.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ckpt_tui.api_types import format_time
from ckpt_tui.catalog import CheckpointRow, RunSummary
from ckpt_tui.sizes import format_size, format_total, total
from ckpt_tui.ttl import describe_expiry

SCHEMA = "ckpt-tui.ls/1"


def opt_time(value: datetime | None) -> str | None:
    return None if value is None else format_time(value)


def row_document(row: CheckpointRow) -> dict[str, Any]:
    return {
        "checkpoint_id": row.checkpoint_id,
        "name": row.name,
        "kind": row.kind,
        "tinker_path": row.tinker_path,
        "state": row.state.value,
        "step": row.step,
        "epoch": row.epoch,
        "metrics": dict(row.metrics),
        "size_bytes": row.size.bytes,
        "size_kind": row.size.kind,
        "size_basis": row.size.basis or None,
        "created": opt_time(row.created),
        "expires_at": opt_time(row.expires_at),
        "public": row.public,
        "final": row.final,
        "best": row.best,
        "resume_point": row.resume_point,
        "rolling": row.rolling,
        "user_metadata": None if row.server is None else row.server.user_metadata,
    }


def run_document(run: RunSummary) -> dict[str, Any]:
    size = run.size
    return {
        "run_id": run.run_id,
        "display_name": run.display_name,
        "base_model": run.base_model,
        "is_lora": run.is_lora,
        "lora_rank": run.lora_rank,
        "log_dir": None if run.log_dir is None else str(run.log_dir.path),
        "on_server": run.server is not None,
        "checkpoint_count": len(run.stored_rows),
        "missing_count": run.missing_count,
        "size_bytes": size.bytes,
        "size_is_exact": size.is_exact,
        "size_unknown_count": size.unknown_count,
        "soonest_expiry": opt_time(run.soonest_expiry),
        "checkpoints": [row_document(row) for row in run.rows],
    }


def ls_document(
    backend: str,
    runs: Sequence[RunSummary],
    problems: Sequence[str],
    now: datetime,
    complete: bool = True,
) -> dict[str, Any]:
    """The whole `ls --json` answer; `complete` False when the server's lists are partial."""
    stored = [row for run in runs for row in run.stored_rows]
    size = total(row.size for row in stored)
    return {
        "schema": SCHEMA,
        "backend": backend,
        "generated_at": format_time(now),
        "complete": complete,
        "totals": {
            "runs": len(runs),
            "checkpoints": len(stored),
            "missing": sum(run.missing_count for run in runs),
            "size_bytes": size.bytes,
            "size_is_exact": size.is_exact,
            "size_unknown_count": size.unknown_count,
        },
        "runs": [run_document(run) for run in runs],
        "problems": list(problems),
    }


RUN_COLUMNS = ("RUN", "BASE MODEL", "CKPTS", "SIZE", "NEXT EXPIRY")
ROW_COLUMNS = ("  NAME", "KIND", "STEP", "SIZE", "EXPIRES", "PUBLIC", "STATE", "FLAGS")


def table_lines(runs: Sequence[RunSummary], now: datetime) -> list[str]:
    """Runs, each followed by its checkpoints, in aligned columns."""
    lines: list[str] = []
    for run in runs:
        run_cells = [
            run.display_name,
            f"{run.base_model}" + (f" (LoRA r{run.lora_rank})" if run.lora_rank else ""),
            str(len(run.stored_rows)),
            format_total(run.size),
            describe_expiry(run.soonest_expiry, now) if run.soonest_expiry else "-",
        ]
        row_cells = [row_cells_of(row, now) for row in run.rows]
        lines.extend(aligned([list(RUN_COLUMNS), run_cells]))
        lines.extend(aligned([list(ROW_COLUMNS), *row_cells]))
        lines.append("")
    return lines


def row_cells_of(row: CheckpointRow, now: datetime) -> list[str]:
    expires = "-" if row.is_missing else describe_expiry(row.expires_at, now)
    return [
        f"  {row.name}",
        row.kind,
        "" if row.step is None else str(row.step),
        "-" if row.is_missing else format_size(row.size),
        expires,
        "yes" if row.public else "no",
        row.state.value,
        ",".join(word for word in row.flags() if word not in ("public", row.state.value)),
    ]


def aligned(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
