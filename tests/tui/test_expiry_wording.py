"""Expiry times are said as they are: a checkpoint 'in 21h' extended by a day (TTL dialog,
preset 1) expires 'in 1d 21h', in the app's table, its details pane and `ls`; not 'in a day',
as humanize's naturaldelta said of anything from 24 to 47 hours."""

from __future__ import annotations

import asyncio

import pytest

from ckpt_tui.cli import main
from tests.support.demo_fixture import ServedDemo
from tests.support.tui import find, highlight, make_app, screen_text, settle

RUN, NAME = "sl/llama-8b-tulu3", "000100"
HOUR = 3600


async def extend_by_a_day_in_the_app(demo: ServedDemo) -> str:
    """Set one checkpoint to expire in 21 hours, then extend it by a day as a person does
    (`t`, preset 1, enter); the screen after."""
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        row = find(app, RUN, NAME, "state")
        demo.store.set_ttl(row.run_id, row.checkpoint_id, 21 * HOUR)
        await pilot.press("r")
        await settle(pilot)
        await highlight(pilot, app, row)
        assert "in 21h " in screen_text(app)
        await pilot.press("t")
        await pilot.pause()
        await pilot.press("1", "enter")  # preset 1: extend by 1 day
        await settle(pilot)
        stored = demo.store.get_checkpoint(row.run_id, row.checkpoint_id).expires_at
        assert stored is not None and (stored - demo.clock.now()).total_seconds() == 45 * HOUR
        return screen_text(app)


@pytest.mark.usefixtures("quiet_environment")
def test_a_day_more_on_21_hours_reads_1d_21h(
    demo: ServedDemo, capsys: pytest.CaptureFixture[str]
) -> None:
    text = asyncio.run(extend_by_a_day_in_the_app(demo))
    assert "in 1d 21h " in text and "in a day" not in text  # the Expires cell
    assert "UTC (in 1d 21h)" in text  # the details pane

    assert main(["ls", "--url", demo.url, "--log-dir", str(demo.paths.logs), "--run", RUN]) == 0
    lines = capsys.readouterr().out.splitlines()
    [line] = [line for line in lines if line.split()[:3] == [NAME, "state", "100"]]
    assert "in 1d 21h " in line
