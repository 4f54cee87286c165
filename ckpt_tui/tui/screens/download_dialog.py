"""Download checkpoints? Where to (each in a folder of its own, named as the official CLI
names it), how much, and which cannot be downloaded from their backend and why, before
anything starts.

Focus opens in the folder box (typed text goes there); enter downloads, esc cancels. Which
checkpoint types each backend signs download URLs for is asked when the dialog opens: a
checkpoint its backend cannot hand out is named with the reason and what would work, and
left out.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from ckpt_tui.api_types import CheckpointType, TinkerPath
from ckpt_tui.catalog import CheckpointRow
from ckpt_tui.client.download import cannot_sign
from ckpt_tui.client.download.wording import folder_name
from ckpt_tui.sizes import format_size, format_total, total
from ckpt_tui.tui.screens.ttl_dialog import PREVIEW_ROWS, more_line
from ckpt_tui.words import count_of

INTO_LABEL = "Into (each checkpoint in a folder of its own, named as the official CLI does):"
SignedTypes = Callable[[str], Awaitable[tuple[CheckpointType, ...]]]
"""A backend's name -> the checkpoint types it signs download URLs for."""


@dataclass(frozen=True)
class DownloadPlan:
    """What the user chose: the folder each checkpoint's own folder goes into, and the rows
    that can be downloaded."""

    parent: Path
    rows: list[CheckpointRow]

    def folder_of(self, row: CheckpointRow) -> Path:
        return self.parent / folder_name(TinkerPath.parse(row.tinker_path))


def target_text(typed: str, row: CheckpointRow) -> str:
    """'./run-1_weights_000500/': where `row` goes under the typed folder, as typed."""
    parent = typed.strip() or "."
    return f"{parent.rstrip('/')}/{folder_name(TinkerPath.parse(row.tinker_path))}/"


def refusals(
    rows: Sequence[CheckpointRow],
    signed: dict[str, tuple[CheckpointType, ...]],
    where: Callable[[str], str],
) -> tuple[list[CheckpointRow], list[str]]:
    """The rows that can be downloaded, and one line per (backend, type) that cannot: why,
    and what would work."""
    fine: list[CheckpointRow] = []
    refused: dict[tuple[str, CheckpointType], list[CheckpointRow]] = {}
    for row in rows:
        if row.checkpoint_type in signed[row.backend]:
            fine.append(row)
        else:
            refused.setdefault((row.backend, row.checkpoint_type), []).append(row)
    lines = []
    for (backend, _), group in refused.items():
        path = TinkerPath.parse(group[0].tinker_path)
        line = f"✗ {cannot_sign(path, where(backend), signed[backend])}."
        if len(group) > 1:
            line += f" ({count_of(len(group) - 1, 'more checkpoint')} of that kind left out.)"
        lines.append(line)
    return fine, lines


class DownloadDialog(ModalScreen[DownloadPlan | None]):
    """Where to download `rows`; a DownloadPlan, or None if cancelled."""

    DEFAULT_CLASSES = "dialog"
    AUTO_FOCUS = "#download-into"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(
        self,
        rows: Sequence[CheckpointRow],
        where: str,
        signed_types: SignedTypes,
        describe: Callable[[str], str],
        into: str = ".",
    ) -> None:
        """`where`: 'from BACKEND' (a line per backend); `describe`: a backend's name as
        the reasons name it."""
        super().__init__()
        self.rows = list(rows)
        self.where = where
        self.signed_types = signed_types
        self.describe = describe
        self.into = into
        self.ready: list[CheckpointRow] | None = None
        """The rows that can be downloaded; None until every backend has said what it signs."""

    def compose(self) -> ComposeResult:
        count = count_of(len(self.rows), "checkpoint")
        with Vertical(id="download-box", classes="dialog-box"):
            yield Static(Text(f"Download {count}?"), classes="dialog-title")
            yield Static(Text(self.where), classes="dialog-backend")
            yield Label(
                "Into (each checkpoint in a folder of its own, named as the official CLI does):"
            )
            yield Input(self.into, id="download-into")
            yield Static("", id="download-targets")
            yield Static(
                Text("Asking each backend what it can hand out…"),
                id="download-refused",
                classes="warning",
            )
            with Horizontal(classes="dialog-buttons"):
                yield Button("Cancel", id="download-cancel")
                yield Button("Download", variant="primary", id="download-go", disabled=True)
            yield Static(Text("enter: download · esc: cancel"), classes="dialog-hint")

    def on_mount(self) -> None:
        self.show_targets()
        self.check()

    @work(exclusive=True, group="download-check")
    async def check(self) -> None:
        """Ask each backend which types it signs (its health check; once per backend)."""
        signed = {
            name: await self.signed_types(name) for name in {row.backend for row in self.rows}
        }
        self.ready, lines = refusals(self.rows, signed, self.describe)
        self.query_one("#download-refused", Static).update(Text("\n".join(lines)))
        self.query_one("#download-refused").display = bool(lines)
        go = self.query_one("#download-go", Button)
        go.disabled = not self.ready
        go.label = f"Download {len(self.ready):,}" if self.ready else "Nothing to download"
        self.show_targets()

    @on(Input.Changed, "#download-into")
    def show_targets(self) -> None:
        """Where each one goes, as typed so far, and the total of what goes."""
        typed = self.query_one("#download-into", Input).value
        rows = self.rows if self.ready is None else self.ready
        self.query_one("#download-targets").display = bool(rows)
        text = Text()
        for row in rows[:PREVIEW_ROWS]:
            text.append(f"→ {target_text(typed, row)}  ")
            text.append(format_size(row.size, short=True), style="dim")
            text.append("\n")
        more = more_line(min(PREVIEW_ROWS, len(rows)), len(rows))
        if more is not None:
            text.append_text(more)
            text.append("\n")
        text.append(f"Total: {count_of(len(rows), 'checkpoint')} · ")
        text.append(format_total(total(row.size for row in rows)), style="bold")
        self.query_one("#download-targets", Static).update(text)

    @on(Input.Submitted, "#download-into")
    def submitted(self) -> None:
        self.confirm()

    def confirm(self) -> None:
        if not self.ready:  # still asking, or nothing can be downloaded: stay
            return
        typed = self.query_one("#download-into", Input).value.strip() or "."
        self.dismiss(DownloadPlan(Path(typed).expanduser(), self.ready))

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "download-go":
            self.confirm()
        else:
            self.dismiss(None)
