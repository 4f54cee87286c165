"""No key or password is ever printed, and a key no request can carry is that backend's
error, not a crash (issue 24, items 1, 2 and 4).

Each case runs the real `ckpt-tui` in a process of its own against real servers on loopback
ports, and searches every byte it wrote (stdout and stderr, tracebacks included) for the
secret. The secrets hold a marker (`s3cret`) that no message has reason to contain.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ckpt_tui.cli import main
from ckpt_tui.client.aiohttp_transport import AiohttpTransport
from ckpt_tui.server import create_app
from ckpt_tui.server.tokens import JwtIssuer
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support.live_server import run_server
from tests.support.seed import seed_backend

KEY = "tml-good-key-of-the-boxes"
MARKER = "s3cret"
COMMANDS = (["backends"], ["ls", "--json"], ["prune", "--keep-last", "1", "--json"])


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """An environment of nothing but a temp home, no config file and no training logs."""
    return {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "no-config"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "TINKER_COOKBOOK_RUNS_DIR": str(tmp_path / "no-runs"),
        **extra,
    }


def run_ckpt_tui(argv: list[str], env: dict[str, str]) -> tuple[int, bytes]:
    """`ckpt-tui ARGV` in a process of its own: its exit code and every byte it wrote."""
    done = subprocess.run(
        [sys.executable, "-m", "ckpt_tui", *argv],
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


@dataclass
class Boxes:
    """Two servers that take KEY (`good` holds checkpoints), and where the config goes."""

    good: str
    other: str
    config: Path
    env: dict[str, str]

    def write_config(self, other: str | None, url: str | None = None) -> None:
        """`good` with its key in $GOOD_KEY, and `other` at `url` (default: its own) with
        the key lines `other` (None: only `good`)."""
        text = f'[backends.good]\nurl = "{self.good}"\napi_key_env = "GOOD_KEY"\n'
        if other is not None:
            text += f'\n[backends.other]\nurl = "{url or self.other}"\n{other}\n'
        self.config.write_text(text)

    def run(self, *argv: str, **env: str) -> tuple[int, bytes]:
        """The command's exit code and every byte it wrote (stdout, then stderr)."""
        return run_ckpt_tui(list(argv), {**self.env, **env})


@pytest.fixture
def boxes(tmp_path: Path, clock: FixedClock) -> Iterator[Boxes]:
    with (
        Store.open(tmp_path / "good", clock) as good,
        Store.open(tmp_path / "other", clock) as other,
    ):
        seed_backend(good, "good", 2)
        config = tmp_path / "config-home" / "ckpt-tui" / "config.toml"
        config.parent.mkdir(parents=True)
        env = clean_env(tmp_path, XDG_CONFIG_HOME=str(config.parent.parent), GOOD_KEY=KEY)
        served_good = create_app(good, api_key=KEY, sweep_interval=None)
        served_other = create_app(other, api_key=KEY, sweep_interval=None)
        with run_server(served_good) as good_url, run_server(served_other) as other_url:
            yield Boxes(good_url, other_url, config, env)


def assert_never_shown(output: bytes, *secrets: str) -> None:
    """None of `secrets`, nor the marker they hold, in `output` (as bytes, or escaped)."""
    assert MARKER.encode() not in output, output.decode("utf-8", "replace")
    for secret in secrets:
        assert secret.encode() not in output


def assert_good_loaded(command: list[str], output: bytes) -> None:
    """The healthy backend was listed whole, beside the bad one's error."""
    text = output.decode()
    if command[0] == "backends":
        assert "reachable" in text and "good" in text
    else:
        assert '"name":"good"' in text.replace(" ", "") and "good-run-0" in text


