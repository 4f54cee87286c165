"""What the command line says about itself: a mistyped option after a command gets that
command's usage, and each command's --help speaks of what that command does."""

from __future__ import annotations

import re

import pytest

from ckpt_tui.cli import main

MAIN_USAGE = "usage: ckpt-tui [-h] [--version]"

MISTYPED: list[tuple[list[str], str]] = [
    (["ls", "--jsn"], "--jsn"),
    (["prune", "--keep-last", "2", "--dryrun"], "--dryrun"),
    (["backends", "--log-dir", "logs"], "--log-dir logs"),
    (["serve", "store", "--prot", "9000"], "--prot 9000"),
    (["demo", "--no-tiu"], "--no-tiu"),
]


@pytest.mark.parametrize(("argv", "unknown"), MISTYPED)
def test_an_unknown_option_after_a_command_shows_that_commands_usage(
    argv: list[str], unknown: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    command = argv[0]
    assert err.startswith(f"usage: ckpt-tui {command} [-h]"), err
    assert f"ckpt-tui {command}: error: unrecognized arguments: {unknown}\n" in err
    assert MAIN_USAGE not in err


def test_an_unknown_option_before_any_command_shows_the_main_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--jsn"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(MAIN_USAGE) and "ckpt-tui: error: unrecognized arguments: --jsn" in err


def option_help(text: str, flag: str) -> str:
    """One option's help in `--help` output, its lines joined."""
    found = re.search(rf"^  {flag}\b.*?\n((?: {{6,}}.*\n)+)", text, re.M)
    assert found is not None, text
    return " ".join(found[0].split())


def test_serve_help_explains_storage_rate_as_its_billing_endpoint(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", "--help"])
    assert exit_info.value.code == 0
    said = option_help(capsys.readouterr().out, "--storage-rate")
    assert "billing/usage/checkpoints/current" in said and "this store" in said
    assert "config" not in said and "every backend" not in said  # serve reads no config file
    with pytest.raises(SystemExit):
        main(["prune", "--help"])
    assert "config" in option_help(capsys.readouterr().out, "--storage-rate")  # prune's own
