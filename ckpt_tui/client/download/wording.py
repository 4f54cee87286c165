"""How a download is named and how its progress reads, the same on the terminal and in the
TUI: the folder it goes to by default, and bytes, rate and time left."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from ckpt_tui.api_types import TinkerPath
from ckpt_tui.client.download.engine import Progress
from ckpt_tui.sizes.size import format_bytes
from ckpt_tui.timekeeping.rate import RateMeter


def folder_name(path: TinkerPath) -> str:
    """`RUN_SEGMENT_NAME`, the folder the official CLI downloads a checkpoint into."""
    segment, name = path.checkpoint_id.split("/", 1)
    return f"{path.run_id}_{segment}_{name}"


def bytes_line(meter: RateMeter) -> str:
    """'1.2 GiB / 2.0 GiB · 45.0 MiB/s · 18s left' (rate and time left once known)."""
    line = f"{format_bytes(meter.done)} / {format_bytes(meter.total)}"
    rate = meter.rate
    if rate is None:
        return line
    return f"{line} · {format_bytes(int(rate))}/s · {meter.left_text()}"


def download_line(progress: Progress, meter: RateMeter) -> str:
    """The whole download: `bytes_line` and '3/8 files'."""
    return f"{bytes_line(meter)} · {progress.files_done}/{progress.files} files"


class ProgressView:
    """A download's progress in words, for the whole and for each file, each rate counted
    from when this view first saw it (bytes a resumed file held before are not speed)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.whole: RateMeter | None = None
        self.files: dict[str, RateMeter] = {}
        self.progress = Progress()

    def update(self, progress: Progress) -> None:
        if progress is not self.progress:  # another download (each has its own Progress)
            self.whole, self.files = None, {}
        if self.whole is None or self.whole.total != progress.total:  # sizes known now
            self.whole = RateMeter(progress.total, self.clock, progress.done)
        self.whole.update(progress.done)
        for name, file in progress.by_file.items():
            meter = self.files.get(name)
            if meter is None:
                meter = self.files[name] = RateMeter(file.size, self.clock, file.done)
            meter.update(file.done)
        self.progress = progress

    def whole_line(self, files: bool = True) -> str:
        """'1.2 GiB / 2.0 GiB · 45.0 MiB/s · 18s left · 3/8 files' (the files' count left out
        where each file shows on its own)."""
        whole = self.whole or RateMeter(0, self.clock)
        return download_line(self.progress, whole) if files else bytes_line(whole)

    def file_lines(self, limit: int) -> list[str]:
        """'model.safetensors  120.0 MiB / 256.0 MiB · 30.0 MiB/s · 4s left' for each file
        in flight (not whole, bytes arriving), at most `limit`."""
        lines = []
        for name, file in self.progress.by_file.items():
            meter = self.files[name]
            if not file.whole and meter.done > meter.done_at_start:
                lines.append(f"{name}  {bytes_line(meter)}")
        return lines[:limit]


class WholeProgress:
    """Several checkpoints downloaded one after another, as one download: bytes done of the
    total over all of them (those finished, the one being fetched, and the rest's sizes as
    the rows know them), the rate counted from the bytes fetched in this run only."""

    def __init__(self, sizes: Sequence[int | None], clock: Callable[[], float] = time.monotonic):
        self.sizes = [size or 0 for size in sizes]
        """Each checkpoint's size as its row knows it (0 where unknown)."""
        self.meter = RateMeter(sum(self.sizes), clock)
        self.index = 0
        """The checkpoint being fetched."""
        self.past_done = self.past_fetched = 0
        """The bytes of the checkpoints before it: held, and fetched in this run."""

    def update(self, progress: Progress) -> None:
        """The checkpoint being fetched reported `progress`."""
        size = progress.total or self.sizes[self.index]
        done = self.past_done + progress.done
        self.meter.total = self.past_done + size + sum(self.sizes[self.index + 1 :])
        self.meter.done_at_start = done - self.past_fetched - progress.fetched
        self.meter.update(done)

    def next(self, last: Progress | None) -> None:
        """The checkpoint being fetched is over (downloaded, failed or stopped), `last` its
        last progress (None: it reported none); the next one starts."""
        if last is not None:
            self.update(last)
            self.past_done += last.done
            self.past_fetched += last.fetched
        self.index = min(self.index + 1, len(self.sizes) - 1)

    def line(self) -> str:
        """'5.3 GiB / 7.4 GiB · 45.0 MiB/s · 48s left' for the whole download."""
        return bytes_line(self.meter)
