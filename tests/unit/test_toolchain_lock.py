"""The pinned toolchain: `constraints.txt` pins one version, inside pyproject.toml's range, of
every package the tests install on each supported Python, and the README's test command (the
one `.ci/run` runs) installs with it."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]
# The oldest and the newest Python the lock is run on (README, "Development").
PYTHONS = ["3.10", "3.13"]


def pyproject() -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    with (REPO / "pyproject.toml").open("rb") as file:
        data: dict[str, Any] = tomllib.load(file)
    return data


def environment(python: str) -> dict[str, str]:
    """Marker values for Python `python` with the test extra (the rest: this machine's)."""
    return {"python_version": python, "python_full_version": f"{python}.0", "extra": "test"}


def applies(requirement: Requirement, python: str) -> bool:
    return requirement.marker is None or requirement.marker.evaluate(environment(python))


def pins_on(python: str) -> dict[str, list[Requirement]]:
    """The lock's requirements that apply on `python`, by package name."""
    pins: dict[str, list[Requirement]] = {}
    for line in (REPO / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            requirement = Requirement(line)
            if applies(requirement, python):
                pins.setdefault(canonicalize_name(requirement.name), []).append(requirement)
    return pins


def declared() -> list[Requirement]:
    """What pyproject.toml asks for: the dependencies and the test extra."""
    project = pyproject()["project"]
    lines = [*project["dependencies"], *project["optional-dependencies"]["test"]]
    return [Requirement(line) for line in lines]


@pytest.mark.parametrize("python", PYTHONS)
def test_every_package_has_one_exact_pin_on_each_python(python: str) -> None:
    for name, pinned in pins_on(python).items():
        assert len(pinned) == 1, f"{name} has {len(pinned)} pins on Python {python}"
        specifiers = list(pinned[0].specifier)
        assert [spec.operator for spec in specifiers] == ["=="], f"{pinned[0]} is not a pin"


@pytest.mark.parametrize("python", PYTHONS)
def test_every_declared_package_is_pinned_inside_its_range(python: str) -> None:
    pins = pins_on(python)
    for requirement in declared():
        if not applies(requirement, python):
            continue
        pinned = pins.get(canonicalize_name(requirement.name))
        assert pinned, (
            f"{requirement.name} (pyproject.toml) has no pin for Python {python}: "
            "run `python scripts/lock_toolchain.py`"
        )
        version = next(iter(pinned[0].specifier)).version
        assert requirement.specifier.contains(version, prereleases=True), (
            f"{requirement.name}=={version} is outside pyproject.toml's {requirement.specifier}"
        )


def test_the_readme_test_command_installs_the_pins() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    # The line .ci/run finds and runs.
    found = re.search(r"^python3 -m venv \.venv && .+ && \.venv/bin/pytest", readme, re.MULTILINE)
    assert found is not None
    assert " -c constraints.txt " in found.group(0)
