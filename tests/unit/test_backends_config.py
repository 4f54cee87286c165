"""The config file and which backends the options, the config and the environment open."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ckpt_tui.backends.config import (
    ConfigError,
    KeyProblem,
    config_path,
    load_config,
    parse_config,
)
from ckpt_tui.backends.resolve import (
    SetupError,
    Wanted,
    derived_name,
    resolve,
    split_named,
)
from ckpt_tui.client import DEFAULT_MAX_IN_FLIGHT
from ckpt_tui.client.secret import Secret

GOOD = b"""\
[backends.box1]
url = "http://127.0.0.1:8751/"
api_key_env = "BOX1_KEY"
storage_rate = 0.04
readonly = false

[backends.box2]
url = "http://127.0.0.1:8752"
api_key_file = "~/box2.key"
readonly = true

[backends.scratch]
local = "/data/ckpts"
"""


def test_the_config_path_follows_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert config_path({"XDG_CONFIG_HOME": "/etc/xdg-me"}) == Path(
        "/etc/xdg-me/ckpt-tui/config.toml"
    )
    assert config_path({"XDG_CONFIG_HOME": "relative"}) == tmp_path / ".config/ckpt-tui/config.toml"
    assert config_path({}) == tmp_path / ".config/ckpt-tui/config.toml"


def test_no_file_is_no_backends(tmp_path: Path) -> None:
    assert load_config(tmp_path / "none.toml").backends == ()


def test_a_good_file_names_its_backends_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    config = parse_config(GOOD, tmp_path / "config.toml")
    box1, box2, scratch = config.backends
    assert (box1.name, box1.url, box1.storage_rate, box1.readonly) == (
        "box1",
        "http://127.0.0.1:8751",
        0.04,
        False,
    )
    assert box2.api_key_file == tmp_path / "box2.key" and box2.readonly
    assert scratch.local == Path("/data/ckpts") and scratch.url is None
    assert box1.key({"BOX1_KEY": " tml-1 "}) == (Secret("tml-1"), "$BOX1_KEY")
    with pytest.raises(KeyProblem, match=r"\$BOX1_KEY is not set .*export it"):
        box1.key({})
    with pytest.raises(KeyProblem, match=r"box2\.key .*cannot be read"):
        box2.key({})
    (tmp_path / "box2.key").write_text("tml-2\n")
    assert box2.key({}) == (Secret("tml-2"), str(tmp_path / "box2.key"))


BAD: list[tuple[bytes, str]] = [
    (
        b'[backends.box1]\nurl = "http://127.0.0.1:1"\napi_key = "tml-secret"\n',
        r"line 3: \[backends.box1\] api_key: a key is never written in the config file: put it "
        r"in an environment variable",
    ),
    (
        b'[backends.box1]\nurl = "http://h"\nurll = "x"\n',
        r"line 3: \[backends.box1\] urll: unknown",
    ),
    (b"[backends.box1]\nreadonly = true\n", r"line 1: \[backends.box1\]: give one: url = "),
    (
        b'[backends.b]\nurl = "http://h"\nlocal = "/x"\n',
        r"line 2: \[backends.b\] url: give one",
    ),
    (b'[backends.b]\nlocal = "rel/dir"\n', r"line 2: \[backends.b\] local: give the .*absolute"),
    (
        b'[backends.b]\nlocal = "/x"\napi_key_env = "K"\n',
        r"line 3: \[backends.b\] api_key_env: a local store takes no key",
    ),
    (
        b'[backends.b]\nurl = "http://h"\nstorage_rate = "cheap"\n',
        r"line 3: \[backends.b\] storage_rate: must be a number >= 0",
    ),
    (b'[backends.b]\nurl = "http://h"\nreadonly = "yes"\n', r"readonly: must be true or false"),
    (
        b'[backends.b]\nurl = "http://h"\nmax_in_flight = "32"\n',
        r"line 3: \[backends.b\] max_in_flight: must be a whole number",
    ),
    (b'[backends.b]\nlocal = "/x"\nmax_in_flight = 0\n', r"max_in_flight: must be from 1 to 1024"),
    (b'[backends."box 1"]\nurl = "http://h"\n', r"line 1: \[backends.box 1\]: not a usable"),
    (b'[backend.b]\nurl = "http://h"\n', r": backend: unknown setting"),
    (b"[backends.b\nurl = 1\n", r"not valid TOML: .*line 1"),
    (b"a = " + b"[" * 5000 + b"]" * 5000, r"nested too deeply|not valid TOML"),
]


UNUSABLE_URLS = [
    ('"ftp://h"', r"'ftp://h' .* starts with http://"),
    ('"http://127.0.0.1:99999"', r"its port must be a number from 1 to 65535"),
    (r'"http://h:1/\u0000"', r"'http://h:1/\\x00' .* a control character"),
]


@pytest.mark.parametrize(("url", "message"), UNUSABLE_URLS)
def test_an_unusable_url_is_that_backends_problem(url: str, message: str, tmp_path: Path) -> None:
    """Not the whole file's: the other backends still open (issue 24, item 2)."""
    raw = f'[backends.ok]\nurl = "http://h:1"\n[backends.b]\nurl = {url}\n'.encode()
    ok, bad = parse_config(raw, tmp_path / "c.toml").backends
    assert ok.problem is None and bad.problem is not None
    assert re.search(rf"line 4: \[backends.b\] url: .*{message}", bad.problem), bad.problem
    assert "\x00" not in str(bad.url)
    [setup] = resolve(Wanted(names=("b",)), parse_config(raw, tmp_path / "c.toml"), {})
    assert setup.problem == bad.problem


