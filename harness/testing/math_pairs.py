"""(prediction, gold) pairs for math checks: MATH-500 answers answered the ways models
answer them, and numeric rewritings of each answer.

``tests/test_math_fast.py`` holds the fast path (``harness.evaluators.math_fast``) to
math-verify's detail on these pairs and on samples of :func:`random_answers`;
``bench/check_math_fast.py`` checks every pair of two MATH-500 answers and random ones;
``bench/bench_rules.py`` and ``bench/bench_math_fast.py`` score them.
"""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MATH500 = ROOT / "datasets" / "data" / "math500" / "test.jsonl"


def math500_answers(path: Path = MATH500) -> list[str]:
    """The ``answer`` of every MATH-500 row, in file order."""
    return [json.loads(line)["answer"] for line in path.read_text().splitlines() if line]


def reply_pairs(answers: list[str], count: int) -> list[tuple[str, str]]:
    """``count`` (reply, gold) pairs cycling through ``answers``.

    By ``(i + cycle) % 10``: 0-5 a boxed right answer inside a sentence, 6 a right answer
    in prose without a box, 7 a bare right answer, 8-9 a boxed answer of another problem
    (mostly wrong). Up to ``len(answers)`` pairs every answer comes once."""
    pairs = []
    for i in range(count):
        gold = answers[i % len(answers)]
        cycle = i // len(answers)
        kind = (i + cycle) % 10
        if kind <= 5:
            reply = f"Putting it together, the final answer is $\\boxed{{{gold}}}$."
        elif kind == 6:
            reply = f"Therefore the answer is ${gold}$."
        elif kind == 7:
            reply = gold
        else:
            other = answers[(i * 7 + 13 + cycle) % len(answers)]
            reply = f"So we get $\\boxed{{{other}}}$."
        pairs.append((reply, gold))
    return pairs


_PLAIN = re.compile(r"-?(?:\d+(?:\.\d+)?|\\[dt]?frac\{\d+\}\{[1-9]\d*\})")


def _value(text: str) -> Fraction | None:
    text = text.replace(",", "").replace("\\!", "").replace("{,}", "").replace("\\$", "")
    if not _PLAIN.fullmatch(text):
        return None
    sign = -1 if text.startswith("-") else 1
    m = re.search(r"\{(\d+)\}\{(\d+)\}", text)
    return sign * (Fraction(int(m[1]), int(m[2])) if m else Fraction(text.lstrip("-")))


def _decimal(value: Fraction, places: int | None = None) -> str | None:
    """``value`` written as a decimal: exact (``None`` if it does not terminate) or
    rounded to ``places``."""
    if places is None:
        den = value.denominator
        for p in (2, 5):
            while den % p == 0:
                den //= p
        if den != 1:
            return None
        places = 0
        while (value * 10**places).denominator != 1:
            places += 1
    sign = "-" if value < 0 else ""
    scaled = round(abs(value) * 10**places)
    whole, frac = divmod(scaled, 10**places)
    return f"{sign}{whole}" + (f".{frac:0{places}d}" if places else "")


def _grouped(text: str, sep: str = ",") -> str:
    m = re.fullmatch(r"(-?)(\d+)(\.\d+)?", text)
    if m is None:
        return text
    digits = m[2]
    groups: list[str] = []
    while len(digits) > 3:
        groups.insert(0, digits[-3:])
        digits = digits[:-3]
    return m[1] + sep.join([digits, *groups]) + (m[3] or "")


