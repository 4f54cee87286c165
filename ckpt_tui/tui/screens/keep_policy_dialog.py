"""The keep-policy dialog: choose what to keep, see what goes (and why the rest stays), confirm.

The dialog returns a `PolicyOutcome` (delete the plan's rows, or give them a TTL instead) or
None if cancelled; it changes nothing itself. Deleting still goes through the delete dialog,
so its typed-confirmation rule applies to a policy too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar, Literal

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Button, Checkbox, Input, Label, Select, Static

from ckpt_tui.actions.bulk_action import EXPIRE_INSTEAD_SECONDS
from ckpt_tui.catalog import CheckpointRow, RunSummary
from ckpt_tui.catalog.join import metric_choices, metric_keys
from ckpt_tui.policy import Plan, PolicyError, plan
from ckpt_tui.policy.form import (
    FormValues,
    policy_from_form,
    stored_rows,
)
from ckpt_tui.policy.totals import Rates, total_summary
from ckpt_tui.timekeeping.ttl import TtlError, format_duration, parse_ttl
from ckpt_tui.tui.widgets.plan_preview import PlanPreview
from ckpt_tui.tui.widgets.tick_box import TickBox
from ckpt_tui.words import count_of

DEBOUNCE_SECONDS = 0.3
IMMEDIATE_ROWS = 5000
"""Up to this many rows the preview follows every keystroke; above, it waits for a pause."""
DEFAULT_TTL = format_duration(EXPIRE_INSTEAD_SECONDS)
NOTHING_KEPT_WARNING = (
    "⚠ No keep rule besides the protections: every other checkpoint would go. "
    "Fill in Keep last, Keep best, Every or Expiring after."
)


@dataclass(frozen=True)
class PolicyOutcome:
    """What the user chose: delete `plan.to_delete`, or give them `ttl_seconds` instead."""

    plan: Plan
    mode: Literal["delete", "ttl"]
    ttl_seconds: int | None = None


def number_input(field_id: str, placeholder: str) -> Input:
    """A small field for a whole number (digits only)."""
    return Input(
        id=field_id,
        placeholder=placeholder,
        type="integer",
        compact=True,
        classes="kp-number field",
    )


class KeepPolicyDialog(ModalScreen[PolicyOutcome | None]):
    """Plan deletions by a keep policy over `runs` (or, toggled, over `all_runs`)."""

    DEFAULT_CLASSES = "dialog"

    AUTO_FOCUS = "#kp-last"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(
        self,
        runs: Sequence[RunSummary],
        scope_label: str,
        now: datetime,
        rates: Rates,
        *,
        all_runs: Sequence[RunSummary] | None = None,
        describe: Callable[[str | None], str] | None = None,
    ) -> None:
        """`describe`: how a backend is named by its name (None: every backend)."""
        super().__init__()
        self.describe = describe
        self.scope_runs = list(runs)
        self.scope_label = scope_label
        self.all_runs = list(all_runs or ())
        self.can_widen = len(self.all_runs) > len(self.scope_runs)
        self.now = now
        self.rates = rates
        """Each backend's storage rate, by name (one backend: its name alone)."""
        self.rows: list[CheckpointRow] = stored_rows(self.scope_runs)
        self.plan: Plan | None = None
        self.pending: Timer | None = None

    # --- layout ------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Vertical(id="kp-box", classes="dialog-box"):
            with Horizontal(classes="kp-row"):
                # Written whole here, not first on mount: the screen shows what it plans on
                # from its first frame, whenever its mount is handled.
                scope = self.scope_text(len(self.scope_runs), len(self.rows), widened=False)
                yield Static(scope, id="kp-scope")
                if self.can_widen:
                    yield TickBox(f"all {len(self.all_runs)} runs", id="kp-all", compact=True)
            yield from self.compose_form()
            yield Static("", id="kp-error", markup=False)
            yield Static("", id="kp-total", markup=False)
            yield PlanPreview(id="kp-preview")
            with Horizontal(id="kp-buttons", classes="dialog-buttons"):
                yield Button("Delete", variant="error", id="kp-delete", compact=True)
                yield Button("Expire instead", variant="warning", id="kp-expire", compact=True)
                yield Label("time:")
                yield Input(DEFAULT_TTL, id="kp-ttl", compact=True)
            yield Static(
                "tab: next field · space: tick · Delete asks to confirm first · esc: cancel",
                id="kp-hint",
                classes="dialog-hint",
            )

    def compose_form(self) -> ComposeResult:
        with Horizontal(classes="kp-row"):
            yield Label("Keep last")
            yield number_input("kp-last", "M")
            yield Label("· every")
            yield number_input("kp-every", "N")
            yield Label("steps · expiring after")
            yield Input(id="kp-after", placeholder="YYYY-MM-DD", compact=True, classes="field")
        with Horizontal(classes="kp-row"):
            yield Label("Keep best")
            yield number_input("kp-best", "K")
            yield Label("by")
            yield Select[str]([], id="kp-metric", prompt="no metric", compact=True)
            yield TickBox("higher is better", id="kp-higher", compact=True)
        with Horizontal(classes="kp-row"):
            yield Label("Always keep")
            yield TickBox("final", True, id="kp-final", compact=True)
            yield TickBox("best", True, id="kp-flagged-best", compact=True)
            yield TickBox("resume point", True, id="kp-resume", compact=True)
            yield TickBox("published", True, id="kp-published", compact=True)

    def on_mount(self) -> None:
        self.scope_changed()

    # --- reading the form --------------------------------------------------------------------
    def values(self) -> FormValues:
        def text(field: str) -> str:
            return self.query_one(f"#{field}", Input).value

        def ticked(field: str) -> bool:
            return self.query_one(f"#{field}", Checkbox).value

        metric = self.query_one("#kp-metric", Select).selection
        return FormValues(
            keep_final=ticked("kp-final"),
            keep_flagged_best=ticked("kp-flagged-best"),
            keep_resume_point=ticked("kp-resume"),
            keep_published=ticked("kp-published"),
            best=text("kp-best"),
            metric=metric if isinstance(metric, str) else None,
            higher_is_better=ticked("kp-higher"),
            last=text("kp-last"),
            every=text("kp-every"),
            after=text("kp-after"),
        )

    @property
    def widened(self) -> bool:
        return self.can_widen and self.query_one("#kp-all", Checkbox).value

    def ttl_seconds(self) -> int:
        """The TTL typed for "expire instead"; TtlError if it is not a usable one."""
        ttl = parse_ttl(self.query_one("#kp-ttl", Input).value, self.now)
        if ttl.seconds is None:
            raise TtlError("to expire them, give a time such as 1d or 2w (not never)")
        return ttl.seconds

    # --- recomputing -------------------------------------------------------------------------
    def scope_changed(self) -> None:
        """New rows (the all-runs toggle): new metric choices, new scope line, new plan."""
        runs = self.all_runs if self.widened else self.scope_runs
        self.rows = stored_rows(runs)
        self.query_one("#kp-box").border_title = self.title_for(runs)
        scope = self.scope_text(len(runs), len(self.rows), self.widened)
        self.query_one("#kp-scope", Static).update(scope)
        select = self.query_one("#kp-metric", Select)
        current = select.selection
        keys = metric_choices(metric_keys(run.stored_rows) for run in runs)
        select.set_options((key, key) for key in keys)
        if keys:
            select.value = current if current in keys else keys[0]
        self.recompute()

    def scope_text(self, runs: int, stored: int, widened: bool) -> Text:
        """'Runs: sl/llama-8b-tulu3 · 20 stored checkpoints' (or 'all 6 runs · …')."""
        label = f"all {runs} runs" if widened else self.scope_label
        scope = Text("Runs: ", style="bold")
        scope.append(f"{label} · {count_of(stored, 'stored checkpoint')}")
        return scope

    def title_for(self, runs: Sequence[RunSummary]) -> str:
        """'Keep policy on gpu-box (…)': the backends of the runs in scope, not every one."""
        if self.describe is None:
            return "Keep policy"
        names = list(dict.fromkeys(run.backend for run in runs))
        if len(names) > 1:
            return f"Keep policy on {len(names)} backends: {', '.join(names)}"
        try:
            where = self.describe(names[0] if names else None)
        except KeyError:  # rows of a single unnamed backend
            where = self.describe(None)
        return f"Keep policy on {where}"

    def schedule(self) -> None:
        """Recompute now for small scopes; for big ones, once typing pauses."""
        if self.pending is not None:
            self.pending.stop()
            self.pending = None
        if len(self.rows) <= IMMEDIATE_ROWS:
            self.recompute()
        else:
            self.pending = self.set_timer(DEBOUNCE_SECONDS, self.recompute)

    def flush(self) -> None:
        """Bring a waiting recompute forward (a button must act on what the form says now)."""
        if self.pending is not None:
            self.pending.stop()
            self.recompute()

    def recompute(self) -> None:
        self.pending = None
        try:
            policy = policy_from_form(self.values())
        except PolicyError as exc:
            self.plan = None
            self.show_problem(str(exc), warning=False)
        else:
            self.plan = plan(self.rows, policy, self.now)
            self.show_problem("" if policy.selects_something else NOTHING_KEPT_WARNING, True)
        self.show_plan()

    def show_problem(self, message: str, warning: bool) -> None:
        """A field's error (red) or a warning about the policy (yellow); hidden when none."""
        line = self.query_one("#kp-error", Static)
        line.update(message)
        line.set_class(warning, "-warning")
        line.display = bool(message)

    def show_plan(self) -> None:
        the_plan = self.plan
        total = self.query_one("#kp-total", Static)
        total.update("" if the_plan is None else total_summary(the_plan, self.rates))
        total.display = the_plan is not None
        preview = self.query_one("#kp-preview", PlanPreview)
        preview.message = "Fix the field above to see the plan."
        policy = None if the_plan is None else the_plan.policy
        metric = policy.metric if policy and policy.metric else self.shown_metric()
        preview.show(the_plan, metric, self.rates)
        count = 0 if the_plan is None else the_plan.delete_count
        # No "…": it read as a cut label. The hint says the delete dialog confirms.
        self.query_one("#kp-delete", Button).label = f"Delete {count:,}"
        self.query_one("#kp-delete", Button).disabled = count == 0
        self.update_expire(count)

    def shown_metric(self) -> str | None:
        selection = self.query_one("#kp-metric", Select).selection
        return selection if isinstance(selection, str) else None

    def update_expire(self, count: int) -> None:
        button = self.query_one("#kp-expire", Button)
        try:
            seconds = self.ttl_seconds()
        except TtlError:
            button.disabled = True
            button.label = "Expire them in … instead (type a time)"
            return
        button.disabled = count == 0
        button.label = f"Expire them in {format_duration(seconds)} instead"

    # --- events ------------------------------------------------------------------------------
    @on(Input.Changed, ".field")
    @on(Checkbox.Changed, "#kp-final, #kp-flagged-best, #kp-resume, #kp-published, #kp-higher")
    @on(Select.Changed, "#kp-metric")
    def form_changed(self) -> None:
        self.schedule()

    @on(Checkbox.Changed, "#kp-all")
    def scope_toggled(self) -> None:
        self.scope_changed()

    @on(Input.Changed, "#kp-ttl")
    def ttl_changed(self) -> None:
        self.update_expire(0 if self.plan is None else self.plan.delete_count)

    @on(Input.Submitted, "#kp-ttl")
    def ttl_submitted(self) -> None:
        self.expire_pressed()

    @on(Input.Submitted, ".field")
    def field_submitted(self) -> None:
        self.focus_next()

    @on(Button.Pressed, "#kp-delete")
    def delete_pressed(self) -> None:
        self.flush()
        if self.plan is None or not self.plan.delete_count:
            self.app.bell()
            return
        self.dismiss(PolicyOutcome(self.plan, "delete"))

    @on(Button.Pressed, "#kp-expire")
    def expire_pressed(self) -> None:
        self.flush()
        try:
            seconds = self.ttl_seconds()
        except TtlError as exc:
            self.notify(str(exc), severity="warning", markup=False)
            return
        if self.plan is None or not self.plan.delete_count:
            self.app.bell()
            return
        self.dismiss(PolicyOutcome(self.plan, "ttl", seconds))

    def action_cancel(self) -> None:
        self.dismiss(None)
