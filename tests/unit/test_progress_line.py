"""The CLI's progress line: what it says, how often it is rewritten, and that it is cleared."""

from __future__ import annotations

import io

from ckpt_tui.cli.download import DownloadLine
from ckpt_tui.cli.progress import CLEAR, ProgressLine, TerminalLine, progress_line
from ckpt_tui.client.download import Progress
from ckpt_tui.timekeeping.rate import RateMeter, duration


class Ticks:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_it_says_done_total_rate_and_time_left() -> None:
    clock, out = Ticks(), io.StringIO()
    line = ProgressLine("Deleting", 1000, out, clock)
    clock.now += 2.0
    line.update(250)
    assert out.getvalue() == f"{CLEAR}Deleting 250/1,000 · 125/s · 6s left"


def test_updates_come_at_most_every_tenth_of_a_second_but_the_last_always() -> None:
    clock, out = Ticks(), io.StringIO()
    line = ProgressLine("Deleting", 3, out, clock)
    line.update(1)
    line.update(2)  # at the same moment: not rewritten
    line.update(3)  # the last: always
    line.finish()
    assert out.getvalue().count(CLEAR) == 3  # two updates and the clearing
    assert "Deleting 2/3" not in out.getvalue() and out.getvalue().endswith(CLEAR)


def test_no_line_off_a_terminal_or_under_json() -> None:
    assert progress_line("Deleting", 5, io.StringIO(), as_json=False) is None


def test_durations_read_as_people_say_them() -> None:
    assert [duration(s) for s in (0.4, 42, 185, 3720)] == ["0s", "42s", "3m05s", "1h02m"]


def test_a_meter_counts_speed_from_where_it_started() -> None:
    clock = Ticks()
    meter = RateMeter(1000, clock, done=600)  # a resumed download: 600 were there already
    assert meter.rate is None and meter.left_text() == ""
    clock.now += 4.0
    meter.update(800)
    assert meter.rate == 50.0 and meter.seconds_left == 4.0
    assert meter.counts() == "800/1,000 · 50/s · 4s left"


def test_the_download_command_draws_its_progress_on_the_one_progress_line() -> None:
    out = io.StringIO()
    shown = DownloadLine(out)
    assert isinstance(shown, TerminalLine)
    shown.update(Progress(total=3000, done=1000, fetched=0, files=3, files_done=1))
    assert out.getvalue().startswith(f"{CLEAR}Downloading ") and "1/3 files" in out.getvalue()
    shown.clear()
    assert out.getvalue().endswith(CLEAR)