@pytest.mark.parametrize("command", COMMANDS, ids=lambda argv: argv[0])
@pytest.mark.parametrize(
    ("where", "key"),
    [
        ("api_key_file", f"tml-{MARKER}\x00tail"),
        ("api_key_env", f"tml-{MARKER}\rtail"),
        ("credential_cmd", f"tml-{MARKER}\rtail"),
        ("tinker_api_key", f"tml-{MARKER}\x1btail"),
    ],
)
def test_a_key_with_a_control_character_is_an_error_entry_and_never_printed(
    boxes: Boxes, tmp_path: Path, command: list[str], where: str, key: str
) -> None:
    env: dict[str, str] = {}
    if where == "api_key_file":
        (tmp_path / "other.key").write_bytes(key.encode())
        boxes.write_config(f'api_key_file = "{tmp_path / "other.key"}"')
    elif where == "api_key_env":
        boxes.write_config('api_key_env = "OTHER_KEY"')
        env["OTHER_KEY"] = key
    else:  # the Tinker connection, at the other box
        boxes.write_config(None)
        env["TINKER_BASE_URL"] = boxes.other
        if where == "credential_cmd":
            (tmp_path / "key.txt").write_bytes(key.encode())
            env["TINKER_CREDENTIAL_CMD"] = f"cat {tmp_path / 'key.txt'}"
        else:
            env["TINKER_API_KEY"] = key
    code, output = boxes.run(*command, **env)
    assert_never_shown(output, key)
    assert code == 1 and b"Traceback" not in output
    assert b"cannot be sent: it holds a" in output  # a control character, or a line break
    assert_good_loaded(command, output)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda argv: argv[0])
def test_a_key_file_that_is_not_a_key_shows_none_of_its_contents(
    boxes: Boxes, command: list[str]
) -> None:
    """`api_key_file = "/proc/self/environ"`: the process environment is never printed."""
    boxes.write_config('api_key_file = "/proc/self/environ"')
    code, output = boxes.run(*command, SOME_TOKEN=f"tok-{MARKER}-tok")
    assert_never_shown(output, KEY)
    assert code == 1 and b"/proc/self/environ" in output and b"control character" in output
    assert_good_loaded(command, output)


def test_a_non_ascii_api_key_option_is_refused_naming_the_option(boxes: Boxes) -> None:
    key = f"tml-{MARKER}-é"
    for command in COMMANDS:
        code, output = boxes.run("--url", boxes.good, "--api-key", key, *command)
        assert_never_shown(output, key)
        assert code == 2 and b"Traceback" not in output
        assert b"--api-key" in output and b"not ASCII" in output


def test_an_api_key_given_twice_differently_is_refused_without_either(boxes: Boxes) -> None:
    first, second = f"tml-{MARKER}-one", f"tml-{MARKER}-two"
    argv = ["--url", boxes.good, "--api-key", first, "ls", "--api-key", second]
    code, output = boxes.run(*argv)
    assert_never_shown(output, first, second)
    assert code == 2 and b"--api-key was given twice with different values" in output


@pytest.mark.parametrize(
    "where", ["tinker_api_key", "api_key_file", "api_key_env", "command", "tinker_auth_login"]
)
def test_a_non_ascii_key_from_the_environment_or_config_is_one_error_entry(
    boxes: Boxes, tmp_path: Path, where: str
) -> None:
    key = f"tml-{MARKER}-é"
    (tmp_path / "other.key").write_text(key)
    env: dict[str, str] = {}
    if where == "tinker_api_key":
        boxes.write_config(None)
        env = {"TINKER_BASE_URL": boxes.other, "TINKER_API_KEY": key}
    elif where == "api_key_file":
        boxes.write_config(f'api_key_file = "{tmp_path / "other.key"}"')
    elif where == "api_key_env":
        boxes.write_config('api_key_env = "OTHER_KEY"')
        env = {"OTHER_KEY": key}
    elif where == "command":
        boxes.write_config(None)
        command_line = f"cat {tmp_path / 'other.key'}"
        env = {"TINKER_BASE_URL": boxes.other, "TINKER_CREDENTIAL_CMD": command_line}
    else:  # the default key `tinker auth login` stored
        boxes.write_config(None)
        stored = {"version": 1, "default": "me", "keys": {"me": {"name": "me", "key": key}}}
        credentials = tmp_path / "home" / ".tinker" / "credentials.json"
        credentials.parent.mkdir(parents=True)
        credentials.write_text(json.dumps(stored))
        env = {"TINKER_BASE_URL": boxes.other}
    for command in COMMANDS:
        code, output = boxes.run(*command, **env)
        assert_never_shown(output, key)
        assert code == 1 and b"Traceback" not in output
        assert b"not ASCII" in output
        assert_good_loaded(command, output)


