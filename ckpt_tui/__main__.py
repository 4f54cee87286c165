"""Allow `python -m ckpt_tui`."""

from ckpt_tui.cli import console_main

raise SystemExit(console_main())
