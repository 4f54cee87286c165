"""Set or extend the expiry of some checkpoints: pick a preset or type a TTL, see every result.

The dialog returns a `TtlPlan` (the TTL to send for each checkpoint) or None if cancelled; it
sends nothing itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import ClassVar, Literal

from rich.table import Table
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList, Static

from ckpt_tui.backends.fleet_view import RowKey, row_key
from ckpt_tui.catalog import CheckpointRow
from ckpt_tui.timekeeping.ttl import (
    TtlError,
    describe_expiry,
    expiry_instant,
    extend,
    format_exact,
    parse_ttl,
)

DAY = 86400
PREVIEW_ROWS = 8
"""At most this many checkpoints are listed; the rest are counted ("and 4 more")."""
TTL_FIXED_LINES = 17
"""Lines of the dialog other than listed checkpoints: the list shrinks on short terminals."""


@dataclass(frozen=True)
class TtlChoice:
    """What to do: extend each expiry by `seconds`, or set every TTL to `seconds` (None: never)."""

    label: str
    mode: Literal["extend", "set"]
    seconds: int | None


PRESETS: tuple[TtlChoice, ...] = (
    TtlChoice("Extend by 1 day", "extend", DAY),
    TtlChoice("Extend by 7 days", "extend", 7 * DAY),
    TtlChoice("Extend by 30 days", "extend", 30 * DAY),
    TtlChoice("Expire in 1 hour", "set", 3600),
    TtlChoice("Never expire", "set", None),
)


@dataclass(frozen=True)
class TtlPlan:
    """The TTL to send per row key (None: never expire) and the expiry each one will get."""

    label: str
    ttl_for: dict[RowKey, int | None]
    expires_for: dict[RowKey, datetime | None]


def typed_choice(text: str, now: datetime) -> TtlChoice:
    """A typed TTL ('36h', '2w', '2026-12-03', 'never') as a choice; TtlError says what's wrong."""
    ttl = parse_ttl(text, now)
    if ttl.seconds is None:
        return TtlChoice("Never expire", "set", None)
    instant = expiry_instant(text)
    label = f"Expire at {format_exact(instant)}" if instant else f"Expire in {ttl}"
    return TtlChoice(label, "set", ttl.seconds)


def ttl_seconds_for(row: CheckpointRow, choice: TtlChoice, now: datetime) -> int | None:
    """The TTL to send for one row; extending a never-expiring checkpoint keeps it never."""
    if choice.mode == "set" or choice.seconds is None:
        return choice.seconds
    return extend(row.expires_at, choice.seconds, now).seconds


def make_plan(rows: Sequence[CheckpointRow], choice: TtlChoice, now: datetime) -> TtlPlan:
    """The plan for every stored row (missing ones are skipped); TtlError names a row past 10y."""
    ttl_for: dict[RowKey, int | None] = {}
    expires_for: dict[RowKey, datetime | None] = {}
    for row in rows:
        if row.is_missing:
            continue
        try:
            seconds = ttl_seconds_for(row, choice, now)
        except TtlError as exc:
            raise TtlError(f"{row.name} of {row.run_name}: {exc}") from exc
        key = row_key(row)
        ttl_for[key] = seconds
        expires_for[key] = None if seconds is None else now + timedelta(seconds=seconds)
    return TtlPlan(choice.label, ttl_for, expires_for)


def new_expiry_text(row: CheckpointRow, plan: TtlPlan | None) -> Text:
    if plan is None:
        return Text("-", style="dim")
    key = row_key(row)
    if key not in plan.expires_for:
        return Text("not stored: skipped", style="dim")
    new = plan.expires_for[key]
    if new is None:
        return Text("stays never" if row.expires_at is None else "never", style="bold")
    return Text(format_exact(new), style="bold")


def more_line(shown: int, count: int) -> Text | None:
    """'and 4 more' under a list cut at `shown` of `count` items."""
    return Text(f"and {count - shown:,} more", style="dim") if count > shown else None


def preview_table(
    rows: Sequence[CheckpointRow], plan: TtlPlan | None, now: datetime, limit: int
) -> Table:
    """Name, run, current expiry and new expiry (none yet: '-') of the first `limit` rows."""
    table = Table(box=None, pad_edge=False, show_edge=False, expand=True, header_style="bold")
    table.add_column("Checkpoint", ratio=3, no_wrap=True, overflow="ellipsis")
    table.add_column("Run", ratio=2, no_wrap=True, overflow="ellipsis")
    table.add_column("Kind", no_wrap=True)
    table.add_column("Expires now", no_wrap=True)
    table.add_column("New expiry", no_wrap=True)
    for row in rows[:limit]:
        current = "-" if row.is_missing else describe_expiry(row.expires_at, now)
        cells = map(Text, (row.name, row.run_name, row.kind, current))
        table.add_row(*cells, new_expiry_text(row, plan))
    return table