def numeric_variants(gold: str) -> list[str]:
    """Predictions a model might give for ``gold``: for a plain number, the same value
    written otherwise (separators, decimals, fractions, trailing zeros, a Unicode minus,
    dollars, units, percent), values near it and far from it; for any answer, spacing
    and ``\\dfrac`` variants."""
    out = [gold, gold + " ", gold.replace(" ", ""), gold.replace("\\frac", "\\dfrac"),
           gold.replace("\\dfrac", "\\frac"), f"${gold}$"]
    value = _value(gold.strip())
    if value is None:
        return out
    exact = _decimal(value)
    plain = exact if exact is not None else None
    forms = [f"\\frac{{{value.numerator}}}{{{value.denominator}}}",
             f"{value.numerator}/{value.denominator}",
             f"\\dfrac{{{value.numerator}}}{{{value.denominator}}}"]
    if value < 0:
        forms.append(f"-\\frac{{{-value.numerator}}}{{{value.denominator}}}")
    if plain is not None:
        forms += [plain, _grouped(plain), _grouped(plain, "{,}"), _grouped(plain, ",\\!"),
                  _grouped(plain, " "), plain + ("0" if "." in plain else ".0"),
                  plain + (".00" if "." not in plain else "00"), "\\$" + plain,
                  plain.replace("-", "−"), plain + " \\text{ cm}", plain + " cm",
                  plain + "\\%", "+" + plain, plain + "."]
        if plain.startswith("0."):
            forms.append(plain[1:])
    else:
        forms += [_decimal(value, p) or "" for p in (2, 6, 7, 9)]
    for delta in (Fraction(1), Fraction(-1), Fraction(1, 10**5), Fraction(1, 10**7),
                  Fraction(1, 10**9)):
        near = _decimal(value + delta, 9)
        if near is not None:
            forms.append(near.rstrip("0").rstrip(".") if "." in near else near)
    forms += [str(-value) if value.denominator == 1 else f"-{gold}", str(value * 10)]
    return out + [f for f in forms if f]


def random_answers(count: int, seed: int = 0) -> list[str]:
    """``count`` random answers in the LaTeX ``harness.evaluators.math_values`` reads
    and just outside it (mixed numbers, juxtaposed names, chained powers, negative
    roots, letters latex2sympy may read as constants), for holding the fast path's
    "certainly apart" decisions to math-verify's beyond the benchmark's own answers."""
    import random

    rng = random.Random(seed)
    letters = "abcxyzkmnrt" + "eij"

    def number() -> str:
        return rng.choice([str(rng.randint(0, 12)), str(rng.randint(13, 999)),
                           f"{rng.randint(0, 9)}.{rng.randint(0, 99)}", "\\pi ",
                           f"\\frac{{{rng.randint(1, 9)}}}{{{rng.randint(1, 9)}}}"])

    def atom(depth: int) -> str:
        kind = rng.randrange(8 if depth < 2 else 4)
        if kind <= 1:
            return number()
        if kind == 2:
            return rng.choice(letters)
        if kind == 3:
            return f"{number()}{rng.choice(letters)}"
        if kind == 4:
            return f"\\frac{{{expression(depth + 1)}}}{{{expression(depth + 1)}}}"
        if kind == 5:
            index = rng.choice(["", "[3]", "[2]"])
            return f"{rng.randint(1, 5)}\\sqrt{index}{{{expression(depth + 1)}}}"
        if kind == 6:
            return f"{atom(depth + 1)}^{rng.choice(['2', '3', '{2}', '{-1}', '{1/2}', '0'])}"
        return rng.choice([f"{number()}\\frac{{1}}{{2}}", f"{atom(depth + 1)}^2^3",
                           f"{number()} {number()}", "xy", f"({expression(depth + 1)})"])

    def expression(depth: int = 0) -> str:
        parts = [atom(depth) for _ in range(rng.randint(1, 3))]
        ops = [rng.choice([" + ", " - ", " \\cdot ", "\\times ", " "]) for _ in parts[1:]]
        text = parts[0] + "".join(op + part for op, part in zip(ops, parts[1:], strict=True))
        return ("-" if rng.random() < 0.2 else "") + text

    out = []
    for _ in range(count):
        if rng.random() < 0.2:
            items = [number() for _ in range(rng.randint(2, 3))]
            out.append(rng.choice("([") + ", ".join(items) + rng.choice(")]"))
        else:
            out.append(expression())
    return out
