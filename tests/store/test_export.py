"""Reading a checkpoint's files out of a folder store (`ckpt_tui.store.export`): from the
store's own folder down without following a link, bounded, every name one a download can
hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from ckpt_tui.store import export
from ckpt_tui.store.errors import NotFoundError, StoreError


def test_a_checkpoint_that_is_one_file_is_that_file(tmp_path: Path) -> None:
    (tmp_path / "loose").mkdir()
    (tmp_path / "loose/model.pt").write_bytes(b"weights")
    assert export.list_files(str(tmp_path), "loose/model.pt") == [
        export.CheckpointFile("model.pt", 7)
    ]
    with export.open_file(str(tmp_path), "loose/model.pt", "model.pt") as handle:
        assert handle.read() == b"weights"
    with pytest.raises(NotFoundError):
        export.open_file(str(tmp_path), "loose/model.pt", "other.pt")


def test_a_one_file_checkpoint_whose_name_no_download_can_hold_is_refused_naming_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "loose").mkdir()
    (tmp_path / "loose/model..v2.pt").write_bytes(b"weights")
    with pytest.raises(StoreError, match=r"model\.\.v2\.pt cannot be downloaded"):
        export.list_files(str(tmp_path), "loose/model..v2.pt")


def test_a_one_file_checkpoint_that_is_a_link_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "secret.pt").write_bytes(b"elsewhere")
    (tmp_path / "loose").mkdir()
    (tmp_path / "loose/model.pt").symlink_to(tmp_path / "secret.pt")
    with pytest.raises(StoreError, match="symbolic link"):
        export.list_files(str(tmp_path), "loose/model.pt")


def test_the_most_files_are_counted_across_the_whole_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(export, "MAX_FILES", 3)
    for folder in ("ckpt/a", "ckpt/b"):
        (tmp_path / folder).mkdir(parents=True)
        for name in ("x.bin", "y.bin"):
            (tmp_path / folder / name).write_bytes(b"1")
    with pytest.raises(StoreError, match="more than 3 files"):
        export.list_files(str(tmp_path), "ckpt")
