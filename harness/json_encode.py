"""JSON encoding functions built once, and a decoder, for texts handled once per sample.

``json.JSONEncoder.encode`` builds a new C encoder on every call (and a closure with it),
which costs as much as encoding a small object: keys, request bodies and details rows
are all small. :func:`encoder` builds the C encoder once and returns a function with
``JSONEncoder(**options).encode``'s output. :func:`loads` is ``json.loads`` for the
small texts read per sample (dataset rows, stored outcomes), without its Python layers.
:func:`unicode_text` and :func:`lone_surrogate_in` deal with what JSON can say and
Unicode text cannot hold: half a character.
"""

from __future__ import annotations

import json
import json.encoder as _impl
import re
from collections.abc import Callable
from typing import Any


def encoder(**options: Any) -> Callable[[Any], str]:
    """``json.JSONEncoder(**options).encode``, for objects without reference cycles (a
    cycle raises ``RecursionError`` rather than ``ValueError``: nothing checks for one)."""
    enc = json.JSONEncoder(**options)
    make = getattr(_impl, "c_make_encoder", None)
    if make is None or enc.indent is not None:  # no C accelerator (PyPy, say)
        return enc.encode
    quote = _impl.encode_basestring_ascii if enc.ensure_ascii else _impl.encode_basestring
    encode = make(None, enc.default, quote, None, enc.key_separator, enc.item_separator,
                  enc.sort_keys, enc.skipkeys, enc.allow_nan)

    def dumps(obj: Any) -> str:
        return "".join(encode(obj, 0))

    return dumps


_DECODER = json.JSONDecoder()
_WHITESPACE = " \t\n\r"  # JSON's whitespace, which ``json.loads`` allows around a value


def loads(text: str) -> Any:
    """``json.loads(text)``: the same value, or the same ``JSONDecodeError``.

    The C scanner reads a text that starts with its value directly (about a third of
    ``json.loads``'s cost on a dataset row); anything else, an error included, goes
    through ``json.loads`` itself, so every message stays ``json``'s.
    """
    try:
        value, end = _DECODER.raw_decode(text)
    except ValueError:
        return json.loads(text)
    if end != len(text) and text[end:].strip(_WHITESPACE):
        return json.loads(text)  # extra data after the value: json's own error
    return value


# Half of a character written as a UTF-16 surrogate pair: JSON can escape one alone
# ("\\ud83d"), and decoding gives a string no UTF-8 file or SQLite row can hold.
_SURROGATE = re.compile("[\ud800-\udfff]")


def unicode_text(text: str) -> str:
    """``text`` with each lone surrogate as U+FFFD, as a UTF-8 decoder shows a broken
    sequence."""
    if text.isascii():  # O(1): CPython marks a string that is all ASCII
        return text
    return _SURROGATE.sub("\ufffd", text)


def lone_surrogate_in(value: Any) -> bool:
    """Whether a decoded JSON value holds a lone surrogate in any string (keys too)."""
    if isinstance(value, str):
        return not value.isascii() and _SURROGATE.search(value) is not None
    if isinstance(value, dict):
        return any(lone_surrogate_in(k) or lone_surrogate_in(v) for k, v in value.items())
    if isinstance(value, list):
        return any(lone_surrogate_in(v) for v in value)
    return False
