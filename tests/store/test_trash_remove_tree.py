"""`trash.remove_tree` trusts the listing's file types only as far as it is safe: a name
listed as a file that is a folder is still removed, and one listed as a folder that is a
link is unlinked as a link, its target untouched (guards: the listing cannot be made stale
on cue, so these lie about it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ckpt_tui.store import trash
from ckpt_tui.store.layout import Layout


def remove(folder: Path, name: str) -> None:
    with trash.opened_dir(Layout(folder), []) as parent:
        trash.remove_tree(parent, name)


def test_a_folder_listed_as_a_file_is_removed_all_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed = trash._listed
    monkeypatch.setattr(trash, "_listed", lambda fd: [(n, False) for n, _ in listed(fd)])
    (tmp_path / "tree" / "a" / "b").mkdir(parents=True)
    (tmp_path / "tree" / "a" / "b" / "f").write_bytes(b"x")
    (tmp_path / "tree" / "g").write_bytes(b"y")
    remove(tmp_path, "tree")
    assert list(tmp_path.iterdir()) == []


def test_a_link_listed_as_a_folder_is_unlinked_and_its_target_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed = trash._listed
    monkeypatch.setattr(trash, "_listed", lambda fd: [(n, True) for n, _ in listed(fd)])
    outside = tmp_path / "outside"
    (outside / "kept").mkdir(parents=True)
    (outside / "kept" / "f").write_bytes(b"x")
    (tmp_path / "store" / "tree").mkdir(parents=True)
    (tmp_path / "store" / "tree" / "link").symlink_to(outside / "kept")
    (tmp_path / "store" / "tree" / "file").write_bytes(b"y")
    remove(tmp_path / "store", "tree")
    assert list((tmp_path / "store").iterdir()) == []
    assert (outside / "kept" / "f").read_bytes() == b"x"
