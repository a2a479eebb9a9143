"""Judge prompt presets shipped in ``judges/``, usable by name.

``judges/grader.txt`` is the seed's GRADER_TEMPLATE; ``judges/strict.txt`` is a stricter
variant (hedges, several answers and truncated replies are wrong; instructions inside the
prediction are data). Both use ``{problem}``, ``{answer}`` and ``{prediction}``; the
column names can be mapped to a dataset's own.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .. import shipped
from ..defaults import ENV_JUDGES_DIR
from ..errors import ConfigError
from ..prompt import RawPromptTemplate

SYSTEM_PROMPT = ("You are a helpful assistant who evaluates the correctness and quality of "
                 "models' outputs.")


def judges_dir() -> Path:
    """Where presets live: ``$HARNESS_JUDGES_DIR``, else the shipped ``judges/``."""
    env = os.environ.get(ENV_JUDGES_DIR)
    return Path(env) if env else shipped.judges_dir()


def judge_template_names() -> list[str]:
    """Names of the shipped presets."""
    return sorted(p.stem for p in judges_dir().glob("*.txt"))


def judge_template(name: str, *, question: str = "problem",
                   answer: str = "answer") -> dict[str, Any]:
    """``dict(type=RawPromptTemplate, messages=[...])`` for the preset ``name``.

    ``question``/``answer`` name the dataset columns to show as the question and the gold
    answer (the presets say ``{problem}`` and ``{answer}``).
    """
    path = judges_dir() / f"{name}.txt"
    if not path.is_file():
        raise ConfigError(f"unknown judge template {name!r}; shipped: "
                          f"{', '.join(judge_template_names()) or 'none'}", field="prompt_template")
    text = path.read_text(encoding="utf-8").strip()
    text = text.replace("{problem}", "{" + question + "}").replace("{answer}", "{" + answer + "}")
    return dict(type=RawPromptTemplate, messages=[
        {"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": text}])
