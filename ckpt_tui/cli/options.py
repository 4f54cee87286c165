"""Global options: the same meaning before or after the subcommand, or a refusal (exit 2).

argparse lets a subparser that defines an option again overwrite what the main parser read
before the subcommand (its default replaces the earlier value). So every global option is
declared once, in GLOBAL_OPTIONS; the main parser and each subcommand that accepts it add a
copy, and the two copies store into different names with no default. `settle` then merges
them: a flag given on both sides is joined (repeatable options: --url, --local, --backend,
--log-dir; a value given twice counts once), agreed on (switches), or refused when the values
differ; an option the chosen command does not use is refused.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from ckpt_tui.client.secret import Secret, UnusableKey, checked_key
from ckpt_tui.cost import STORAGE_RATE_ENV

READONLY_ENV = "CKPT_TUI_READONLY"
BEFORE, AFTER = "_before_command", "_after_command"
"""Suffixes of the names the copies before and after the subcommand store into (a command's
own option of the same name, like `serve --api-key`, keeps its plain name)."""
ACCEPTED = "global_options_accepted"
"""The namespace attribute naming the global options the chosen command uses."""

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"", "0", "false", "no", "off"})

CONNECT = "where to connect"
GROUP_DESCRIPTIONS = {
    CONNECT: "--url, --local and --backend repeat and add up; with none of them, every backend "
    "of the config file opens. The Tinker connection of the environment joins unless "
    "--no-tinker (with --backend, only when named 'tinker'; for prune with --url or --local, "
    "only when --backend names it). `ckpt-tui backends` lists them."
}


def poll_seconds(text: str) -> float:
    """--poll: 0 (off) or a number of seconds."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"must be 0 (off) or a number of seconds, got {text!r}")
    return seconds


def api_key(text: str) -> Secret:
    """--api-key: a key a header can carry, held as a Secret; refused saying what is wrong,
    never what the key is (argparse would quote a value a ValueError refuses)."""
    try:
        return checked_key(text.strip())
    except UnusableKey as exc:
        raise argparse.ArgumentTypeError(
            f"the key cannot be sent: {exc}; give the key exactly as it was issued"
        ) from None