def plan_summary(rows: Sequence[CheckpointRow], plan: TtlPlan) -> Text:
    """'Extend by 7 days: 13 checkpoints (1 never expires and stays so)'."""
    count = len(plan.ttl_for)
    text = Text(f"{plan.label}: {count} checkpoint{'s' if count != 1 else ''}", style="bold")
    if plan.label.startswith("Extend"):
        staying = sum(1 for row in rows if row_key(row) in plan.ttl_for and row.expires_at is None)
        if staying:
            verbs = "expires and stays" if staying == 1 else "expire and stay"
            text.append(f" ({staying} never {verbs} so)", style="")
    return text


NOTHING_CHOSEN = Text("Nothing chosen yet: type a TTL or 1-5, or press ↓ for the presets")
NOTHING_CHOSEN.stylize("dim")


class TtlDialog(ModalScreen[TtlPlan | None]):
    """Choose a TTL for `rows`: a typed value, or presets 1-5; the preview shows every result.

    Typed text always goes into the box, wherever focus is: a duration typed from the preset
    list must not pick a preset on its first digit. A box holding just a preset's number (1-5)
    means that preset (the list shows the numbers; 1-5 seconds is no valid TTL). Enter and Apply
    apply what the summary and preview show, and nothing while they show nothing.
    """

    DEFAULT_CLASSES = "dialog"

    AUTO_FOCUS = "#ttl-input"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("down", "to_presets(1)", show=False),
        Binding("up", "to_presets(-1)", show=False),
    ]

    def __init__(
        self,
        rows: Sequence[CheckpointRow],
        now: datetime,
        where: str,
        warnings: Sequence[str] = (),
    ) -> None:
        """`where`: 'on BACKEND', a line per backend when the rows span several; `warnings`:
        e.g. a read-only backend's part that is left out."""
        super().__init__()
        self.rows = list(rows)
        self.now = now
        self.where = where
        self.warnings = list(warnings)
        self.use_typed = True
        """Whether the box (else the preset list) is what was last worked on."""
        self.plan: TtlPlan | None = None
        self.limit = PREVIEW_ROWS

    def compose(self) -> ComposeResult:
        count = len(self.rows)
        with Vertical(id="ttl-box", classes="dialog-box"):
            title = f"Set the expiry of {count} checkpoint{'s' if count != 1 else ''}"
            yield Static(Text(title), id="ttl-title", classes="dialog-title")
            yield Static(Text(self.where), id="ttl-backend", classes="dialog-backend")
            for line in self.warnings:
                yield Static(Text(line), classes="warning")
            with Horizontal(id="ttl-choices"):
                prompts = [f"{n}  {preset.label}" for n, preset in enumerate(PRESETS, 1)]
                yield OptionList(*prompts, id="ttl-presets")
                with Vertical(id="ttl-typed"):
                    yield Label("Type how long from now, a date (UTC) or 1-5:")
                    yield Input(
                        placeholder="36h, 2w, 1d12h, 2026-12-03, never",
                        id="ttl-input",
                        select_on_focus=False,  # a key typed on the list adds to the box
                    )
                    yield Label("↑↓: presets · enter: apply · esc: cancel", classes="hint")
            yield Static("", id="ttl-error", markup=False)
            yield Static("", id="ttl-summary")
            yield Static("", id="ttl-preview")
            with Horizontal(id="ttl-buttons", classes="dialog-buttons"):
                yield Button("Cancel", id="ttl-cancel")
                yield Button("Apply", variant="primary", id="ttl-apply")

    def on_mount(self) -> None:
        self.query_one("#ttl-presets", OptionList).highlighted = None
        self.fit_to(self.app.size.height)
        self.refresh_plan()

    def on_resize(self, event: events.Resize) -> None:
        self.fit_to(event.size.height)
        self.refresh_plan()

    def fit_to(self, height: int) -> None:
        fixed = TTL_FIXED_LINES + len(self.warnings) + self.where.count("\n")
        self.limit = max(2, min(PREVIEW_ROWS, height - fixed))

    # --- choosing ----------------------------------------------------------------------------
    def current_choice(self) -> TtlChoice | None:
        """What Apply would apply: the box's value or the highlighted preset; None: nothing yet."""
        if not self.use_typed:
            index = self.query_one("#ttl-presets", OptionList).highlighted
            return None if index is None else PRESETS[index]
        text = self.query_one("#ttl-input", Input).value.strip()
        if not text:
            return None
        preset = preset_number(text)
        return PRESETS[preset] if preset is not None else typed_choice(text, self.now)

    def refresh_plan(self) -> None:
        """Recompute the plan and show it, or show why there is none and disable Apply."""
        error = self.query_one("#ttl-error", Static)
        message = ""
        try:
            choice = self.current_choice()
            self.plan = None if choice is None else make_plan(self.rows, choice, self.now)
        except TtlError as exc:
            self.plan = None
            message = str(exc)
        error.update(message)
        error.display = bool(message)
        self.query_one("#ttl-apply", Button).disabled = self.plan is None
        self.show_preview()

    def show_preview(self) -> None:
        summary = self.query_one("#ttl-summary", Static)
        preview = self.query_one("#ttl-preview", Static)
        summary.display = not self.query_one("#ttl-error", Static).display
        summary.update(NOTHING_CHOSEN if self.plan is None else plan_summary(self.rows, self.plan))
        table = preview_table(self.rows, self.plan, self.now, self.limit)
        more = more_line(min(self.limit, len(self.rows)), len(self.rows))
        preview.update(table if more is None else _stack(table, more))

    def on_key(self, event: events.Key) -> None:
        """A printable key typed outside the box goes into the box (and focus with it)."""
        box = self.query_one("#ttl-input", Input)
        if not event.is_printable or event.character is None or self.focused is box:
            return
        event.stop()
        event.prevent_default()
        box.insert_text_at_cursor(event.character)
        box.focus()
        self.use_typed = True

    def action_to_presets(self, step: int) -> None:
        """Up/down outside the list: move to the presets, highlighting the next one."""
        presets = self.query_one("#ttl-presets", OptionList)
        current = presets.highlighted
        if current is None:
            presets.highlighted = 0 if step > 0 else len(PRESETS) - 1
        else:
            presets.highlighted = max(0, min(len(PRESETS) - 1, current + step))
        presets.focus()
        self.use_typed = False
        self.refresh_plan()

    @on(OptionList.OptionHighlighted, "#ttl-presets")
    def preset_highlighted(self) -> None:
        if self.focused is self.query_one("#ttl-presets", OptionList):
            self.use_typed = False
        self.refresh_plan()

    @on(OptionList.OptionSelected, "#ttl-presets")
    def preset_selected(self) -> None:
        self.use_typed = False
        self.refresh_plan()
        self.apply()

    @on(Input.Changed, "#ttl-input")
    def typed(self, event: Input.Changed) -> None:
        self.use_typed = True
        preset = preset_number(event.value.strip())
        self.query_one("#ttl-presets", OptionList).highlighted = preset
        self.refresh_plan()

    @on(Input.Submitted, "#ttl-input")
    def submitted(self) -> None:
        self.use_typed = True
        self.refresh_plan()
        self.apply()

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """Whichever of the presets and the box has focus is what Apply applies."""
        if event.widget.id == "ttl-presets":
            presets = self.query_one("#ttl-presets", OptionList)
            if presets.highlighted is None:
                presets.highlighted = 0
            self.use_typed = False
        elif event.widget.id == "ttl-input":
            self.use_typed = True
        self.refresh_plan()

    # --- leaving -----------------------------------------------------------------------------
    @on(Button.Pressed, "#ttl-apply")
    def apply(self) -> None:
        if self.plan is None:  # e.g. enter in an empty box: nothing is shown, nothing applies
            self.app.bell()
            return
        self.dismiss(self.plan)

    @on(Button.Pressed, "#ttl-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


def preset_number(text: str) -> int | None:
    """The preset index a box holding just '1'..'5' means, else None."""
    keys = [str(number) for number in range(1, len(PRESETS) + 1)]
    return keys.index(text) if text in keys else None


def _stack(table: Table, more: Text) -> Table:
    """The table with a last line under it (one renderable, so one Static shows both)."""
    outer = Table.grid(expand=True)
    outer.add_row(table)
    outer.add_row(more)
    return outer
