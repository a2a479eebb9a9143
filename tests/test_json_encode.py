"""``harness.json_encode.encoder`` writes what ``json.JSONEncoder.encode`` writes: keys,
request bodies and details rows depend on it byte for byte (a changed key would make a
rerun miss every stored prediction)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from harness.json_encode import encoder
from harness.keys import canonical_json

OBJECTS: list[Any] = [
    {"kind": "prediction", "model": {"endpoint": "http://h:1/v1", "model": "m"},
     "gen": {"max_tokens": 32, "temperature": 0.0, "stop": ["\n\n", "Q:"]}, "replica": 3,
     "messages": [{"role": "user", "content": "Ünïcödé, \u2028 tabs\t \"quotes\" \\ 数学"}]},
    {"b": 1, "a": [True, False, None, 1.5, -0.0, 1e16, 2**70, "x"], 3: "int key",
     "nested": {"z": {"y": []}, "e": {}}},
    "a top-level string with \u00e9 and \x00",
    [math.inf, -math.inf, 0.1, 12345678901234567890.0],
    {"set": {1}, "bytes": b"raw"},  # not JSON: ``default`` decides
]

OPTIONS: list[dict[str, Any]] = [
    {},  # json.dumps's own: request bodies
    {"ensure_ascii": False, "default": str},  # details rows
    {"sort_keys": True, "separators": (",", ":"), "ensure_ascii": False, "default": str},
]


@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize("obj", OBJECTS)
def test_the_encoder_writes_what_json_writes(options: dict[str, Any], obj: Any) -> None:
    expected: str | type[Exception]
    try:
        expected = json.JSONEncoder(**options).encode(obj)
    except TypeError:
        expected = TypeError
    if expected is TypeError:
        with pytest.raises(TypeError):
            encoder(**options)(obj)
    else:
        assert encoder(**options)(obj) == expected


def test_an_encoder_is_reusable_after_an_object_it_cannot_encode() -> None:
    """A failure half-way through an object leaves nothing behind for the next call."""
    dumps = encoder()
    with pytest.raises(TypeError):
        dumps({"a": [1, {"b": object()}]})
    assert dumps({"a": [1, {"b": 2}]}) == '{"a": [1, {"b": 2}]}'


def test_canonical_json_sorts_keys_and_drops_whitespace() -> None:
    assert canonical_json({"b": [1, 2], "a": "é"}) == '{"a":"é","b":[1,2]}'


TEXTS = ['{"question": "2+2?", "answer": "#### 4"}', '{"a": 1}\n', '{"a": 1}\r\n',
         ' {"a": 1}', '{"a": 1} trailing', '{"a": 1}\x0b', '{"a": 1}{"b": 2}', "", "  \n",
         "NaN", "[1, 2", '"\\ud800"', "1e400", '["é", {"k": [null, true, -0.0]}]  ',
         '{"a": "unterminated']


@pytest.mark.parametrize("text", TEXTS)
def test_loads_gives_json_loads_value_or_its_error(text):
    """Dataset rows and stored outcomes are read with ``loads``: a malformed row must be
    reported with json's own message and column, and a valid one read the same."""
    from harness.json_encode import loads

    try:
        expected: Any = ("value", json.loads(text))
    except json.JSONDecodeError as exc:
        expected = ("error", exc.msg, exc.pos)
    try:
        got: Any = ("value", loads(text))
    except json.JSONDecodeError as exc:
        got = ("error", exc.msg, exc.pos)
    assert repr(got) == repr(expected)
