"""`k` in the real app against a real server holding the demo: plan, confirm, check the server."""

from __future__ import annotations

from datetime import timedelta

import pytest
from textual.pilot import Pilot
from textual.widgets import Button, Checkbox, Input, Static

from ckpt_tui.backends.fleet_view import row_key, run_key
from ckpt_tui.catalog import RunSummary
from ckpt_tui.cli import main
from ckpt_tui.policy import KeepPolicy, Plan, plan
from ckpt_tui.store import Store
from ckpt_tui.tui.app import CkptApp
from ckpt_tui.tui.screens.browse_screen import BrowseScreen
from ckpt_tui.tui.screens.delete_dialog import DeleteDialog
from ckpt_tui.tui.screens.keep_policy_dialog import KeepPolicyDialog
from ckpt_tui.tui.widgets.plan_preview import PlanPreview
from tests.support.demo_fixture import ServedDemo
from tests.support.dialogs import shown_text
from tests.support.tui import checkpoints, make_app, runs, screen_of, settle

SFT = "sl/llama-8b-tulu3"


def live(store: Store) -> dict[str, object]:
    """Every stored checkpoint by tinker path."""
    return {c.tinker_path: c for c in store.list_checkpoints(0, 10_000)[0]}


def browse_screen(app: CkptApp) -> BrowseScreen:
    """The browse screen, also while a dialog is open over it."""
    return next(screen for screen in app.screen_stack if isinstance(screen, BrowseScreen))


def run_named(app: CkptApp, name: str) -> RunSummary:
    catalog = browse_screen(app).catalog
    assert catalog is not None
    return next(run for run in catalog.runs if run.display_name == name)


def expected_plan(app: CkptApp, last: int) -> Plan:
    """What `ckpt-tui prune --run SFT --keep-last N` plans: the engine on the same rows."""
    return plan(run_named(app, SFT).stored_rows, KeepPolicy(keep_last=last), app.clock.now())


async def keep_policy(pilot: Pilot[None], app: CkptApp) -> None:
    """Run the `k` command (as the palette does: the focused table takes the k key itself)."""
    await screen_of(app).run_action("keep_policy")
    await pilot.pause()


async def open_policy(pilot: Pilot[None], app: CkptApp, run: str = SFT) -> KeepPolicyDialog:
    """Highlight `run` in the by-run view and run `k`; the dialog is open on return."""
    assert runs(app).move_cursor_to_key(run_key(run_named(app, run)))
    await settle(pilot)
    await keep_policy(pilot, app)
    dialog = app.screen
    assert isinstance(dialog, KeepPolicyDialog)
    return dialog


async def keep_last(pilot: Pilot[None], dialog: KeepPolicyDialog, count: int) -> None:
    dialog.query_one("#kp-last", Input).value = str(count)
    await pilot.pause()


def text_of(dialog: KeepPolicyDialog, selector: str) -> str:
    return shown_text(dialog.query_one(selector, Static))


async def test_preview_matches_the_engine_on_the_demo(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock, storage_rate=0.1)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        dialog = await open_policy(pilot, app)
        await keep_last(pilot, dialog, 2)
        expected = expected_plan(app, 2)
        assert (expected.delete_count, len(expected.decisions)) == (16, 20)
        total = text_of(dialog, "#kp-total")
        assert total.startswith("Total: delete 16 of 20 in 1 run · frees 10.5 GiB")
        assert "saves $1.05/mo" in total  # 10.5 GiB at $0.10 per GiB-month
        lines = dialog.query_one(PlanPreview).all_lines(116)
        assert lines[1] == f"{SFT}  delete 16 of 20 · frees 10.5 GiB · saves $1.05/mo"
        deleted = [line.split()[0:2] for line in lines[2:] if line.endswith(" delete")]
        assert deleted == [[row.name, row.kind] for row in expected.to_delete]
        assert "Runs: sl/llama-8b-tulu3 · 20 stored checkpoints" in text_of(dialog, "#kp-scope")
        await pilot.press("escape")
        await settle(pilot)