def test_a_password_in_a_url_is_refused_and_never_printed(boxes: Boxes) -> None:
    """The choice (README): a URL with user info is refused, wherever it is given."""
    host = boxes.good.removeprefix("http://")
    url = f"http://someone:pw-{MARKER}@{host}"
    boxes.write_config(None)
    for command in COMMANDS:
        code, output = boxes.run("--url", url, "--api-key", KEY, *command)
        assert_never_shown(output, KEY)
        assert code == 2 and b"user name or password" in output and b"--api-key" in output
        code, output = boxes.run(*command, TINKER_BASE_URL=url, TINKER_API_KEY=KEY)
        assert_never_shown(output, KEY)
        assert code != 0 and b"user name or password" in output
    boxes.write_config('api_key_env = "GOOD_KEY"', url)
    for command in COMMANDS:
        code, output = boxes.run(*command)
        assert_never_shown(output, KEY)
        assert code != 0 and b"user name or password" in output


def test_a_refused_key_says_key_refused_and_where_to_fix_it(boxes: Boxes) -> None:
    boxes.write_config('api_key_env = "OTHER_KEY"')
    wrong = f"tml-{MARKER}-wrong"
    code, output = boxes.run("backends", OTHER_KEY=wrong)
    text = output.decode()
    assert_never_shown(output, wrong)
    assert code == 1
    other_line = next(line for line in text.splitlines() if line.startswith("other "))
    assert "KEY REFUSED" in other_line
    assert "the API key from $OTHER_KEY was refused" in text and "Put the right key there" in text
    code, output = boxes.run("ls", OTHER_KEY=wrong)
    assert f"== other: {boxes.other} (key from $OTHER_KEY): KEY REFUSED ==" in output.decode()


def test_a_url_server_asking_for_the_credential_command_says_how_to_give_it_one(
    tmp_path: Path, clock: FixedClock
) -> None:
    with Store.open(tmp_path / "store", clock) as store:
        app = create_app(
            store, api_key=KEY, sweep_interval=None, jwt=JwtIssuer(900), credential_cmd=True
        )
        with run_server(app) as url:
            env = clean_env(tmp_path, TINKER_CREDENTIAL_CMD=f"echo {KEY}")
            code, output = run_ckpt_tui(["--no-tinker", "--url", url, "backends"], env)
    text = output.decode()
    assert code == 1 and "set TINKER_CREDENTIAL_CMD" not in text
    assert "for the Tinker connection only" in text and f"TINKER_BASE_URL={url}" in text


@pytest.mark.usefixtures("quiet_environment")
def test_a_library_error_that_quotes_the_key_is_shown_without_it(
    boxes: Boxes, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """h11 refuses a header by quoting it ("Illegal header value b'tml-...'"): what httpx
    says reaches the user without the quoted value."""

    async def refuse_the_header(self: AiohttpTransport, request: httpx.Request) -> None:
        raise httpx.LocalProtocolError(f"Illegal header value {request.headers['x-api-key']!r}")

    monkeypatch.setattr(AiohttpTransport, "handle_async_request", refuse_the_header)
    key = f"tml-{MARKER}-key"
    for command in COMMANDS:
        code = main(["--no-tinker", "--url", boxes.good, "--api-key", key, *command])
        out, err = capsys.readouterr()
        assert_never_shown((out + err).encode(), key)
        assert code == 1 and "Illegal header value" in out + err


async def refuse_quoting_the_key(request: Request) -> JSONResponse:
    """A server that refuses every key by quoting it back (hostile, or only careless)."""
    sent = request.headers.get("x-api-key", "")
    return JSONResponse({"detail": f"the key {sent} is not ours"}, 401)


ECHO_THE_KEY = Starlette(
    routes=[Route("/{path:path}", refuse_quoting_the_key, methods=["GET", "POST", "DELETE"])]
)


def test_a_server_that_echoes_the_key_does_not_make_it_show(tmp_path: Path) -> None:
    key = f"tml-{MARKER}-echoed"
    with run_server(ECHO_THE_KEY) as url:
        for command in COMMANDS:
            argv = ["--no-tinker", "--url", url, "--api-key", key, *command]
            code, output = run_ckpt_tui(argv, clean_env(tmp_path))
            assert_never_shown(output, key)
            assert code == 1 and b"is not ours" in output
