"""Property tests: every on-disk parser, fed arbitrary or mutated bytes, gives a result or its
documented problem, never an exception. Work is bounded by counts (opcodes, depth, bytes) in the
parsers themselves; no test here looks at the clock (`deadline=None`)."""

from __future__ import annotations

import io
import json
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ckpt_tui.bounded_json import MAX_JSON_DEPTH, BadJsonError, json_depth, parse_json_object
from ckpt_tui.sizes import SafetensorsHeaderError, read_header_from
from ckpt_tui.store.discover import hf_trainer, pretrained
from ckpt_tui.store.discover.pickle_scan import MAX_DEPTH, PickleSummary, scan_pickle
from ckpt_tui.store.discover.torch_zip import read_torch_file
from ckpt_tui.store.files import list_dir
from ckpt_tui.store.runinfo import read_run_info
from ckpt_tui.training.records import read_checkpoints_jsonl
from tests.support import layouts as L

pytestmark = pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")
PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
json_soup = st.text(alphabet='[]{}",:0123456789.eE-+\\ntrufalsNIy ', max_size=300)


def mutations(good: bytes) -> st.SearchStrategy[bytes]:
    """`good` cut short, with bytes overwritten, or with bytes inserted."""

    def apply(edits: list[tuple[int, bytes]], cut: int) -> bytes:
        data = bytearray(good[: max(cut, 1)])
        for position, chunk in edits:
            at = position % (len(data) + 1)
            if position % 2:
                data[at : at + len(chunk)] = chunk
            else:
                data[at:at] = chunk
        return bytes(data)

    edit = st.tuples(st.integers(min_value=0, max_value=10**6), st.binary(min_size=1, max_size=4))
    return st.builds(
        apply, st.lists(edit, max_size=6), st.integers(min_value=1, max_value=len(good))
    )


def nesting(value: object) -> int:
    """How deep containers nest in `value` ([] is 1): the longest path, computed without
    recursion and once per shared container (a cycle counts once)."""
    depth: dict[int, int] = {}
    entered: set[int] = set()
    stack: list[tuple[object, bool]] = [(value, False)]
    while stack:
        item, children_done = stack.pop()
        if not isinstance(item, (dict, list, tuple)) or id(item) in depth:
            continue
        children = list(item.values() if isinstance(item, dict) else item)
        if children_done:
            depth[id(item)] = 1 + max((depth.get(id(c), 0) for c in children), default=0)
        elif id(item) not in entered:
            entered.add(id(item))
            stack.append((item, True))
            stack.extend((child, False) for child in children)
    return depth.get(id(value), 0)


# --- pickle scan ------------------------------------------------------------------------------
OPCODES = [
    b"}", b"]", b"(", b")", b"t", b"l", b"d", b"\x85", b"\x86", b"\x87", b"2", b"0", b"1",
    b"a", b"e", b"s", b"u", b"N", b"\x88", b"K\x01", b"J\x00\x00\x00\x80", b"h\x00", b"q\x00",
    b"\x94", b"R", b"b", b"\x81", b"Q", b"X\x01\x00\x00\x00a", b"ccollections\nOrderedDict\n",
    b"ctorch._utils\n_rebuild_tensor_v2\n", b"ctorch\nFloatStorage\n", b"\x8a\x01\x01", b".",
]  # fmt: skip
opcode_soup = st.lists(st.sampled_from(OPCODES), max_size=80).map(
    lambda ops: b"\x80\x02" + b"".join(ops)
)
GOOD_PICKLE = L.torch_zip(
    {"model": L.model_state(2), "optimizer": L.optimizer_state(2), "epoch": 3}
)


def check_summary(summary: PickleSummary) -> None:
    assert summary.readable or summary.problem
    if summary.readable:
        assert nesting(summary.top) <= MAX_DEPTH


@PROPERTY
@given(st.binary(max_size=400) | opcode_soup)
def test_pickle_scan_never_raises(data: bytes) -> None:
    check_summary(scan_pickle(data))


@PROPERTY
@given(st.data())
def test_pickle_scan_of_a_mutated_torch_pickle(data: st.DataObject) -> None:
    with io.BytesIO(GOOD_PICKLE) as raw, zipfile.ZipFile(raw) as archive:
        pickle = archive.read("archive/data.pkl")
    check_summary(scan_pickle(data.draw(mutations(pickle))))


