"""The embedded demo: deterministic, realistic checkpoints and training logs in one folder."""

from ckpt_tui.demo.builder import DEFAULT_SEED, DemoError, DemoPaths, build_demo

__all__ = ["DEFAULT_SEED", "DemoError", "DemoPaths", "build_demo"]
