"""The local server: the Tinker checkpoint REST API over a `Store` (Starlette + uvicorn)."""

from ckpt_tui.server.app import create_app

__all__ = ["create_app"]