@pytest.mark.parametrize(("raw", "message"), BAD)
def test_a_bad_file_is_an_error_naming_the_file_line_key_and_fix(
    tmp_path: Path, raw: bytes, message: str
) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(raw)
    with pytest.raises(ConfigError, match=message) as caught:
        load_config(path)
    assert str(caught.value).startswith(str(path))
    assert "tml-secret" not in str(caught.value)


def test_names_are_split_off_only_when_they_are_names() -> None:
    assert split_named("box1=http://127.0.0.1:8751") == ("box1", "http://127.0.0.1:8751")
    assert split_named("http://h/?a=b") == (None, "http://h/?a=b")
    assert split_named("/data/x=y") == (None, "/data/x=y")
    assert split_named("scratch=/data/ckpts") == ("scratch", "/data/ckpts")
    assert derived_name("url", "http://127.0.0.1:8751") == "127.0.0.1-8751"
    assert derived_name("url", "https://box.example") == "box.example"
    assert derived_name("local", "/data/my ckpts") == "my-ckpts"
    assert derived_name("local", "/") == "local"


ENV_TINKER = {"TINKER_API_KEY": "tml-env", "TINKER_BASE_URL": "http://127.0.0.1:8750"}


def names(wanted: Wanted, env: dict[str, str], tmp_path: Path, config: bytes = b"") -> list[str]:
    parsed = parse_config(config, tmp_path / "c.toml") if config else None
    return [s.backend.name for s in resolve(wanted, parsed, env, tmp_path / "no-creds")]


def test_tinker_joins_when_present_and_no_tinker_leaves_it_out(tmp_path: Path) -> None:
    urls = ("box1=http://127.0.0.1:8751", "http://127.0.0.1:8752")
    wanted = Wanted(urls=urls, locals=(str(tmp_path),))
    assert names(wanted, ENV_TINKER, tmp_path) == [
        "tinker",
        "box1",
        "127.0.0.1-8752",
        tmp_path.name,
    ]
    assert names(Wanted(urls=urls, no_tinker=True), ENV_TINKER, tmp_path)[0] == "box1"
    assert names(Wanted(urls=urls), {}, tmp_path) == ["box1", "127.0.0.1-8752"]  # none there


def test_keys_go_only_where_they_belong(tmp_path: Path) -> None:
    one = resolve(
        Wanted(urls=("http://127.0.0.1:8751",), api_key=Secret("tml-box")), None, ENV_TINKER
    )
    tinker, box = one
    assert tinker.endpoint.api_key == Secret("tml-env") and box.endpoint.api_key == Secret(
        "tml-box"
    )
    plain = resolve(Wanted(urls=("http://127.0.0.1:8751",)), None, ENV_TINKER)[1]
    assert plain.endpoint.api_key is None  # never the hosted service's key
    only_tinker = resolve(Wanted(api_key=Secret("tml-flag")), None, {}, tmp_path / "no-creds")
    assert [s.endpoint.api_key for s in only_tinker] == [Secret("tml-flag")]


def test_every_configured_backend_opens_without_url_or_local(tmp_path: Path) -> None:
    env = {"BOX1_KEY": "tml-1"}
    setups = resolve(Wanted(readonly=False), parse_config(GOOD, tmp_path / "c.toml"), env)
    assert [s.backend.name for s in setups] == ["box1", "box2", "scratch"]
    box1, box2, scratch = setups
    assert box1.endpoint.api_key == Secret("tml-1") and box1.backend.storage_rate == 0.04
    assert box2.problem is not None and "box2.key" in box2.problem and box2.backend.readonly
    assert scratch.problem is not None and "/data/ckpts does not exist" in scratch.problem
    with_url = Wanted(urls=("http://127.0.0.1:9",))
    assert names(with_url, {}, tmp_path, GOOD) == ["127.0.0.1-9"]  # the command line wins


