"""Discovery: checkpoints people write themselves, found anywhere under a store's root.

Hugging Face Trainer output (`checkpoint-<step>/`), `save_pretrained` and PEFT folders,
`torch.save` files (incl. Lightning `.ckpt`), DeepSpeed `global_step<N>/`,
`torch.distributed.checkpoint` folders and Accelerate `checkpoint_<i>/` become runs (their
folder) of checkpoints (a child folder or file). Only headers are read; pickles are decoded
opcode by opcode and never loaded (`pickle_scan`).
"""

from ckpt_tui.store.discover.known import Finding, Known
from ckpt_tui.store.discover.model import FoundCheckpoint, FoundRun
from ckpt_tui.store.discover.runs import run_id_for
from ckpt_tui.store.discover.walk import Discovery, Reading, discover, examine_run, watch_changed

__all__ = [
    "Discovery",
    "Finding",
    "FoundCheckpoint",
    "FoundRun",
    "Known",
    "Reading",
    "discover",
    "examine_run",
    "run_id_for",
    "watch_changed",
]
