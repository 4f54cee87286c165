"""ckpt-tui: a terminal checkpoint manager for fine-tuning runs."""

__version__ = "0.1.0"