def test_a_user_rate_is_per_backend_else_global(tmp_path: Path) -> None:
    config = parse_config(GOOD, tmp_path / "c.toml")
    setups = resolve(Wanted(storage_rate=0.5), config, {"BOX1_KEY": "k"})
    assert [s.backend.storage_rate for s in setups] == [0.04, 0.5, 0.5]


REFUSED: list[tuple[Wanted, str]] = [
    (
        Wanted(urls=("http://127.0.0.1:1", "http://127.0.0.1:2"), api_key=Secret("k")),
        "--api-key is the key of one server, and 2 --url were given",
    ),
    (Wanted(api_key=Secret("k"), no_tinker=True), "but --no-tinker"),
    (
        Wanted(urls=("a=http://127.0.0.1:1", "a=http://127.0.0.1:2")),
        "two backends are named 'a'",
    ),
    (
        Wanted(urls=("a=http://127.0.0.1:1", "b=http://127.0.0.1:1/")),
        "http://127.0.0.1:1 was given twice (as a and b)",
    ),
    (Wanted(urls=("tinker=http://127.0.0.1:1",)), "or pass --no-tinker"),
]


@pytest.mark.parametrize(("wanted", "message"), REFUSED)
def test_conflicting_options_are_refused(wanted: Wanted, message: str, tmp_path: Path) -> None:
    with pytest.raises(SetupError) as caught:
        resolve(wanted, None, ENV_TINKER, tmp_path / "no-creds")
    assert message in str(caught.value)


def test_backend_picks_configured_ones_and_tinker_only_when_named(tmp_path: Path) -> None:
    config = b'[backends.box1]\nurl = "http://127.0.0.1:1"\n[backends.box2]\nurl = "http://127.0.0.1:2"\n'
    picked = Wanted(names=("box2",))
    assert names(picked, ENV_TINKER, tmp_path, config) == ["box2"]  # Tinker not named: left out
    both = Wanted(names=("box2", "tinker", "box1"), urls=("x=http://127.0.0.1:3",))
    assert names(both, ENV_TINKER, tmp_path, config) == ["tinker", "box2", "box1", "x"]
    with pytest.raises(SetupError, match=r"--backend box9: .* names no such backend; known: box1"):
        names(Wanted(names=("box9",)), {}, tmp_path, config)
    with pytest.raises(SetupError, match="the environment has no Tinker connection"):
        names(Wanted(names=("tinker",)), {}, tmp_path, config)
    with pytest.raises(SetupError, match="--backend tinker asks for the Tinker connection"):
        names(Wanted(names=("tinker",), no_tinker=True), ENV_TINKER, tmp_path, config)


def test_a_url_that_is_the_tinker_connections_opens_once(tmp_path: Path) -> None:
    """`TINKER_BASE_URL=URL ckpt-tui --url URL`: one backend, with the key that URL is for."""
    url = ENV_TINKER["TINKER_BASE_URL"]
    [one] = resolve(Wanted(urls=(url,)), None, ENV_TINKER, tmp_path / "no-creds")
    assert one.backend.name == "127.0.0.1-8750" and one.endpoint.api_key == Secret("tml-env")
    [keyed] = resolve(Wanted(urls=(f"me={url}",), api_key=Secret("tml-own")), None, ENV_TINKER)
    assert keyed.backend.name == "me" and keyed.endpoint.api_key == Secret("tml-own")
    config = parse_config(f'[backends.box]\nurl = "{url}"\n'.encode(), tmp_path / "c.toml")
    [configured] = resolve(Wanted(), config, ENV_TINKER, tmp_path / "no-creds")
    assert configured.backend.name == "box" and configured.endpoint.api_key == Secret("tml-env")


def test_max_in_flight_is_per_backend_with_a_default(tmp_path: Path) -> None:
    raw = b'[backends.a]\nurl = "http://h:1"\nmax_in_flight = 4\n[backends.b]\nlocal = "/x"\n'
    config = parse_config(raw, tmp_path / "c.toml")
    assert [b.max_in_flight for b in config.backends] == [4, DEFAULT_MAX_IN_FLIGHT]
    setups = resolve(Wanted(names=("a", "b")), config, {})
    assert [setup.backend.max_in_flight for setup in setups] == [4, DEFAULT_MAX_IN_FLIGHT]
