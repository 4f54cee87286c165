"""The screen the app opens on: browsing plus the actions that change checkpoints."""

from __future__ import annotations

from ckpt_tui.tui.screens.browse import BrowseScreen


class MainScreen(BrowseScreen):
    """Browse runs and checkpoints, and (unless read-only) publish, set TTLs and delete."""
