"""One bounded parser for the JSON found in files (run.json, config.json, adapter_config.json,
trainer_state.json, *.safetensors.index.json, the trash's origin.json, safetensors headers and
the lines of checkpoints.jsonl).

Their contents are hostile input. The caller caps the bytes read (`MAX_JSON_BYTES`); here the
nesting is measured before parsing (`"[" * 100000` makes `json.loads` raise RecursionError, and
a merely deep value would later break whatever walks, prints or re-encodes it), and numbers
must be finite and short (`1e999` parses as infinity; a million-digit integer takes long to
convert). `parse_json_object` also wants an object at the top. Anything else is `BadJsonError`,
a `ValueError` with a reason.
"""

from __future__ import annotations

import json
import math
import re
from itertools import accumulate
from pathlib import Path
from typing import Any, NoReturn

from ckpt_tui.regular_files import read_regular

MAX_JSON_BYTES = 16 * 1024 * 1024
"""The most read of one JSON file; a long run's trainer_state.json is a few megabytes."""
MAX_JSON_DEPTH = 64
"""Arrays and objects nested deeper make the file unreadable; real files nest fewer than 10."""
MAX_NUMBER_CHARS = 64

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_NESTING = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")


class BadJsonError(ValueError):
    """A JSON file that cannot be used; the message says why."""


def json_depth(data: bytes) -> int:
    """How deep arrays and objects nest in `data` (brackets inside strings do not count).

    For any text `json.loads` accepts, or any prefix of it, this is at least the depth the
    parser reaches, so checking it first keeps the parser from deep recursion.
    """
    brackets = _STRING.sub(b"", data).translate(_NESTING, _NOT_BRACKET)
    return max(accumulate(memoryview(brackets).cast("b")), default=0)


def parse_json_object(data: bytes, name: str) -> dict[str, Any]:
    """The JSON object in `data` (the contents of file `name`), or BadJsonError."""
    value = parse_json(data, name)
    if not isinstance(value, dict):
        raise BadJsonError(f"{name} holds a JSON {type(value).__name__}, not an object")
    return value


def parse_json(data: bytes, name: str) -> Any:
    """The JSON value in `data` (UTF-8), bounded as above, or BadJsonError."""
    depth = json_depth(data)
    if depth > MAX_JSON_DEPTH:
        limit = f"at most {MAX_JSON_DEPTH}"
        raise BadJsonError(f"{name} nests arrays or objects {depth} deep ({limit})")
    try:
        value = json.loads(
            data.decode("utf-8"),
            parse_int=_int,
            parse_float=_float,
            parse_constant=_constant,
        )
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise BadJsonError(f"{name} is not valid JSON: {exc}") from None
    return value


def read_json_file(path: Path) -> Any:
    """The JSON value in regular file `path` (`open_regular`: a FIFO would hang the read), read
    up to `MAX_JSON_BYTES`; OSError or BadJsonError."""
    data = read_regular(path, MAX_JSON_BYTES)
    if len(data) > MAX_JSON_BYTES:
        raise BadJsonError(f"{path.name} is over the {MAX_JSON_BYTES} byte limit")
    return parse_json(data, path.name)


def _int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise ValueError(f"a number of {len(text)} digits")
    return int(text)


def _float(text: str) -> float:
    value = float(text) if len(text) <= MAX_NUMBER_CHARS else math.inf
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:20]} is out of range")
    return value


def _constant(text: str) -> NoReturn:
    raise ValueError(f"{text} is not a JSON number")
