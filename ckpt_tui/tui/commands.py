"""Every user action, defined once: it feeds the key bindings, the footer, help and the palette."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from textual.binding import Binding, BindingType


@dataclass(frozen=True)
class Command:
    """One action the user can take, with the keys that run it."""

    action: str
    keys: str
    title: str
    help: str
    footer: bool = True
    key_display: str | None = None
    priority: bool = False
    """Run by the app as the key arrives, before it goes to the focused widget."""
    palette_title: str | None = None
    """The palette's name for it when the footer's is too short to be found by (it searches
    names only): "TTL: set, extend or expire" is found by "ttl" and by "expire"."""

    def binding(self) -> Binding:
        return Binding(
            self.keys,
            self.action,
            self.title,
            show=self.footer,
            key_display=self.key_display,
            priority=self.priority,
        )


BROWSE_COMMANDS: tuple[Command, ...] = (
    Command("quit", "q", "Quit", "Leave ckpt-tui"),
    Command("help", "question_mark", "Help", "Show every key", key_display="?"),
    # A priority binding: otherwise the app hands the keys typed right after "/" (one burst
    # over SSH) to the table before the filter box has taken focus, and "/r1" refreshes and
    # switches view. BrowseScreen.check_action lets "/" through while the box has focus.
    Command(
        "filter",
        "slash",
        "Filter",
        "Filter rows by name, path and metadata",
        key_display="/",
        priority=True,
    ),
    Command("cycle_sort", "s", "Sort", "Cycle the sort: created, size, expiry, name, metric"),
    Command("reverse_sort", "S", "Reverse", "Reverse the sort order", footer=False),
    Command("cycle_view", "v", "View", "Switch view: by run, all checkpoints, expiring soon"),
    Command(
        "view('runs')",
        "1",
        "By run",
        "Show runs and the highlighted run's checkpoints",
        footer=False,
    ),
    Command(
        "view('all')",
        "2",
        "All checkpoints",
        "Every checkpoint across runs, sortable",
        footer=False,
    ),
    Command(
        "view('expiring')",
        "3",
        "Expiring soon",
        "Checkpoints expiring within the window",
        footer=False,
    ),
    Command("cycle_window", "w", "Window", "Change the expiring-soon window", footer=False),
    Command("cycle_metric", "m", "Metric", "Switch the metric column", footer=False),
    Command("refresh", "r", "Refresh", "Reload runs and checkpoints from every backend (retries)"),
    Command(
        "toggle_fold",
        "f",
        "Fold",
        "Fold or unfold the highlighted backend's runs (or enter on its row)",
        footer=False,
    ),
    Command("copy_path", "c", "Copy path", "Copy the highlighted tinker path (OSC 52)"),
)

ACTION_COMMANDS: tuple[Command, ...] = (
    Command(
        "toggle_mark",
        "space",
        "Mark",
        "Mark or unmark the highlighted checkpoint and move down",
        footer=False,
    ),
    Command(
        "mark_all", "ctrl+a", "Mark all", "Mark every checkpoint the filter shows", footer=False
    ),
    Command("clear_marks", "u", "Unmark", "Clear all marks", footer=False),
    Command("publish", "p", "Publish", "Publish or unpublish the marked or highlighted"),
    Command(
        "ttl",
        "t",
        "TTL",
        "Set or extend the expiry of the marked or highlighted",
        palette_title="TTL: set, extend or expire",
    ),
    Command("delete", "d", "Delete", "Delete the marked or highlighted, after confirmation"),
    Command(
        "download",
        "D",
        "Download",
        "Download the marked or highlighted checkpoints' files into a folder you choose",
    ),
    Command(
        "retry_failed",
        "R",
        "Retry failed",
        "Retry the items the last action failed on",
        footer=False,
    ),
    Command(
        "session_log", "L", "Log", "Show every action of this session and its outcome", footer=False
    ),
    # `K`, not `k`: lower-case k moves the cursor up (vim keys), which the browse issue asks for.
    Command("keep_policy", "K", "Keep policy", "Plan deletions by a keep policy"),
)


def bindings(commands: Iterable[Command]) -> list[Binding]:
    """Bindings for the given commands."""
    return [command.binding() for command in commands]


FOOTER_FIRST = ("quit", "help")


def actions_early(browse: list[BindingType], actions: list[Binding]) -> list[BindingType]:
    """The footer shows bindings in this order, and a narrow terminal cuts its end: quit and
    help, then the actions (p, t, d, K), then the browsing keys."""

    def first(binding: BindingType) -> bool:
        return isinstance(binding, Binding) and binding.action in FOOTER_FIRST

    return [
        *filter(first, browse),
        *actions,
        *(binding for binding in browse if not first(binding)),
    ]


def change_keys(actions: Iterable[str]) -> list[str]:
    """The keys of the given actions."""
    wanted = set(actions)
    return [command.keys for command in ACTION_COMMANDS if command.action in wanted]


def key_label(command: Command) -> str:
    """The key as people type it: '?' rather than 'question_mark'."""
    if command.key_display:
        return command.key_display
    return command.keys
