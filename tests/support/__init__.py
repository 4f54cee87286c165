"""Reusable test helpers (real servers, no mocks)."""
