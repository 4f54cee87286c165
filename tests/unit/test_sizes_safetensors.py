"""safetensors headers: real files written with the safetensors package, and hostile ones."""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO, cast

import pytest
import safetensors

from ckpt_tui.sizes import (
    MAX_HEADER_BYTES,
    SafetensorsHeaderError,
    read_header_from,
    read_safetensors_header,
    summarize_folder,
)
from tests.support.safetensors_files import write_real

deserialize: Callable[[bytes], list[Any]] = safetensors.deserialize


def write_raw(path: Path, header: object, data: bytes = b"", length: int | None = None) -> Path:
    """Write the format by hand: 8-byte length, JSON header, data."""
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    n = len(raw) if length is None else length
    path.write_bytes(struct.pack("<Q", n) + raw + data)
    return path


class CountingReader(io.RawIOBase):
    """A real file, counting every byte handed out."""

    def __init__(self, path: Path) -> None:
        self._file = open(path, "rb", buffering=0)  # noqa: SIM115 - closed in close()
        self.bytes_read = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = self._file.readinto(buffer) or 0
        self.bytes_read += n
        return n

    def close(self) -> None:
        self._file.close()
        super().close()


def read_counting(path: Path) -> tuple[int, Exception | None]:
    reader = CountingReader(path)
    error: Exception | None = None
    try:
        read_header_from(cast(BinaryIO, reader), path.stat().st_size, path)
    except SafetensorsHeaderError as exc:
        error = exc
    finally:
        reader.close()
    return reader.bytes_read, error


def header_length(path: Path) -> int:
    return int(struct.unpack("<Q", path.read_bytes()[:8])[0])


def test_real_file_summary(tmp_path: Path) -> None:
    path = write_real(
        tmp_path / "m.safetensors",
        {"a": ("F32", [4, 8]), "b": ("BF16", [16]), "c": ("I64", [2, 3]), "empty": ("F32", [0, 5])},
    )
    summary = read_safetensors_header(path)
    assert summary.param_count == 32 + 16 + 6
    assert summary.bytes_by_dtype == {"F32": 128, "BF16": 32, "I64": 48}
    assert summary.params_by_dtype == {"F32": 32, "BF16": 16, "I64": 6}
    assert summary.tensor_bytes == 208
    assert summary.file_bytes == path.stat().st_size
    assert summary.tensor_names == {"a", "b", "c", "empty"}
    assert len(deserialize(path.read_bytes())) == 4  # the fixture is a real file


def test_reader_reads_only_the_header(tmp_path: Path) -> None:
    path = write_real(tmp_path / "big.safetensors", {"w": ("F32", [256, 1024])})
    count, error = read_counting(path)
    assert error is None
    assert count == 8 + header_length(path)
    assert path.stat().st_size > count + 1_000_000


def test_huge_header_length_is_refused_after_8_bytes(tmp_path: Path) -> None:
    path = write_raw(tmp_path / "h.safetensors", b"{}", length=2**63)
    count, error = read_counting(path)
    assert isinstance(error, SafetensorsHeaderError) and "100 MB" in error.reason
    assert count == 8


def test_header_over_100mb_is_refused_even_if_file_is_that_big(tmp_path: Path) -> None:
    path = tmp_path / "sparse.safetensors"
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", MAX_HEADER_BYTES + 1))
        handle.truncate(MAX_HEADER_BYTES + 100)  # sparse: costs no disk
    count, error = read_counting(path)
    assert isinstance(error, SafetensorsHeaderError) and count == 8


def test_missing_data_region_is_past_the_end(tmp_path: Path) -> None:
    header = {"w": {"dtype": "F32", "shape": [1000], "data_offsets": [0, 4000]}}
    path = write_raw(tmp_path / "t.safetensors", header)
    count, error = read_counting(path)
    assert isinstance(error, SafetensorsHeaderError) and "past the end" in error.reason
    assert count == 8 + header_length(path)


F32_4 = {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}


