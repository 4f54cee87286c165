"""How a download is named and how its progress reads, the same on the terminal and in the
TUI: the folder it goes to by default, and bytes, rate and time left."""

from __future__ import annotations

import time
from collections.abc import Callable

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
