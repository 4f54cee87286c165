"""STUB: the store helper replaces this file. The signatures below are the contract."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

from ckpt_tui.api_types import Checkpoint, TrainingRun, WeightsInfo
from ckpt_tui.clock import SYSTEM_CLOCK, Clock


class Store:
    """A checkpoint store rooted at a folder. Thread-safe: every public method holds one lock."""

    root: Path
    clock: Clock
    readonly: bool

    @classmethod
    def open(cls, root: Path, clock: Clock = SYSTEM_CLOCK, *, create: bool = True) -> Store:
        """Open (creating when asked) a store: scan, reconcile, finish interrupted deletes, sweep."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    # --- reads -----------------------------------------------------------------------------
    def list_runs(self, offset: int = 0, limit: int | None = None) -> tuple[list[TrainingRun], int]:
        """Runs, newest activity first, and the total count."""
        raise NotImplementedError

    def get_run(self, run_id: str) -> TrainingRun:
        raise NotImplementedError

    def list_run_checkpoints(self, run_id: str) -> list[Checkpoint]:
        """A run's live checkpoints, oldest first. NotFoundError for an unknown run."""
        raise NotImplementedError

    def list_checkpoints(self, offset: int = 0, limit: int = 100) -> tuple[list[Checkpoint], int]:
        """All live checkpoints, newest first, and the total count."""
        raise NotImplementedError

    def get_checkpoint(self, run_id: str, checkpoint_id: str) -> Checkpoint:
        raise NotImplementedError

    def weights_info(self, run_id: str, checkpoint_id: str) -> WeightsInfo:
        raise NotImplementedError

    # --- writes ----------------------------------------------------------------------------
    def create_run(
        self,
        run_id: str,
        base_model: str,
        *,
        is_lora: bool = True,
        lora_rank: int | None = None,
        model_owner: str = "local",
        user_metadata: dict[str, str] | None = None,
        created: datetime | None = None,
        extra: Mapping[str, object] | None = None,
    ) -> TrainingRun:
        """Write `runs/<run_id>/run.json`; `extra` holds e.g. train_mlp/train_attn/train_unembed."""
        raise NotImplementedError

    def add_checkpoint(
        self,
        run_id: str,
        checkpoint_id: str,
        files: Mapping[str, bytes] | None = None,
        *,
        created: datetime | None = None,
        expires_at: datetime | None = None,
        public: bool = False,
        user_metadata: dict[str, str] | None = None,
    ) -> Checkpoint:
        """Create a checkpoint folder with `files` (name -> bytes) and its metadata row."""
        raise NotImplementedError

    def delete_checkpoint(self, run_id: str, checkpoint_id: str) -> None:
        """Crash-safe delete: rename into trash, commit metadata, remove files."""
        raise NotImplementedError

    def set_public(self, run_id: str, checkpoint_id: str, public: bool) -> Checkpoint:
        """ConflictError when already in that state."""
        raise NotImplementedError

    def set_ttl(self, run_id: str, checkpoint_id: str, ttl_seconds: int | None) -> Checkpoint:
        """expires_at = now + ttl; None clears it. InvalidRequestError unless 3600 <= ttl <= 10y."""
        raise NotImplementedError

    def sweep_expired(self) -> list[str]:
        """Delete every checkpoint past expires_at; return their tinker paths."""
        raise NotImplementedError
