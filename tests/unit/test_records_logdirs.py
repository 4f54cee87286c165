"""Finding log directories on a real file tree; config.json and metrics.jsonl."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ckpt_tui.training.logdirs import (
    Problem,
    _subdirs,
    default_runs_root,
    discover_log_dirs,
    read_metrics,
)
from tests.support.privileges import python_as_a_user


def make_run(folder: Path, names: list[str] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"name": n, "batch": i}) for i, n in enumerate(names or ["000001"])]
    (folder / "checkpoints.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def test_default_runs_root_reads_the_environment() -> None:
    assert default_runs_root({"TINKER_COOKBOOK_RUNS_DIR": "/data/runs"}) == Path("/data/runs")
    assert default_runs_root({}) == Path.home() / "tinker-runs"
    assert default_runs_root({"TINKER_COOKBOOK_RUNS_DIR": "  "}) == Path.home() / "tinker-runs"


def test_scans_runs_root_with_relative_display_names(tmp_path: Path) -> None:
    make_run(tmp_path / "sft" / "qwen-8b")
    make_run(tmp_path / "rl" / "math" / "run1")
    (tmp_path / "empty" / "deeper").mkdir(parents=True)
    found = discover_log_dirs([], tmp_path)
    assert sorted(d.display_name for d in found.log_dirs) == ["rl/math/run1", "sft/qwen-8b"]
    assert found.problems == []


def test_explicit_log_dir_and_root(tmp_path: Path) -> None:
    single = make_run(tmp_path / "one")
    root = tmp_path / "root"
    make_run(root / "a")
    found = discover_log_dirs([single, root], None)
    assert [d.display_name for d in found.log_dirs] == ["one", "a"]
    assert found.log_dirs[0].records_file is not None
    assert found.log_dirs[0].records_file.records[0].name == "000001"


def test_missing_explicit_dir_is_a_problem_but_missing_root_is_not(tmp_path: Path) -> None:
    found = discover_log_dirs([tmp_path / "nope"], tmp_path / "also-nope")
    assert found.log_dirs == []
    assert [p.path for p in found.problems] == [tmp_path / "nope"]


def test_same_dir_reached_twice_is_listed_once(tmp_path: Path) -> None:
    run = make_run(tmp_path / "runs" / "a")
    found = discover_log_dirs([run], tmp_path / "runs")
    assert len(found.log_dirs) == 1


def test_depth_is_bounded(tmp_path: Path) -> None:
    make_run(tmp_path / "1" / "2" / "3" / "4")
    assert discover_log_dirs([], tmp_path, max_depth=3).log_dirs == []
    assert len(discover_log_dirs([], tmp_path, max_depth=4).log_dirs) == 1


def test_symlink_loops_end(tmp_path: Path) -> None:
    make_run(tmp_path / "a" / "run")
    (tmp_path / "a" / "loop").symlink_to(tmp_path / "a", target_is_directory=True)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "to_a").symlink_to(tmp_path / "a", target_is_directory=True)
    found = discover_log_dirs([], tmp_path, max_depth=50)
    assert [d.display_name for d in found.log_dirs] == ["a/run"]


def test_hidden_folders_are_not_scanned(tmp_path: Path) -> None:
    make_run(tmp_path / ".git" / "x")
    assert discover_log_dirs([], tmp_path).log_dirs == []


def test_a_folder_that_cannot_be_listed_is_recorded(tmp_path: Path) -> None:
    problems: list[Problem] = []
    assert list(_subdirs(tmp_path / "vanished", problems)) == []
    assert problems and problems[0].message.startswith("cannot read folder")


def test_unreadable_folder_is_skipped_and_reported(tmp_path: Path) -> None:
    make_run(tmp_path / "ok")
    locked = tmp_path / "locked"
    make_run(locked / "inner")
    locked.chmod(0)
    code = f"""
import json
from pathlib import Path
from ckpt_tui.training.logdirs import discover_log_dirs
found = discover_log_dirs([], Path({str(tmp_path)!r}))
print(json.dumps([[d.display_name for d in found.log_dirs], [str(p.path) for p in found.problems]]))
"""
    try:
        names, problems = json.loads(python_as_a_user(code).stdout)  # as root without its powers
    finally:
        locked.chmod(0o755)
    assert names == ["ok"]
    assert problems == [str(locked)]


def test_skipped_lines_become_problems(tmp_path: Path) -> None:
    run = make_run(tmp_path / "r")
    with open(run / "checkpoints.jsonl", "a") as handle:
        handle.write("{oops\n")
    found = discover_log_dirs([run], None)
    assert len(found.log_dirs[0].records_file.records) == 1  # type: ignore[union-attr]
    assert [p.message.split(" skipped")[0] for p in found.problems] == ["line 2"]


def test_refresh_rereads_only_when_changed(tmp_path: Path) -> None:
    run = make_run(tmp_path / "r")
    log_dir = discover_log_dirs([run], None).log_dirs[0]
    assert log_dir.refresh() is False
    with open(run / "checkpoints.jsonl", "a") as handle:
        handle.write(json.dumps({"name": "000002", "batch": 2}) + "\n")
    assert log_dir.has_changed()
    assert log_dir.refresh() is True
    assert [r.name for r in log_dir.records_file.records] == ["000001", "000002"]  # type: ignore[union-attr]


def test_config_is_read_lazily(tmp_path: Path) -> None:
    run = make_run(tmp_path / "r")
    log_dir = discover_log_dirs([run], None).log_dirs[0]
    (run / "config.json").write_text(
        json.dumps(
            {"model_name": "Qwen/Qwen3-8B", "lora_rank": 32, "log_path": str(run), "lr": 1e-4}
        )
    )
    config = log_dir.config
    assert (config.model_name, config.lora_rank, config.error) == ("Qwen/Qwen3-8B", 32, None)
    assert config.raw["lr"] == 1e-4


def test_bad_or_missing_config_is_reported_not_raised(tmp_path: Path) -> None:
    run = make_run(tmp_path / "r")
    log_dir = discover_log_dirs([run], None).log_dirs[0]
    assert log_dir.config.error == "no config.json"
    (run / "config.json").write_text("[1]")
    log_dir.reload()
    assert log_dir.config.error is not None and "not a JSON object" in log_dir.config.error


@pytest.mark.parametrize(
    ("text", "reason"),
    [("[" * 100_000, "nests arrays or objects"), ('{"lora_rank": 1e999}', "not valid JSON")],
    ids=["deep", "infinite"],
)
def test_a_hostile_config_is_a_bounded_error(tmp_path: Path, text: str, reason: str) -> None:
    run = make_run(tmp_path / "r")
    (run / "config.json").write_text(text)
    config = discover_log_dirs([run], None).log_dirs[0].config
    assert config.error is not None and reason in config.error
    assert config.lora_rank is None and config.raw == {}


def test_metrics_series_by_step(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    lines = [
        {"step": 0, "train/loss": 2.5, "lr": 1e-4, "tag": "x"},
        {"step": 1, "train/loss": 2.0, "ok": True},
        {"train/loss": 1.5},
        {"step": 5, "train/loss": float("nan")},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n{broken\n")
    metrics = read_metrics(path)
    assert metrics.series["train/loss"] == [(0, 2.5), (1, 2.0), (2, 1.5)]
    assert metrics.series["lr"] == [(0, 1e-4)]
    assert "tag" not in metrics.series and "ok" not in metrics.series
    assert [s.line_no for s in metrics.skipped] == [5]


def test_missing_metrics_is_an_error_value(tmp_path: Path) -> None:
    assert read_metrics(tmp_path / "metrics.jsonl").error == "no metrics.jsonl"
