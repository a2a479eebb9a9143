"""JSON encoding functions built once, for the texts encoded once per sample or request.

``json.JSONEncoder.encode`` builds a new C encoder on every call (and a closure with it),
which costs as much as encoding a small object: keys, request bodies and details rows
are all small. :func:`encoder` builds the C encoder once and returns a function with
``JSONEncoder(**options).encode``'s output.
"""

from __future__ import annotations

import json
import json.encoder as _impl
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
