"""Bucket locations told from folder paths: a scheme is never a folder."""

from __future__ import annotations

import pytest

from ckpt_tui.locations import UnsupportedLocationError, has_scheme, parse_location


@pytest.mark.parametrize(
    ("text", "url", "prefix"),
    [
        ("s3://bucket/team/ckpts/", "s3://bucket/team/ckpts", "team/ckpts"),
        ("S3://bucket//a///b", "s3://bucket/a/b", "a/b"),
        ("gs://bucket", "gs://bucket", ""),
        ("az://container/p", "az://container/p", "p"),
        ("file:///data/bucket", "file:///data/bucket", "data/bucket"),
    ],
)
def test_a_bucket_location_is_spelled_one_way(text: str, url: str, prefix: str) -> None:
    location = parse_location(text)
    assert location is not None
    assert (location.url, location.prefix) == (url, prefix)


@pytest.mark.parametrize("text", ["/data/ckpts", "ckpts", "./s3", "~/x", "C:\\\\ckpts", "a:b"])
def test_a_folder_path_is_no_location(text: str) -> None:
    assert parse_location(text) is None and not has_scheme(text)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("ftp://host/ckpts", "cannot open ftp://host/ckpts"),
        ("ftp://u:secret@host/x", "cannot open ftp://host/x"),
        ("s3:/bucket/p", "cannot open s3:/bucket/p"),
        ("s3://", "give the bucket"),
        ("s3://key:secret@bucket/p", "credentials come from the environment"),
        ("s3://bucket/a/../b", "'.' and '..' are not keys"),
        ("file://host/x", "file:///absolute/folder"),
    ],
)
def test_a_location_this_build_cannot_open_is_refused(text: str, says: str) -> None:
    with pytest.raises(UnsupportedLocationError) as caught:
        parse_location(text)
    assert says in str(caught.value)
    assert "secret" not in str(caught.value)