def project_id(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("give a project id (an empty one would mean every run)")
    return text


class GlobalOption(msgspec.Struct, frozen=True):
    """One option that may stand before or after the subcommand."""

    flag: str
    group: str | None
    options: dict[str, Any] = msgspec.field(default_factory=dict)

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    @property
    def repeatable(self) -> bool:
        return self.options.get("action") == "append"

    @property
    def switch(self) -> bool:
        return self.options.get("action") == "store_true"

    @property
    def default(self) -> Any:
        if self.repeatable:
            return []
        return False if self.switch else self.options.get("default")


GLOBAL_OPTIONS: tuple[GlobalOption, ...] = (
    GlobalOption(
        "--local",
        CONNECT,
        {
            "action": "append",
            "metavar": "[NAME=]STORE",
            "help": "a local store folder, optionally named (repeatable)",
        },
    ),
    GlobalOption(
        "--url",
        CONNECT,
        {
            "action": "append",
            "metavar": "[NAME=]URL",
            "help": "a checkpoint server's base URL, optionally named (repeatable)",
        },
    ),
    GlobalOption(
        "--api-key",
        CONNECT,
        {
            "type": api_key,
            "help": "the key of the one --url; with no --url, of the Tinker connection (else "
            "$TINKER_API_KEY, else the default key of `tinker auth login`)",
        },
    ),
    GlobalOption(
        "--backend",
        CONNECT,
        {
            "action": "append",
            "metavar": "NAME",
            "help": "open only this backend of the config file ('tinker': the Tinker "
            "connection); repeatable, and adds up with --url and --local",
        },
    ),
    GlobalOption(
        "--no-tinker",
        CONNECT,
        {
            "action": "store_true",
            "help": "leave out the Tinker connection ($TINKER_BASE_URL, $TINKER_API_KEY, "
            "tinker auth login)",
        },
    ),
    GlobalOption(
        "--project",
        None,
        {
            "type": project_id,
            "metavar": "ID",
            "help": "only the training runs of this project (and their checkpoints and log dirs)",
        },
    ),
    GlobalOption(
        "--log-dir",
        None,
        {
            "action": "append",
            "metavar": "DIR",
            "help": "a training log dir or a folder of them (repeatable); "
            "$TINKER_COOKBOOK_RUNS_DIR (else ~/tinker-runs) is always scanned too",
        },
    ),
    GlobalOption(
        "--readonly",
        None,
        {
            "action": "store_true",
            "help": f"change nothing: publish, TTL and delete are refused (also {READONLY_ENV}=1)",
        },
    ),
    GlobalOption(
        "--poll",
        None,
        {
            "type": poll_seconds,
            "default": 30.0,
            "metavar": "SECONDS",
            "help": "re-read the server every SECONDS (default 30; 0 turns it off)",
        },
    ),
    GlobalOption(
        "--storage-rate",
        None,
        {
            "metavar": "USD_PER_GIB_MONTH",
            "help": "USD per GiB-month for every backend without a rate of its own in the "
            f"config (else ${STORAGE_RATE_ENV}, else its billing endpoint's, else none); "
            "`serve` answers its billing endpoint at this rate",
        },
    ),
)
BY_DEST = {option.dest: option for option in GLOBAL_OPTIONS}
ALL = tuple(BY_DEST)
BACKEND = ("local", "url", "backend", "api_key", "no_tinker", "project", "log_dir", "readonly")
"""What every command that talks to a backend accepts."""


class CommandParser(argparse.ArgumentParser):
    """A subcommand's parser: what it does not know is refused with its own usage.

    argparse hands a subcommand's unknown arguments back to the main parser, which refuses
    them with the main usage: `ckpt-tui ls --jsn` showed `ckpt-tui [-h] ... COMMAND ...`
    instead of the `ls` options the person was typing.
    """

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, unknown = super().parse_known_args(args, namespace)
        if unknown:
            self.error(f"unrecognized arguments: {' '.join(unknown)}")
        return parsed, unknown


def add_global_options(
    parser: argparse.ArgumentParser,
    dests: Sequence[str],
    *,
    after_command: bool,
    helps: Mapping[str, str] | None = None,
) -> None:
    """Add the options named by `dests`: the main parser's copies, or a subcommand's.
    `helps`: a command's own words for some of them, by dest (what `serve --help` says of
    --storage-rate is not what the commands that read the config file say)."""
    groups: dict[str, Any] = {}
    for dest in dests:
        option = BY_DEST[dest]
        target: Any = parser
        if option.group is not None:
            if option.group not in groups:
                description = GROUP_DESCRIPTIONS.get(option.group)
                groups[option.group] = parser.add_argument_group(option.group, description)
            target = groups[option.group]
        options = {**option.options, "default": argparse.SUPPRESS}
        if helps and dest in helps:
            options["help"] = helps[dest]
        if not option.switch:
            options.setdefault("metavar", option.dest.upper())
        options["dest"] = option.dest + (AFTER if after_command else BEFORE)
        target.add_argument(option.flag, **options)
    if after_command:
        parser.set_defaults(**{ACCEPTED: tuple(dests)})


def settle(
    args: argparse.Namespace, parser: argparse.ArgumentParser, env: Mapping[str, str] | None = None
) -> None:
    """Merge each global option's two copies into its one name; parser.error (exit 2) on a
    conflict or on an option the chosen command does not use."""
    env = os.environ if env is None else env
    found = vars(args)
    command = found.get("command")
    accepted = found.pop(ACCEPTED, ALL if command is None else ())
    for option in GLOBAL_OPTIONS:
        before = found.pop(option.dest + BEFORE, None)
        after = found.pop(option.dest + AFTER, None)
        if option.dest not in accepted:
            if before is not None:
                parser.error(
                    f"{option.flag} does not apply to `ckpt-tui {command}` (its own options "
                    f"go after it: see ckpt-tui {command} --help)"
                )
            continue
        found[option.dest] = merged(option, before, after, str(command), parser)
    if "readonly" in accepted:
        found["readonly"] = found["readonly"] or readonly_from_env(env, parser)


def merged(
    option: GlobalOption, before: Any, after: Any, command: str, parser: argparse.ArgumentParser
) -> Any:
    """One value from the copies before and after the subcommand (None = not given)."""
    given = [value for value in (before, after) if value is not None]
    if not given:
        return option.default
    if option.repeatable:  # they add up; one given on both sides counts once
        return list(dict.fromkeys(item for value in given for item in value))
    if len(given) == 2 and before != after:
        parser.error(
            f"{option.flag} was given twice with different values ({before} before "
            f"`{command}`, {after} after it); give it once"
        )
    return given[0]


def readonly_from_env(env: Mapping[str, str], parser: argparse.ArgumentParser) -> bool:
    value = env.get(READONLY_ENV, "").strip().lower()
    if value in TRUE_WORDS:
        return True
    if value not in FALSE_WORDS:
        parser.error(f"{READONLY_ENV} must be 1 or 0 (or true/false), got {value!r}")
    return False
