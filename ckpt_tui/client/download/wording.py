"""How a download is named and how its progress reads, the same on the terminal and in the
TUI: the folder it goes to by default, and bytes, rate and time left."""

from __future__ import annotations

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
