"""The keep-policy dialog on its own: the form, the live preview, the outcome it returns."""

from __future__ import annotations

import pytest
from textual.pilot import Pilot
from textual.widgets import Button, Checkbox, Input, Select

from ckpt_tui.catalog import CheckpointRow
from ckpt_tui.catalog.join import metric_choices
from ckpt_tui.policy import KeepPolicy, PolicyError, plan
from ckpt_tui.policy.form import FormValues, policy_from_form
from ckpt_tui.policy.totals import run_summary, total_summary
from ckpt_tui.tui.screens.keep_policy_dialog import KeepPolicyDialog, PolicyOutcome
from ckpt_tui.tui.widgets.plan_preview import PlanPreview
from tests.support.dialogs import NOW, DialogApp, static_text
from tests.support.keep_policy_dialog import dialog_app, policy_runs


def preview(app: DialogApp[PolicyOutcome | None]) -> list[str]:
    return app.screen.query_one(PlanPreview).all_lines(100)


async def opened(pilot: Pilot[None]) -> None:
    for _ in range(50):
        if isinstance(pilot.app.screen, KeepPolicyDialog):
            break
        await pilot.pause()
    await pilot.pause()


# --- the form, without widgets ----------------------------------------------------------------
def test_form_values_make_the_policy() -> None:
    values = FormValues(best="2", metric="eval_loss", last="3", every="200", after="2025-02-01")
    policy = policy_from_form(values)
    assert (policy.keep_best, policy.metric, policy.keep_last, policy.keep_every) == (
        2,
        "eval_loss",
        3,
        200,
    )
    assert policy.keep_expiring_after is not None
    assert policy.keep_expiring_after.date().isoformat() == "2025-02-01"
    assert policy_from_form(FormValues(metric="eval_loss")).metric is None  # no K: unused


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (FormValues(last="0"), "Keep last: give a whole number of at least 1"),
        (FormValues(every="-3"), "Every: give a whole number of at least 1"),
        (FormValues(best="2"), "Keep best: no checkpoint here has a metric"),
        (FormValues(after="next week"), "Expiring after: expected a date like 2026-12-31"),
    ],
)
def test_form_mistakes_name_the_field(values: FormValues, message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        policy_from_form(values)


def test_metric_choices_put_the_most_common_first_key_first() -> None:
    runs = [["reward", "eval_loss"], ["eval_loss"], [], ["eval_loss", "step", "reward"]]
    assert metric_choices(runs) == ["eval_loss", "reward", "step"]


def test_summaries_count_free_and_price() -> None:
    the_plan = plan(policy_runs()[0].rows, KeepPolicy(keep_last=2), NOW)
    run = the_plan.runs[0]
    assert run_summary(run, {"": None}) == "delete 8 of 12 · frees 5.0 GiB"
    assert run_summary(run, {"": 0.1}) == "delete 8 of 12 · frees 5.0 GiB · saves $0.50/mo"
    assert total_summary(the_plan, {"": None}) == (
        "Total: delete 8 of 12 in 1 run · frees 5.0 GiB · keeps 4 (2.5 GiB)"
    )


def paths(rows: list[CheckpointRow]) -> list[str]:
    return [row.tinker_path for row in rows]


# --- the dialog -------------------------------------------------------------------------------
async def test_typing_updates_the_preview_and_delete_returns_the_plan() -> None:
    app = dialog_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await opened(pilot)
        assert app.focused is not None and app.focused.id == "kp-last"
        await pilot.press("2")
        await pilot.pause()
        expected = plan(policy_runs()[0].rows, KeepPolicy(keep_last=2), NOW)
        assert static_text(app, "#kp-total").startswith("Total: delete 8 of 12 in 1 run")
        lines = preview(app)
        assert lines[1] == "run-a  delete 8 of 12 · frees 5.0 GiB"
        assert sum(line.endswith(" delete") for line in lines) == 8
        assert any(line.endswith("keep: final, last 2") for line in lines)
        assert str(app.screen.query_one("#kp-delete", Button).label) == "Delete 8"
        await pilot.click("#kp-delete")
        await pilot.pause()
    [outcome] = app.results
    assert outcome is not None and outcome.mode == "delete"
    assert paths(outcome.plan.to_delete) == paths(expected.to_delete)


async def test_best_k_by_the_chosen_metric_and_direction() -> None:
    app = dialog_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await opened(pilot)
        app.screen.query_one("#kp-best", Input).value = "1"
        await pilot.pause()
        lines = preview(app)
        assert sum("best 1 by eval_loss" in line for line in lines) == 2  # state and sampler
        assert any(" 400 " in line and "best 1" in line for line in lines)  # loss 0.9
        app.screen.query_one("#kp-metric", Select).value = "reward"
        app.screen.query_one("#kp-higher", Checkbox).value = True
        await pilot.pause()
        lines = preview(app)
        assert any(" 400 " in line and "best 1 by reward" in line for line in lines)
        app.screen.query_one("#kp-higher", Checkbox).value = False
        await pilot.pause()
        assert any(" 100 " in line and "best 1 by reward" in line for line in preview(app))


async def test_a_bad_field_shows_its_error_and_disables_both_buttons() -> None:
    app = dialog_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await opened(pilot)
        app.screen.query_one("#kp-after", Input).value = "soon"
        await pilot.pause()
        assert "Expiring after: expected a date" in static_text(app, "#kp-error")
        assert app.screen.query_one("#kp-delete", Button).disabled
        assert app.screen.query_one("#kp-expire", Button).disabled
        await pilot.press("escape")
        await pilot.pause()
    assert app.results == [None]


async def test_a_policy_that_deletes_nothing_disables_both_buttons() -> None:
    app = dialog_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await opened(pilot)
        await pilot.press("9")  # keep the last 9 of each kind: all 6 saves
        await pilot.pause()
        assert static_text(app, "#kp-total").startswith("Total: delete 0 of 12")
        assert app.screen.query_one("#kp-delete", Button).disabled
        assert app.screen.query_one("#kp-expire", Button).disabled


async def test_no_keep_rule_warns_that_everything_else_goes() -> None:
    app = dialog_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await opened(pilot)
        assert "No keep rule besides the protections" in static_text(app, "#kp-error")
        assert static_text(app, "#kp-total").startswith("Total: delete 10 of 12")


async def test_all_runs_toggle_widens_the_scope() -> None:
    app = dialog_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await opened(pilot)
        await pilot.press("1")
        app.screen.query_one("#kp-all", Checkbox).value = True
        await pilot.pause()
        assert "all 2 runs · 15 stored checkpoints" in static_text(app, "#kp-scope")
        total = static_text(app, "#kp-total")
        assert total.startswith("Total: delete 11 of 15 in 2 runs")  # run-b keeps last + public
        assert any(line.startswith("run-b  delete 1 of 3") for line in preview(app))


async def test_expire_instead_returns_the_typed_ttl() -> None:
    app = dialog_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await opened(pilot)
        await pilot.press("3")
        ttl = app.screen.query_one("#kp-ttl", Input)
        ttl.value = "5m"
        await pilot.pause()
        assert app.screen.query_one("#kp-expire", Button).disabled  # below the 1-hour floor
        ttl.value = "2w"
        await pilot.pause()
        button = app.screen.query_one("#kp-expire", Button)
        assert str(button.label) == "Expire them in 2w instead" and not button.disabled
        await pilot.click("#kp-expire")
        await pilot.pause()
    [outcome] = app.results
    assert outcome is not None and outcome.mode == "ttl"
    assert outcome.ttl_seconds == 14 * 86400 and outcome.plan.delete_count == 6


async def test_costs_show_only_with_a_rate() -> None:
    app = dialog_app(rate=0.2)
    async with app.run_test(size=(120, 36)) as pilot:
        await opened(pilot)
        await pilot.press("2")
        await pilot.pause()
        assert "saves $1.00/mo" in static_text(app, "#kp-total")
        assert preview(app)[1].endswith("saves $1.00/mo")
    app = dialog_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await opened(pilot)
        await pilot.press("2")
        await pilot.pause()
        assert "$" not in static_text(app, "#kp-total") + "".join(preview(app))


async def test_without_other_runs_there_is_no_toggle() -> None:
    app = dialog_app(widen=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await opened(pilot)
        assert not app.screen.query("#kp-all")
