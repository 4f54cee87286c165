"""One store is one backend (issue 23, item 2): two backends that are one store, however
their names and places are spelled, are refused with exit 2 naming both, before anything is
planned or changed. Real stores, real `serve` apps on loopback ports, the real command line."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ckpt_tui.backends.descriptor import Backend
from ckpt_tui.backends.identity import place_key
from ckpt_tui.cli import main
from ckpt_tui.client import Endpoint
from ckpt_tui.locations import machine
from ckpt_tui.server import create_app
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support.live_server import run_server
from tests.support.seed import seed_backend
from tests.support.tui import (
    app_on,
    backend_error,
    connection,
    screen_of,
    settle,
    show_all_checkpoints,
    shown,
)

PER_RUN = 4
ONE_STORE = "are one store"


@pytest.fixture
def folder(tmp_path: Path, clock: FixedClock, quiet_environment: None) -> Path:
    """A store of 2 runs x 4 checkpoints, closed (the commands open it themselves)."""
    root = tmp_path / "x"
    with Store.open(root, clock) as store:
        seed_backend(store, "x", PER_RUN)
    return root


def checkpoint_folders(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.glob("runs/*/weights/*"))


def refused(capsys: pytest.CaptureFixture[str], argv: list[str], *names: str) -> str:
    """Run `argv`; it must exit 2 naming every one of `names`; its stderr."""
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert ONE_STORE in err or "given twice" in err, err
    for name in names:
        assert name in err
    return err


def aliases(root: Path, tmp_path: Path) -> list[str]:
    link = tmp_path / "link-to-x"
    link.symlink_to(root)
    return [f"{root}/../{root.name}", str(link), f"{root}/."]


def test_one_folder_under_two_spellings_is_refused(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = checkpoint_folders(folder)
    for alias in aliases(folder, tmp_path):
        both = ["--local", f"a={folder}", "--local", f"b={alias}"]
        refused(capsys, ["ls", *both], "a", "b")
        prune = ["prune", *both, "--keep-last", "1", "--yes"]
        refused(capsys, prune, "a", "b")
    assert checkpoint_folders(folder) == before  # nothing deleted


def test_a_readonly_backend_and_a_writable_alias_in_the_config_delete_nothing(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's case: `ro` refused as read-only while `rw`, a link to the same folder,
    deleted its checkpoints."""
    link = tmp_path / "rw-link"
    link.symlink_to(folder)
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "ckpt-tui" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        f'[backends.ro]\nlocal = "{folder}"\nreadonly = true\n\n[backends.rw]\nlocal = "{link}"\n'
    )
    before = checkpoint_folders(folder)
    assert len(before) == 2 * PER_RUN
    err = refused(capsys, ["prune", "--keep-last", "1", "--yes"], "ro", "rw")
    assert "the same folder" in err and "read-only" in err
    refused(capsys, ["ls", "--json"], "ro", "rw")
    refused(capsys, ["backends"], "ro", "rw")
    assert checkpoint_folders(folder) == before
    config.write_text(f'[backends.ro]\nlocal = "{folder}"\nreadonly = true\n')
    assert main(["ls", "--json"]) == 0  # one name for it: it opens


@pytest.fixture
def served(folder: Path, clock: FixedClock) -> Iterator[str]:
    """`ckpt-tui serve` of `folder` on a free loopback port: its base URL."""
    with (
        Store.open(folder, clock) as store,
        run_server(create_app(store, sweep_interval=None)) as url,
    ):
        yield url


