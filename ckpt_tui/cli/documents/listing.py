"""`ckpt-tui ls` output: a plain table for people and one JSON document for scripts.

The JSON schema (`ckpt-tui.ls/1`) is described in the README; change it only with a new version.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import BinaryIO, NamedTuple

import msgspec

from ckpt_tui.api_types import encode, format_time
from ckpt_tui.backends import Backend
from ckpt_tui.catalog import CheckpointRow, RowState, RunSummary
from ckpt_tui.catalog.rows import KIND_LABELS
from ckpt_tui.sizes import format_size, format_total, sum_totals
from ckpt_tui.timekeeping.ttl import describe_expiry

SCHEMA = "ckpt-tui.ls/1"


def opt_time(value: datetime | None) -> str | None:
    return None if value is None else format_time(value)


class CheckpointDocument(msgspec.Struct, gc=False):
    """One checkpoint of `ls --json` (fields in document order)."""

    checkpoint_id: str
    name: str
    kind: str
    tinker_path: str
    state: RowState
    step: int | None
    epoch: float | None
    metrics: Mapping[str, float]
    size_bytes: int | None
    size_kind: str
    size_basis: str | None
    created: datetime | None
    expires_at: datetime | None
    public: bool
    final: bool
    best: bool
    resume_point: bool
    rolling: bool
    user_metadata: dict[str, str] | None


class RunDocument(msgspec.Struct, gc=False):
    """One run of `ls --json`."""

    backend: Mapping[str, str]
    """The backend that holds it: name, kind, and url or path."""
    run_id: str
    display_name: str
    base_model: str
    is_lora: bool
    lora_rank: int | None
    log_dir: str | None
    on_server: bool
    checkpoint_count: int
    missing_count: int
    size_bytes: int
    size_is_exact: bool
    size_unknown_count: int
    soonest_expiry: datetime | None
    checkpoints: list[CheckpointDocument]


def row_document(row: CheckpointRow) -> CheckpointDocument:
    # Plain attribute reads rather than the row's properties: this runs 100,000 times.
    size, server = row.size, row.server
    metadata = None if server is None else server.user_metadata
    return CheckpointDocument(
        row.checkpoint_id,
        row.name,
        KIND_LABELS[row.checkpoint_type],
        row.tinker_path,
        row.state,
        row.step,
        row.epoch,
        row.metrics,
        size.bytes,
        size.kind,
        size.basis or None,
        row.created,
        row.expires_at,
        server is not None and server.public,
        row.final,
        metadata is not None and metadata.get("best") == "true",
        row.resume_point,
        row.rolling,
        metadata,
    )


def run_document(run: RunSummary, backend: Mapping[str, str]) -> RunDocument:
    stored, size = run.stored_rows, run.size
    return RunDocument(
        backend,
        run.run_id,
        run.display_name,
        run.base_model,
        run.is_lora,
        run.lora_rank,
        None if run.log_dir is None else str(run.log_dir.path),
        run.server is not None,
        len(stored),
        len(run.rows) - len(stored),
        size.bytes,
        size.is_exact,
        size.unknown_count,
        run.soonest_expiry,
        [row_document(row) for row in run.rows],
    )


class Section(NamedTuple):
    """One backend's part of `ls --json`: its runs (those chosen), as it was loaded."""

    backend: Backend
    described: str
    """Where it was talked to, as start-up settled it (e.g. 'URL (key from $BOX1_KEY)')."""
    runs: Sequence[RunSummary]
    complete: bool
    error: str | None = None


def totals_document(runs: Sequence[RunSummary]) -> dict[str, object]:
    """Counts and size of `runs` (stored checkpoints; missing ones counted apart)."""
    stored = sum(len(run.stored_rows) for run in runs)
    size = sum_totals([run.size for run in runs])
    return {
        "runs": len(runs),
        "checkpoints": stored,
        "missing": sum(len(run.rows) for run in runs) - stored,
        "size_bytes": size.bytes,
        "size_is_exact": size.is_exact,
        "size_unknown_count": size.unknown_count,
    }


def section_document(section: Section) -> dict[str, object]:
    return {
        **section.backend.document(),
        "described": section.described,
        "complete": section.complete,
        "error": section.error,
        "totals": totals_document(section.runs),
    }


def write_ls_json(
    out: BinaryIO, sections: Sequence[Section], problems: Sequence[str], now: datetime
) -> None:
    """Write the whole `ls --json` answer to `out`: every backend's runs, backend by backend.

    `complete` is false when any backend's lists are partial or it could not be read.
    """
    runs = [run for section in sections for run in section.runs]
    head = {
        "schema": SCHEMA,
        "backend": "; ".join(section.described for section in sections),
        "generated_at": format_time(now),
        "complete": all(section.complete for section in sections),
        "totals": totals_document(runs),
        "backends": [section_document(section) for section in sections],
    }
    documents = (
        run_document(run, section.backend.document())
        for section in sections
        for run in section.runs
    )
    write_json(out, head, ("runs", documents), {"problems": list(problems)})


def write_json(
    out: BinaryIO,
    head: Mapping[str, object],
    items: tuple[str, Iterable[object]],
    tail: Mapping[str, object],
    indent: bool | None = None,
) -> None:
    """Write one JSON object: `head`'s fields, the list `items` names, then `tail`'s.

    Indented by 2 for a person (`indent`; by default when `out` is a terminal), else compact:
    a script reads it as fast either way, and indenting 100,000 checkpoints takes as long as
    encoding them and makes 60% more bytes. The list is encoded one item at a time (msgspec),
    so a document of 100,000 checkpoints is never in memory whole.
    """
    if indent is None:
        indent = out.isatty()
    if not indent:
        _write_compact(out, head, items, tail)
        return
    key, values = items
    out.write(b"{")
    for name, value in head.items():
        out.write(b"\n  " + encode(name) + b": " + _indented(value, 1) + b",")
    out.write(b"\n  " + encode(key) + b": [")
    empty = True
    for value in values:
        out.write((b"\n    " if empty else b",\n    ") + _indented(value, 2))
        empty = False
    out.write(b"]" if empty else b"\n  ]")
    for name, value in tail.items():
        out.write(b",\n  " + encode(name) + b": " + _indented(value, 1))
    out.write(b"\n}\n")


def _write_compact(
    out: BinaryIO,
    head: Mapping[str, object],
    items: tuple[str, Iterable[object]],
    tail: Mapping[str, object],
) -> None:
    key, values = items
    start = encode(head)  # '{...}': its fields, then the list's
    out.write(start[:-1] + (b"," if head else b"") + encode(key) + b":[")
    separator = b""
    for value in values:
        out.write(separator + encode(value))
        separator = b","
    out.write(b"]" + (b"," + encode(tail)[1:] if tail else b"}") + b"\n")


def _indented(value: object, level: int) -> bytes:
    """`value` as JSON indented by 2, nested `level` deep (strings hold no raw newlines)."""
    return msgspec.json.format(encode(value), indent=2).replace(b"\n", b"\n" + b"  " * level)


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
