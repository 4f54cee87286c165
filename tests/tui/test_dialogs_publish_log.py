"""The publish question and the session log screen, through a real Textual pilot."""

from __future__ import annotations

import pytest

from ckpt_tui.actions.session_log import SessionLog
from ckpt_tui.tui.screens.publish_dialog import PublishChoice, PublishDialog
from ckpt_tui.tui.screens.session_log_dialog import SessionLogDialog
from tests.support.dialogs import (
    BACKEND,
    NOW,
    WHERE,
    DialogApp,
    public_and_private,
    sample_log,
    screen_text,
)


def publish_app(public: int = 3, private: int = 5) -> DialogApp[PublishChoice | None]:
    return DialogApp(lambda: PublishDialog(public_and_private(public, private), WHERE, NOW))


@pytest.mark.parametrize(
    ("button", "expected"),
    [("#publish", "publish"), ("#unpublish", "unpublish"), ("#cancel", None)],
)
async def test_each_button_returns_its_choice(button: str, expected: str | None) -> None:
    app = publish_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "publish the 5, or unpublish the 3?" in screen_text(app)
        await pilot.click(button)
        await pilot.pause()
    assert app.results == [expected]


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        (("enter",), None),
        (("escape",), None),
        (("n",), None),
        (("y",), "publish"),
        (("u",), "unpublish"),
        (("p", "p", "enter"), None),  # p is no key here: "pp" does not publish
    ],
)
async def test_cancel_is_focused_and_keys_choose(
    keys: tuple[str, ...], expected: str | None
) -> None:
    app = publish_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.focused is not None and app.focused.id == "cancel"
        await pilot.press(*keys)
        await pilot.pause()
    assert app.results == [expected]


async def test_session_log_lists_newest_first_with_failures_literally() -> None:
    app: DialogApp[None] = DialogApp(lambda: SessionLogDialog(sample_log(), NOW))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert text.index("ttl") < text.index("delete") < text.index("publish")
        assert "Deleted 38 of 40; 2 failed" in text
        assert "tinker://run-b/weights/[bold]odd[/bold]  run-b: 404: not found" in text
        assert "409: [conflict] in use" in text
        assert "✓ tinker://run-a/sampler_weights/final  sl/run-a" in text
        assert "on local store /data/ckpts" in text
        assert "23:57:00" in text and "3m ago" in text
        await pilot.press("L")
        await pilot.pause()
    assert app.results == [None]


@pytest.mark.parametrize("key", ["escape", "q"])
async def test_empty_log_says_so_and_closes(key: str) -> None:
    app: DialogApp[None] = DialogApp(lambda: SessionLogDialog(SessionLog(), NOW))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "Nothing has been changed" in screen_text(app)
        await pilot.press(key)
        await pilot.pause()
    assert app.results == [None]


@pytest.mark.parametrize(
    ("public", "private", "title", "heading", "absent"),
    [
        (0, 2, "Publish 2 checkpoints?", "Becomes public:", "Becomes private:"),
        (1, 0, "Unpublish 1 checkpoint?", "Becomes private:", "Becomes public:"),
    ],
)
async def test_one_way_lists_what_changes_names_the_backend_and_y_confirms(
    public: int, private: int, title: str, heading: str, absent: str
) -> None:
    app = publish_app(public, private)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert title in text and heading in text and absent not in text
        assert f"on {BACKEND}" in text
        assert "000000" in text and "y: " in text
        assert app.focused is not None and app.focused.id == "cancel"
        await pilot.press("u" if private else "y")  # u: nothing to unpublish when all private
        await pilot.pause()
        if private:
            assert app.results == []
            await pilot.press("y")
            await pilot.pause()
    assert app.results == ["publish" if private else "unpublish"]
