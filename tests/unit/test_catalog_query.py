"""Sorting, filtering, the expiring view and size estimates of the joined view."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from ckpt_tui.api_types import Checkpoint, TrainingRun
from ckpt_tui.catalog import CheckpointRow, build_catalog
from ckpt_tui.catalog.query import Sort, expiring_rows, search_index, sort_rows

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
RUN = "run-a"


def ckpt(name: str, hours_ago: float, size: int | None, expires_in_h: float | None) -> Checkpoint:
    expires = None if expires_in_h is None else NOW + timedelta(hours=expires_in_h)
    return Checkpoint(
        checkpoint_id=f"weights/{name}",
        checkpoint_type="training",
        time=NOW - timedelta(hours=hours_ago),
        tinker_path=f"tinker://{RUN}/weights/{name}",
        size_bytes=size,
        expires_at=expires,
        user_metadata={"eval_loss": str(hours_ago / 10)},
    )


def rows(*checkpoints: Checkpoint, base_model: str = "Qwen/Qwen3-8B") -> list[CheckpointRow]:
    run = TrainingRun(RUN, base_model, "me", True, NOW, lora_rank=32)
    return build_catalog([run], list(checkpoints), []).rows


def names(found: list[CheckpointRow]) -> list[str]:
    return [row.name for row in found]


def test_each_sort_key_and_reverse_keep_unknown_values_last() -> None:
    data = rows(ckpt("b", 3, 300, 10), ckpt("a", 1, None, None), ckpt("c", 2, 100, 5))
    assert names(sort_rows(data, Sort("created"))) == ["b", "c", "a"]
    assert names(sort_rows(data, Sort("created", reverse=True))) == ["a", "c", "b"]
    assert names(sort_rows(data, Sort("expiry"))) == ["c", "b", "a"]
    assert names(sort_rows(data, Sort("expiry", reverse=True))) == ["b", "c", "a"]
    assert names(sort_rows(data, Sort("name"))) == ["a", "b", "c"]
    assert names(sort_rows(data, Sort("metric", metric="eval_loss"))) == ["a", "c", "b"]
    # "a" has no server size: it is estimated from the run's measured ones (median 200 bytes)
    assert names(sort_rows(data, Sort("size", reverse=True))) == ["b", "a", "c"]
    assert names(sort_rows(data, Sort("size"))) == ["c", "a", "b"]


def test_the_name_sort_ignores_case() -> None:
    data = rows(ckpt("B", 3, 1, None), ckpt("a", 1, 1, None), ckpt("C", 2, 1, None))
    assert names(sort_rows(data, Sort("name"))) == ["a", "B", "C"]
    assert names(sort_rows(data, Sort("name", reverse=True))) == ["C", "B", "a"]


def test_sort_cycles_through_every_key() -> None:
    seen = []
    sort = Sort()
    for _ in range(5):
        seen.append(sort.key)
        sort = sort.cycled()
    assert seen == ["created", "size", "expiry", "name", "metric"] and sort.key == "created"


def test_filter_matches_name_path_and_metadata_case_insensitively() -> None:
    data = rows(ckpt("Step-100", 3, 1, 1), ckpt("final", 1, 1, None))
    index = search_index(data)  # as the browse screen filters, key press after key press
    assert names(index.filter("step-1")) == ["Step-100"]
    assert names(index.filter("EVAL_LOSS=0.1")) == ["final"]
    assert names(index.filter("tinker://run-a")) == ["Step-100", "final"]
    assert names(index.filter("  ")) == ["Step-100", "final"]
    assert index.filter("nothing like this") == []


def test_expiring_view_is_soonest_first_within_the_window() -> None:
    data = rows(
        ckpt("late", 1, 1, 30),
        ckpt("soon", 1, 1, 2),
        ckpt("sooner", 1, 1, 1),
        ckpt("never", 1, 1, None),
    )
    assert names(expiring_rows(data, NOW, timedelta(hours=24))) == ["sooner", "soon"]
    assert names(expiring_rows(data, NOW, timedelta(days=3))) == ["sooner", "soon", "late"]


def test_unknown_sizes_are_estimated_and_calibrated_from_measured_ones() -> None:
    alone = rows(ckpt("x", 1, None, None))[0]
    assert alone.size.kind == "estimate" and "LoRA rank 32 on Qwen/Qwen3-8B" in alone.size.basis
    calibrated = rows(ckpt("x", 1, None, None), ckpt("y", 2, 1000, None))
    estimate = next(row for row in calibrated if row.name == "x").size
    assert estimate.kind == "estimate" and estimate.bytes == 1000
    assert "measured" in estimate.basis


def test_unknown_model_gives_unknown_size_with_a_reason() -> None:
    row = rows(ckpt("x", 1, None, None), base_model="nobody/unheard-of")[0]
    assert row.size.kind == "unknown" and "unheard-of" in row.size.basis
