"""Where a run's files go in its work directory, and names made safe to be paths.

Model and dataset names become path components (``results/MODEL/DATASET.json``), and
some come from outside: a model name is whatever the endpoint's ``/v1/models`` reports.
A name is used as it is only when it is a plain file name; anything else (a ``/``, a
leading dot, ``..``, a control character) is replaced, and a short hash of the original
keeps two different names from landing on the same file. So no name can write outside
the work directory. Standard library only: the report reads these paths too.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

# Kept in a path component: letters and digits of any script, - _ + @ = and single dots
# (a leading dot or a run of dots is replaced).
_UNSAFE = re.compile(r"[^\w.+@=-]|^\.+|\.{2,}")
# File systems allow 255 bytes (not characters) per name: a name may take 200 of them
# (90 CJK characters are 270), which leaves room for ``.jsonl.part`` and the like.
MAX_BYTES = 200
_HASH = 8


def safe_name(name: str) -> str:
    """``name`` if it is a plain, safe file name of at most ``MAX_BYTES`` in UTF-8;
    otherwise a cleaned copy of it, cut to fit, with a hash of the original (``'../../x'``
    → ``'____x-9cdf6a50'``), so two different names never share a file."""
    text = str(name)
    clean = _UNSAFE.sub("_", text)
    if clean == text and text and len(text.encode()) <= MAX_BYTES:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:_HASH]
    # Cut at a byte count, dropping a character split in two.
    head = clean.encode()[:MAX_BYTES - _HASH - 1].decode("utf-8", "ignore")
    return f"{head.strip('.') or '_'}-{digest}"


def result_path(work_dir: str | Path, model: str, dataset: str) -> Path:
    """``WORK_DIR/results/MODEL/DATASET.json``, names made safe."""
    return Path(work_dir) / "results" / safe_name(model) / f"{safe_name(dataset)}.json"


def details_path(work_dir: str | Path, model: str, dataset: str) -> Path:
    """``WORK_DIR/details/MODEL/DATASET.jsonl``, names made safe."""
    return Path(work_dir) / "details" / safe_name(model) / f"{safe_name(dataset)}.jsonl"
