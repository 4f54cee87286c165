"""The CLI's progress line: what it says, how often it is rewritten, and that it is cleared."""

from __future__ import annotations

import io

from ckpt_tui.cli.download import DownloadLine
from ckpt_tui.cli.progress import CLEAR, ProgressLine, duration, progress_line
from ckpt_tui.client.download import Progress
from ckpt_tui.sizes.size import format_bytes


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


def test_a_download_shows_bytes_and_files_and_its_rate_counts_only_this_runs_bytes() -> None:
    clock, out = Ticks(), io.StringIO()
    mib = 1024 * 1024
    line = ProgressLine("Downloading", 100 * mib, out, clock, amount=format_bytes, already=50 * mib)
    clock.now += 5.0
    line.update(60 * mib, "3/8 files")  # 10 MiB in 5 s: 2 MiB/s, 40 MiB left in 20 s
    assert out.getvalue() == (
        f"{CLEAR}Downloading {format_bytes(60 * mib)}/{format_bytes(100 * mib)} · "
        f"{format_bytes(2 * mib)}/s · 20s left · 3/8 files"
    )


def test_the_download_command_draws_its_progress_on_the_one_progress_line() -> None:
    out = io.StringIO()
    shown = DownloadLine(out)
    shown.update(Progress(total=3000, done=1000, fetched=0, files=3, files_done=1))
    assert isinstance(shown.line, ProgressLine)
    assert out.getvalue().startswith(f"{CLEAR}Downloading ") and "1/3 files" in out.getvalue()
    shown.clear()
    assert out.getvalue().endswith(CLEAR) and shown.line is None