async def test_confirming_deletes_exactly_the_plan_after_the_typed_word(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        before = set(live(demo.store))
        dialog = await open_policy(pilot, app)
        await keep_last(pilot, dialog, 2)
        doomed = {row.tinker_path for row in expected_plan(app, 2).to_delete}
        await pilot.click("#kp-delete")
        await pilot.pause()
        assert isinstance(app.screen, DeleteDialog)
        await pilot.press("tab", "y")  # on the buttons, y alone is not enough: 16 > 10
        await pilot.pause()
        assert isinstance(app.screen, DeleteDialog) and set(live(demo.store)) == before
        await pilot.press(*"delete", "enter")
        await settle(pilot)
        assert set(live(demo.store)) == before - doomed
        assert app.session_log.entries[-1].summary == "Deleted 16 of 16 · delete (keep policy)"


async def test_expire_instead_sets_the_ttl_on_the_plan(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        before = live(demo.store)
        dialog = await open_policy(pilot, app)
        await keep_last(pilot, dialog, 3)
        doomed = {row.tinker_path for row in expected_plan(app, 3).to_delete}
        dialog.query_one("#kp-ttl", Input).value = "3d"
        await pilot.pause()
        await pilot.click("#kp-expire")
        await settle(pilot)
        after = demo.store.list_checkpoints(0, 10_000)[0]
        assert {c.tinker_path for c in after} == set(before)  # nothing deleted
        soon = demo.clock.now() + timedelta(days=3)
        for ckpt in after:
            if ckpt.tinker_path in doomed:
                assert ckpt.expires_at == soon
            else:
                assert ckpt == before[ckpt.tinker_path]


@pytest.mark.parametrize("where", ["policy", "delete"])
async def test_cancel_changes_nothing(demo: ServedDemo, where: str) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        before = live(demo.store)
        dialog = await open_policy(pilot, app)
        await keep_last(pilot, dialog, 1)
        if where == "delete":
            await pilot.click("#kp-delete")
            await pilot.pause()
            assert isinstance(app.screen, DeleteDialog)
        await pilot.press("escape")
        await settle(pilot)
        assert live(demo.store) == before
        assert app.session_log.entries == []


async def test_marked_checkpoints_scope_their_runs(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock, storage_rate=0.1)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        marked = [run_named(app, name).stored_rows[0] for name in (SFT, "rl/qwen3-8b-math")]
        checkpoints(app).set_marks([row_key(row) for row in marked])
        await pilot.pause()
        assert screen_of(app).marked.endswith("/mo")  # the marked set's cost
        await keep_policy(pilot, app)
        dialog = app.screen
        assert isinstance(dialog, KeepPolicyDialog)
        scope = text_of(dialog, "#kp-scope")
        assert "the 2 runs holding the 2 marked checkpoints · 31 stored checkpoints" in scope
        dialog.query_one("#kp-all", Checkbox).value = True
        await pilot.pause()
        catalog = browse_screen(app).catalog
        assert catalog is not None
        stored = sum(len(run.stored_rows) for run in catalog.runs)
        assert f"all 6 runs · {stored} stored checkpoints" in text_of(dialog, "#kp-scope")
        await pilot.press("escape")
        await settle(pilot)


async def test_header_shows_the_monthly_cost_only_with_a_rate(demo: ServedDemo) -> None:
    for rate, wanted in ((0.1, True), (None, False)):
        app = make_app(demo.url, demo.paths.logs, demo.clock, storage_rate=rate)
        async with app.run_test(size=(120, 36)) as pilot:
            await settle(pilot)
            header = shown_text(screen_of(app).query_one("#header-line", Static))
            assert ("/mo)" in header) is wanted
            assert ("$" in screen_of(app).marked) is False  # nothing marked


async def test_readonly_refuses_the_keep_policy(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock, readonly=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("K")
        await settle(pilot)
        assert not isinstance(app.screen, KeepPolicyDialog)
        messages = [n.message for n in app._notifications]
        assert any("Read-only mode: applying a keep policy is off" in m for m in messages)


async def test_a_policy_keeping_everything_cannot_be_confirmed(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        dialog = await open_policy(pilot, app)
        await keep_last(pilot, dialog, 50)
        assert dialog.query_one("#kp-delete", Button).disabled
        assert dialog.query_one("#kp-expire", Button).disabled
        await pilot.press("enter")  # on the Last field: moves on, never confirms
        await pilot.pause()
        assert isinstance(app.screen, KeepPolicyDialog)
        await pilot.press("escape")
        await settle(pilot)


async def test_shift_k_opens_the_dialog_and_k_still_moves_up(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("j", "k")
        assert isinstance(app.screen, BrowseScreen) and checkpoints(app).cursor_row == 0
        await pilot.press("K")
        await pilot.pause()
        assert isinstance(app.screen, KeepPolicyDialog)
        box = app.screen.query_one("#kp-box")
        assert box.border_title == f"Keep policy on {app.describe_backend()}"
        assert demo.url.removeprefix("http://") in app.describe_backend()


@pytest.mark.parametrize(
    ("flag", "env", "message"),
    [
        (["--storage-rate", "abc"], None, "--storage-rate must be a number of USD per GiB-month"),
        ([], "-1", "$CKPT_TUI_STORAGE_RATE must be a finite number of at least 0"),
    ],
)
def test_a_bad_storage_rate_is_refused_before_opening(
    flag: list[str],
    env: str | None,
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if env is None:
        monkeypatch.delenv("CKPT_TUI_STORAGE_RATE", raising=False)
    else:
        monkeypatch.setenv("CKPT_TUI_STORAGE_RATE", env)
    assert main(["--url", "http://127.0.0.1:9", *flag]) == 2
    assert message in capsys.readouterr().err
