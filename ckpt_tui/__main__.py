"""Allow `python -m ckpt_tui`."""

from ckpt_tui.cli import main

raise SystemExit(main())
