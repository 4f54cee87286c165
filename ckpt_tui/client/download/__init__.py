"""Downloading a checkpoint's files through signed URLs: see `engine`."""

from ckpt_tui.client.download.engine import (
    DownloadError,
    FileProgress,
    Progress,
    Result,
    cannot_sign,
    download,
)
from ckpt_tui.client.download.folder import FolderRefused
from ckpt_tui.client.download.targets import UnsafeDownload
from ckpt_tui.client.download.verify import VerifyError

DOWNLOAD_FAILURES = (DownloadError, FolderRefused, UnsafeDownload, VerifyError)
"""What a download that did not finish raises; its message says why and what to do."""

__all__ = [
    "DOWNLOAD_FAILURES",
    "DownloadError",
    "FileProgress",
    "FolderRefused",
    "Progress",
    "Result",
    "UnsafeDownload",
    "VerifyError",
    "cannot_sign",
    "download",
]
