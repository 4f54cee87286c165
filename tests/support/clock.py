"""The time the tests' fixed clock starts at (the `clock` fixture)."""

from __future__ import annotations

from datetime import datetime, timezone

T0 = datetime(2025, 1, 1, 12, 0, tzinfo=timezone.utc)
