"""Numbers written in more than one way: a gold and a reply that state the same number
score right, and a number in scientific notation is read as one number.

``gsm8k_postprocess`` writes the number it extracts canonically (``3.0`` → ``3``); a
dataset without a ``dataset_postprocessor`` gets its plain-number golds written the
same way (``number_reference``), else a reply quoting its gold exactly ("3.0" for
``"3.0"``) scored wrong, where OpenCompass, which keeps both as written, scores it right.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness.postprocessors import gsm8k_postprocess
from harness.postprocessors.numbers import number_reference
from harness.testing import FakeOpenAI
from harness.testing.replies import echo_last_user

from .helpers import model_cfg, write_config
from .test_cli import cli, env

# Each row: the gold as the data file holds it, and what the model replies.
ROWS: list[tuple[Any, str]] = [
    ("3.0", "The answer is 3.0"),
    (3.0, "The answer is 3.0"),
    ("2.50", "The answer is 2.50"),
    ("12.00", "The answer is 12.00"),
    ("1,000", "The answer is 1,000"),
    (".5", "The answer is .5"),
    ("007", "The answer is 7"),
    (2.5, "The answer is 2.5e-3"),  # 0.0025, not 2.5
    ("1500000", "The answer is 1.5E6"),
    ("1500000", "The answer is 1.5 \\times 10^{6}"),
    (6, "The answer is 1.5 × 10^6"),  # 1500000, not the exponent
    ("apple", "The answer is apple"),  # not a number: as written, as before
]
RIGHT = [True, True, True, True, True, True, True, False, True, True, False, False]


def _reply(body: dict[str, Any]) -> str:
    index = int(re.search(r"row (\d+)", echo_last_user(body)).group(1))  # type: ignore[union-attr]
    return ROWS[index][1]


async def test_a_reply_stating_its_gold_as_written_scores_right(tmp_path: Path) -> None:
    data = tmp_path / "forms.jsonl"
    data.write_text("".join(json.dumps({"question": f"row {i}", "answer": gold}) + "\n"
                            for i, (gold, _) in enumerate(ROWS)))
    async with FakeOpenAI(responder=_reply) as server:
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(server.base_url)],
                           ref_pp=None)
        result = await anyio.run_process(cli("run", str(cfg), "-w", str(tmp_path / "w"), "-q"),
                                         env=env(), check=False)
    assert result.returncode == 0, result.stderr.decode()
    details = [json.loads(line) for line in
               (tmp_path / "w" / "details" / "fake" / "arith.jsonl").read_text().splitlines()]
    assert [d["correct"] for d in sorted(details, key=lambda d: d["index"])] == RIGHT


@pytest.mark.parametrize(("gold", "written"), [
    ("3.0", "3"), (3.0, "3"), (18, "18"), ("1,000", "1000"), (" 2.50 ", "2.5"),
    ("-0.50", "-0.5"), (1e20, "100000000000000000000"), ("apple", "apple"), ("$5", "$5"),
    (True, True),
])
def test_number_reference_writes_plain_numbers_as_gsm8k_postprocess_does(gold, written):
    assert number_reference(gold) == written
    if isinstance(written, str) and written[:1].isdigit():
        assert gsm8k_postprocess(f"The answer is {gold}.") == written


@pytest.mark.parametrize(("reply", "number"), [
    ("2.5e-3", "0.0025"), ("1e3", "1000"), ("6.02e23", "602000000000000000000000"),
    ("1.5E6", "1500000"), ("1.5×10^6", "1500000"), ("1.5 \\times 10^{6}", "1500000"),
    ("5*10**3", "5000"), ("10^6", "1000000"), ("10⁶", "1000000"), ("1.5×10⁻³", "0.0015"),
    ("-2.5e3", "-2500"), ("10^{-2}", "0.01"), ("3 x 10^2 = 300", "300"),
    ("1e999999", ""),  # no number: not its mantissa, nor a million digits
])
def test_scientific_notation_is_one_number(reply, number):
    assert gsm8k_postprocess(f"The answer is {reply}.") == number
