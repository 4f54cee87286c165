"""Write tests/fixtures/torch_saves/: single-file `torch.save` checkpoints, by real torch.

    python -m venv /tmp/torch && /tmp/torch/bin/pip install torch==2.13.0
    /tmp/torch/bin/python scripts/make_torch_saves.py [OUT]

The tests read the files this writes and never import torch (it is not a test dependency:
hundreds of MiB). What it writes, from a tiny `nn.Linear(4, 2)` after one AdamW step:

- `model.pt`: `torch.save(model.state_dict(), ...)`, the "model only (for inference)" save:
  weights alone, listed as sampler weights.
- `checkpoint.pt`: `torch.save({"model": ..., "optimizer": ..., "step": 1, "epoch": 0}, ...)`,
  a training loop's full save with its optimizer state: listed as training state.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Not a dependency of ckpt-tui or its tests: only this script needs it.
import torch  # type: ignore[import-not-found]

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "torch_saves"


def main(out: Path) -> None:
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(torch.ones(3, 4)).sum().backward()
    optimizer.step()  # the optimizer now holds state (exp_avg, exp_avg_sq) for each tensor
    out.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), out / "model.pt")
    full = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": 1}
    torch.save({**full, "epoch": 0}, out / "checkpoint.pt")
    print(f"wrote model.pt and checkpoint.pt to {out} with torch {torch.__version__}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT)
