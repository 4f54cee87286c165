"""`--local`: the command line serves a local store in-process and hands the client a transport."""

from __future__ import annotations

from pathlib import Path

import pytest

from ckpt_tui.cli.clients import open_client
from ckpt_tui.client import ConnectionFailed, Endpoint
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support.seed import path_of, seed_store


async def test_local_mode_serves_a_store_in_process(tmp_path: Path, clock: FixedClock) -> None:
    root = tmp_path / "local"
    local = Store.open(root, clock)
    made = seed_store(local, runs=2, per_run=3)
    local.close()
    async with await open_client(Endpoint.local(root)) as client:
        assert client.endpoint.describe() == f"local store {root}"
        listed = await client.list_all_checkpoints(page_size=4)
        assert [c.tinker_path for c in listed] == [path_of(p) for p in reversed(made)]
        await client.delete_checkpoint(listed[0])
        assert len(await client.list_all_checkpoints()) == len(made) - 1


async def test_local_mode_with_no_store_says_so(tmp_path: Path) -> None:
    with pytest.raises(ConnectionFailed) as caught:
        await open_client(Endpoint.local(tmp_path / "missing"))
    assert str(tmp_path / "missing") in caught.value.message
