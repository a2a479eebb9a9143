"""Where the shipped dataset configs and judge templates are read from.

In a checkout (and an editable install) they are the top-level ``datasets/`` and
``judges/`` folders beside ``harness/``. A wheel carries them as package data under
``harness/_shipped/`` (``pyproject.toml`` maps them there), read through
:mod:`importlib.resources`. Package data is looked for first: beside an installed
``harness/`` is ``site-packages/``, where ``datasets/`` is Hugging Face's library.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

#: The package-data folder the wheel maps ``datasets/`` and ``judges/`` into.
PACKAGED = "_shipped"


def shipped_dir(name: str) -> Path:
    """The folder of shipped files called ``name`` (``'datasets'`` or ``'judges'``).

    A real directory: configs load their data files relative to their own path, so the
    package must be installed as files (pip's default), not imported from a zip.
    """
    packaged = resources.files("harness").joinpath(PACKAGED, name)
    if isinstance(packaged, Path) and packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[1] / name


def datasets_dir() -> Path:
    """The shipped dataset configs (``*.py``) and their data (``data/``)."""
    return shipped_dir("datasets")


def judges_dir() -> Path:
    """The shipped judge prompt presets (``*.txt``)."""
    return shipped_dir("judges")
