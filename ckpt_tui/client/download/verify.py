"""A downloaded file is whole before it is renamed: its length, and for a safetensors file,
a header that parses and data that fits."""

from __future__ import annotations

import os
from pathlib import Path

from ckpt_tui.sizes.safetensors_header import SafetensorsHeaderError, read_header_from


class VerifyError(Exception):
    """A downloaded file is not what the server said it is; its `.part` file is kept."""


def verify_part(part: Path, name: str, expected_size: int) -> None:
    """VerifyError unless `part` holds `expected_size` bytes and, for `*.safetensors`, a
    header that parses and tensor data that fills the file exactly."""
    with open(part, "rb") as stream:
        size = os.fstat(stream.fileno()).st_size
        if size != expected_size:
            raise VerifyError(
                f"{name}: {size} bytes downloaded, the server said {expected_size}; "
                f"{part.name} is kept: run the download again to resume it"
            )
        if name.endswith(".safetensors"):
            try:
                read_header_from(stream, size, name)
            except SafetensorsHeaderError as exc:
                raise VerifyError(f"{exc}; {part.name} is kept for inspection") from exc
