"""The demo's third backend: a team bucket where a cluster's Trainer runs were synced
(`aws s3 sync output/ s3://team-bucket/cluster/`). It is written on disk and read as a bucket
through obstore's LocalStore (`file://`), by the same object-store code as S3, GCS and Azure:
no network, no extra service. Its files are sparse, as the training box's are."""

from __future__ import annotations

from pathlib import Path

from ckpt_tui.demo.trainer_box import TrainerRun

BUCKET_RUNS = (
    TrainerRun("qwen3-8b-sft", "Qwen/Qwen3-8B", 1000, 3, 4.0, 1),
    TrainerRun("llama-8b-cpt", "meta-llama/Llama-3.1-8B", 2500, 2, 15.0, 1),
)


def bucket_location(root: Path) -> str:
    """The demo bucket's location: its folder, read as a bucket."""
    return f"file://{root.absolute()}"