def test_localhost_and_127_0_0_1_are_one_server(
    served: str, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = served.rsplit(":", 1)[1]
    before = checkpoint_folders(folder)
    spellings = [f"http://localhost:{port}", f"http://LOCALHOST:{port}/", f"http://[::1]:{port}"]
    for other in spellings:
        both = ["--url", f"a={served}", "--url", f"b={other}"]
        refused(capsys, ["ls", *both], "a", "b")
        refused(capsys, ["prune", *both, "--keep-last", "1", "--yes"], "a", "b")
    assert checkpoint_folders(folder) == before


def test_a_url_of_serve_and_a_local_of_its_folder_are_one_store(
    served: str, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only the store id the server reports can tell: refused once the backends answer,
    before any plan; nothing deleted."""
    before = checkpoint_folders(folder)
    both = ["--url", f"srv={served}", "--local", f"here={folder}"]
    err = refused(capsys, ["prune", *both, "--keep-last", "1", "--yes"], "srv", "here")
    assert "store id" in err and "Nothing was planned or deleted" in err
    assert checkpoint_folders(folder) == before
    refused(capsys, ["ls", "--json", *both], "srv", "here")
    refused(capsys, ["backends", *both], "srv", "here")


def test_two_ports_of_one_store_are_one_store(
    folder: Path, clock: FixedClock, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two servers of one store (a tunnel and the direct address look like this)."""
    with Store.open(folder, clock) as store:
        app = create_app(store, sweep_interval=None)
        with run_server(app) as first, run_server(app) as second:
            both = ["--url", f"one={first}", "--url", f"two={second}"]
            err = refused(capsys, ["prune", *both, "--keep-last", "1", "--yes"], "one", "two")
            assert "store id" in err
    assert len(checkpoint_folders(folder)) == 2 * PER_RUN


def test_the_store_id_is_kept_across_restarts(folder: Path, clock: FixedClock) -> None:
    with Store.open(folder, clock) as store, run_server(create_app(store)) as url:
        first = httpx.get(f"{url}/api/v1/healthz").json()["store_id"]
    with Store.open(folder, clock) as store, run_server(create_app(store)) as url:
        assert httpx.get(f"{url}/api/v1/healthz").json()["store_id"] == first
    with Store.open(folder, clock, readonly=True) as store:
        assert store.store_id == first  # a read-only look sees it too
    with Store.open(folder.parent / "other", clock) as other:
        assert other.store_id not in (None, first)


def test_a_browsed_folder_gets_its_id_with_its_metadata(tmp_path: Path, clock: FixedClock) -> None:
    """Looking never writes: a folder with no metadata file has no id until the first change
    makes the file."""
    root = tmp_path / "plain"
    root.mkdir()
    with Store.open(root, clock, create=False, lazy=True) as store:
        derived = store.store_id
        assert derived and not (root / ".ckpt-tui").exists()
        store.create_run("r", "m")
        assert store.store_id == derived  # the id it reported is the one kept
    with Store.open(root, clock, readonly=True) as store:
        assert store.store_id == derived


def unwritten(folder: Path) -> Path:
    """`folder`'s checkpoints as a folder never opened by ckpt-tui (no metadata file)."""
    shutil.rmtree(folder / ".ckpt-tui")
    return folder


def test_a_readonly_server_of_a_folder_never_written_reports_its_id(
    folder: Path, clock: FixedClock, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reviewer's case: `serve --readonly` of a folder with no metadata reported no id,
    so a writable `--local` of that folder deleted what the server refuses to."""
    root = unwritten(folder)
    before = checkpoint_folders(root)
    with (
        Store.open(root, clock, readonly=True) as store,
        run_server(create_app(store, sweep_interval=None)) as url,
    ):
        health = httpx.get(f"{url}/api/v1/healthz").json()
        assert health["store_id"]
        for order in (
            ["--url", f"ro={url}", "--local", f"rw={root}"],
            ["--local", f"rw={root}", "--url", f"ro={url}"],
        ):
            prune = ["prune", *order, "--keep-last", "1", "--yes"]
            err = refused(capsys, prune, "ro", "rw")
            assert "store id" in err
            assert checkpoint_folders(root) == before
        with Store.open(root, clock) as writable:  # writes the metadata: the same id kept
            assert writable.store_id == health["store_id"]
        assert httpx.get(f"{url}/api/v1/healthz").json()["store_id"] == health["store_id"]
        refused(
            capsys,
            ["prune", "--url", f"ro={url}", "--local", f"rw={root}", "--keep-last", "1", "--yes"],
            "ro",
            "rw",
        )
    assert checkpoint_folders(root) == before


def test_a_folder_inside_another_backends_folder_is_refused(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reviewer's case: `rw`, a run folder inside read-only `ro`'s store, deleted a
    checkpoint `ro` keeps (and wrote a `runs/` folder inside ro's run folder)."""
    run_folder = sorted((folder / "runs").iterdir())[0]
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "ckpt-tui" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        f'[backends.ro]\nlocal = "{folder}"\nreadonly = true\n\n'
        f'[backends.rw]\nlocal = "{run_folder}"\n'
    )
    before = checkpoint_folders(folder)
    inside = "is inside"
    for argv in (["prune", "--keep-last", "1", "--yes"], ["ls", "--json"], ["backends"]):
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 2 and inside in err and "ro" in err and "rw" in err, err
    assert checkpoint_folders(folder) == before
    assert not (run_folder / "runs").exists()
    config.unlink()
    link = tmp_path / "link-to-box"
    box = tmp_path / "ov" / "box"
    box.mkdir(parents=True)
    link.symlink_to(box)
    for outer, inner in ((tmp_path / "ov", box), (tmp_path / "ov", link), (box, tmp_path / "ov")):
        code = main(["ls", "--local", f"outer={outer}", "--local", f"inner={inner}"])
        err = capsys.readouterr().err
        assert code == 2 and inside in err and "outer" in err and "inner" in err, err
    side = tmp_path / "ov-side"  # a name that starts like another's is not inside it
    side.mkdir()
    assert main(["ls", "--local", f"a={tmp_path / 'ov'}", "--local", f"b={side}"]) == 0


async def test_the_tui_shows_the_second_of_one_store_as_an_error(
    served: str, folder: Path, clock: FixedClock
) -> None:
    """The app shows the store once: the other backend is an error entry naming both, with no
    rows (nothing can be changed through it)."""
    here = connection(Endpoint.local(folder), "here")
    app = app_on([here, connection(served, "srv")], None, clock)
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot)
        errors = [backend_error(app, name) for name in ("here", "srv")]
        assert [error is None for error in errors].count(True) == 1, errors
        error = next(e for e in errors if e is not None)
        assert ONE_STORE in error and "here" in error and "srv" in error
        failed = "srv" if errors[1] is not None else "here"
        header = str(screen_of(app).query_one("#header-line").render())
        assert f"{failed} ✗" in header
        await show_all_checkpoints(pilot)
        rows = shown(app)
        assert len(rows) == 2 * PER_RUN and {row.backend for row in rows} == {"here", "srv"} - {
            failed
        }


def test_places_compare_by_what_they_are(tmp_path: Path) -> None:
    def url(text: str) -> Backend:
        return Backend("b", "url", text)

    same = [
        "http://127.0.0.1:8751",
        "http://localhost:8751/",
        "http://[::1]:8751",
        "HTTP://127.0.0.2:8751",
    ]
    assert len({place_key(url(text)) for text in same}) == 1
    assert place_key(url("http://h")) == place_key(url("http://H.:80"))
    different = [
        "http://127.0.0.1:8752",
        "https://127.0.0.1:8751",
        "http://10.0.0.1:8751",
        "http://127.0.0.1:8751/x",
    ]
    assert len({place_key(url(text)) for text in [same[0], *different]}) == 5
    assert machine("::ffff:127.0.0.1") == machine("localhost") == "loopback"
    assert place_key(url("http://127.0.0.1:99999")) == ("text", "http://127.0.0.1:99999")


def test_a_folder_and_its_file_url_are_one_store(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`file:///x` is folder x read as a bucket: with `--local x` it is one store (listed and
    planned twice, a change through one around the other's read-only), and a `file://` URL
    of a folder inside x is inside it."""
    before = checkpoint_folders(folder)
    both = ["--local", f"a={folder}", "--local", f"b=file://{folder}"]
    refused(capsys, ["ls", *both], "a", "b")
    refused(capsys, ["prune", *both, "--keep-last", "1", "--yes"], "a", "b")
    assert checkpoint_folders(folder) == before  # nothing deleted
    run_folder = sorted((folder / "runs").iterdir())[0]
    for outer, inner in ((str(folder), f"file://{run_folder}"), (f"file://{folder}", run_folder)):
        code = main(["ls", "--local", f"outer={outer}", "--local", f"inner={inner}"])
        err = capsys.readouterr().err
        assert code == 2 and "is inside" in err and "outer" in err and "inner" in err, err