@pytest.mark.parametrize(
    ("header", "data", "reason"),
    [
        (b"{not json", b"", "not valid JSON"),
        (b"\xff\xfe", b"", "not valid JSON"),
        ([1, 2], b"", "not a JSON object"),
        ({"w": {**F32_4, "dtype": "F33"}}, bytes(16), "unknown dtype"),
        ({"w": {**F32_4, "shape": [5]}}, bytes(16), "needs 20 bytes"),
        ({"w": {**F32_4, "shape": [-4]}}, bytes(16), "shape must be"),
        ({"w": {**F32_4, "shape": [True]}}, bytes(16), "shape must be"),
        ({"w": {**F32_4, "data_offsets": [0]}}, bytes(16), "data_offsets must be"),
        ({"w": {**F32_4, "data_offsets": [16, 0]}}, bytes(16), "end before start"),
        ({"w": {**F32_4, "data_offsets": [-16, 0]}}, bytes(16), "data_offsets must be"),
        ({"w": "x"}, b"", "not an object"),
        ({"a": F32_4, "b": {**F32_4, "data_offsets": [8, 24]}}, bytes(24), "overlaps"),
        ({"a": F32_4, "b": {**F32_4, "data_offsets": [20, 36]}}, bytes(36), "gap"),
        ({"a": F32_4}, bytes(20), "unexpected bytes"),
        ({"a": F32_4}, bytes(8), "past the end"),
        ({"__metadata__": {"k": 1}}, b"", "__metadata__"),
    ],
)
def test_malformed_headers_are_refused_with_a_reason(
    tmp_path: Path, header: object, data: bytes, reason: str
) -> None:
    path = write_raw(tmp_path / "bad.safetensors", header, data)
    with pytest.raises(SafetensorsHeaderError) as caught:
        read_safetensors_header(path)
    assert reason in caught.value.reason
    assert caught.value.path == path


def test_short_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "s.safetensors").write_bytes(b"\x01\x00")
    with pytest.raises(SafetensorsHeaderError, match="too short"):
        read_safetensors_header(tmp_path / "s.safetensors")
    write_raw(tmp_path / "n.safetensors", b"{}", length=50)
    with pytest.raises(SafetensorsHeaderError, match="more than the file holds"):
        read_safetensors_header(tmp_path / "n.safetensors")


def test_metadata_is_kept(tmp_path: Path) -> None:
    path = write_raw(
        tmp_path / "m.safetensors", {"__metadata__": {"format": "pt"}, "a": F32_4}, bytes(16)
    )
    summary = read_safetensors_header(path)
    assert summary.metadata == {"format": "pt"} and summary.param_count == 4


def write_sharded(folder: Path) -> None:
    folder.mkdir()
    write_real(
        folder / "model-00001-of-00002.safetensors", {"a": ("F32", [10]), "b": ("BF16", [3, 3])}
    )
    write_real(folder / "model-00002-of-00002.safetensors", {"c": ("F32", [7])})
    weight_map = {
        "a": "model-00001-of-00002.safetensors",
        "b": "model-00001-of-00002.safetensors",
        "c": "model-00002-of-00002.safetensors",
    }
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 86}, "weight_map": weight_map})
    )


def test_sharded_folder_sums_shards(tmp_path: Path) -> None:
    write_sharded(tmp_path / "m")
    summary = summarize_folder(tmp_path / "m")
    assert summary.param_count == 10 + 9 + 7
    assert summary.bytes_by_dtype == {"F32": 68, "BF16": 18}
    files = sorted((tmp_path / "m").glob("*.safetensors"))
    assert summary.file_bytes == sum(f.stat().st_size for f in files)


def test_index_naming_a_missing_tensor_or_escaping_path_is_refused(tmp_path: Path) -> None:
    write_sharded(tmp_path / "m")
    index = tmp_path / "m" / "model.safetensors.index.json"
    data = json.loads(index.read_text())
    data["weight_map"]["ghost"] = "model-00002-of-00002.safetensors"
    index.write_text(json.dumps(data))
    with pytest.raises(SafetensorsHeaderError, match="ghost"):
        summarize_folder(tmp_path / "m")
    data["weight_map"] = {"a": "../outside.safetensors"}
    index.write_text(json.dumps(data))
    with pytest.raises(SafetensorsHeaderError, match="bad shard file name"):
        summarize_folder(tmp_path / "m")
    index.write_text("[]")
    with pytest.raises(SafetensorsHeaderError, match="weight_map"):
        summarize_folder(tmp_path / "m")


def test_folder_without_index_sums_every_file(tmp_path: Path) -> None:
    write_real(tmp_path / "x.safetensors", {"a": ("U8", [5])})
    write_real(tmp_path / "y.safetensors", {"b": ("F16", [5])})
    assert summarize_folder(tmp_path).tensor_bytes == 15
    (tmp_path / "empty").mkdir()
    with pytest.raises(SafetensorsHeaderError, match=r"no \.safetensors"):
        summarize_folder(tmp_path / "empty")