# --- torch zip --------------------------------------------------------------------------------
@PROPERTY
@given(st.binary(max_size=400) | mutations(GOOD_PICKLE))
def test_torch_file_never_raises(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "model.pt"
        path.write_bytes(data)
        facts = read_torch_file(str(path))
    assert facts.is_torch or facts.problem or facts.truncated


def test_a_zip_of_a_version_zipfile_cannot_read_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    """Found by the property above: zipfile raises NotImplementedError while opening it."""
    directory = GOOD_PICKLE.index(b"PK\x01\x02")  # the first central directory entry
    needs = directory + 6  # "version needed to extract"
    data = GOOD_PICKLE[:needs] + (64).to_bytes(2, "little") + GOOD_PICKLE[needs + 2 :]
    path = tmp_path / "model.pt"
    path.write_bytes(data)
    facts = read_torch_file(str(path))
    assert facts.problem == "a zip file this reader cannot open (zip file version 6.4)"


# --- JSON files -------------------------------------------------------------------------------
@PROPERTY
@given(st.binary(max_size=300) | json_soup.map(str.encode))
def test_bounded_json_gives_an_object_or_its_error(data: bytes) -> None:
    try:
        value = parse_json_object(data, "f.json")
    except BadJsonError as exc:
        assert str(exc).startswith("f.json ")
    else:
        assert isinstance(value, dict) and nesting(value) <= MAX_JSON_DEPTH


@PROPERTY
@given(json_values)
def test_json_depth_is_the_nesting(value: object) -> None:
    assert json_depth(json.dumps(value).encode()) == nesting(value)


def write_json_file(folder: Path, name: str, data: bytes) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)


json_file_contents = (
    st.binary(max_size=200)
    | json_soup.map(str.encode)
    | json_values.map(lambda v: json.dumps(v).encode())
    | st.integers(min_value=1, max_value=3 * MAX_JSON_DEPTH).map(lambda n: b"[" * n + b"]" * n)
)


@PROPERTY
@given(json_file_contents)
def test_run_json_never_raises(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        write_json_file(Path(folder), "run.json", data)
        info = read_run_info(Path(folder), 7)
    assert info.corrupted or info.base_model is not None


@PROPERTY
@given(st.sampled_from(["config.json", "adapter_config.json", "trainer_state.json",
                        "model.safetensors.index.json"]), json_file_contents)  # fmt: skip
def test_model_folder_json_never_raises(name: str, data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        checkpoint = Path(folder) / "checkpoint-100"
        L.safetensors_file(checkpoint / "model.safetensors", L.MODEL_ST)
        write_json_file(checkpoint, "config.json", b'{"_name_or_path": "gpt2"}')
        write_json_file(checkpoint, name, data)
        listing = list_dir(str(checkpoint))
        trained = hf_trainer.examine(str(checkpoint), checkpoint.name, listing)
        plain = pretrained.examine(str(checkpoint), checkpoint.name, listing)
    for found in (trained, plain):
        assert all(isinstance(v, str) for v in found.all_facts().values())


# --- safetensors header -----------------------------------------------------------------------
headers = st.dictionaries(
    st.text(max_size=4),
    st.fixed_dictionaries(
        {"dtype": st.sampled_from(["F32", "BF16", "F4", "X"]),
         "shape": st.lists(st.integers(min_value=-1, max_value=2**70), max_size=40),
         "data_offsets": st.lists(st.integers(min_value=-1, max_value=2**70), max_size=3)}
    ) | json_values,
    max_size=4,
).map(lambda h: json.dumps(h).encode())  # fmt: skip


@PROPERTY
@given(st.binary(max_size=300) | headers.map(lambda h: len(h).to_bytes(8, "little") + h))
def test_safetensors_header_never_raises(data: bytes) -> None:
    try:
        summary = read_header_from(io.BytesIO(data), len(data), "x.safetensors")
    except SafetensorsHeaderError as exc:
        assert exc.reason
    else:
        assert summary.tensor_bytes <= len(data)


# --- checkpoints.jsonl ------------------------------------------------------------------------
lines = st.lists(
    json_file_contents | st.just(b"[" * 100_000) | st.just(b'{"name": "a", "x": 1e999}'),
    max_size=5,
).map(b"\n".join)


@PROPERTY
@given(lines)
def test_checkpoints_jsonl_never_raises(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "checkpoints.jsonl"
        path.write_bytes(data)
        found = read_checkpoints_jsonl(path)
    for record in found.records:
        assert nesting(record.extra) <= MAX_JSON_DEPTH
    assert len(found.records) + len(found.skipped) <= data.count(b"\n") + 1


def test_the_helpers_walk_what_they_claim() -> None:
    assert nesting([[1], {"a": [2]}]) == 3 and nesting(7) == 0
    assert json_depth(b'{"a": "[[[", "b": [[]]}') == 3
    sample: dict[str, Any] = {"x": [1]}
    assert nesting(sample) == 2
