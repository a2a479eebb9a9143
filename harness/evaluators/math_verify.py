"""``MATHVerifyEvaluator``: symbolic equivalence with math-verify, in worker processes.

math-verify guards its parsing and comparison with ``signal.alarm``, which only works in
a process's main thread; the pipeline therefore runs ``score_sample`` in worker
processes (see ``harness.workers``), where a hung check is killed and the sample is
recorded as a timeout. Unlike OpenCompass we call ``verify(gold, target)`` in the order
math-verify defines (it is not symmetric) and give every sample a detail row, also when
the gold cannot be parsed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from .base import EVALUATORS, BaseEvaluator
from .math_fast import fast_detail
from .math_forms import rewrite

#: The error of a sample whose reference math-verify cannot parse.
NO_GOLD = "the reference could not be parsed by math-verify"


@EVALUATORS.register("MATHVerifyEvaluator", "MATHEvaluator")
class MATHVerifyEvaluator(BaseEvaluator):
    """Math answer equivalence (``\\frac{1}{2}`` = ``0.5`` = ``1/2``) via math-verify."""

    needs_worker: bool = True
    timeout: float = 20.0

    def __init__(self, parse_timeout: int = 5, verify_timeout: int = 5, fast: bool = True,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        #: Whether ``fast_score`` decides the checks it can (off: every check runs
        #: math-verify, as for measuring what the fast path saves).
        self.fast = bool(fast)
        self.parse_timeout = int(parse_timeout)
        self.verify_timeout = int(verify_timeout)

    def warm_up(self) -> None:
        """Import math-verify and sympy, then score every :func:`warm_up_pairs` pair in
        this worker (about a second, while the first model requests are out).

        Much of a check's cost is state built on first use and kept: latex2sympy's
        ANTLR prediction cache, math-verify's compiled patterns, sympy's lazily built
        tables. Left to the samples, every worker builds it again from the checks it
        happens to get, so two workers would do more work in all than one process
        (``bench/README.md``, bench_rules.py).
        """
        for prediction, gold in warm_up_pairs():
            self.score_sample(prediction, gold)

    def quiet_timeout(self) -> float | None:
        """The shorter of the parse and verify limits: math-verify ends a check that
        reaches one as unparsed or unequal, so a check that ran this long may be a
        timeout in disguise."""
        limits = [t for t in (self.parse_timeout, self.verify_timeout) if t > 0]
        return float(min(limits)) if limits else None

    def fast_score(self, prediction: Any, reference: Any) -> dict[str, Any] | None:
        """``score_sample``'s detail when it is certain without math-verify (plain
        numbers, answers written like the gold: see ``math_fast``), else ``None``;
        microseconds, in the calling process."""
        return fast_detail(prediction, reference) if self.fast else None

    def score_sample(self, prediction: Any, reference: Any,
                     test_item: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Parse gold and prediction, then ``verify(gold, prediction)``; a check that
        one of math-verify's own time limits cut short has ``outcome: "timeout"``."""
        with _LimitWatch() as limits:
            detail = self._check(prediction, reference)
        if limits.fired:
            detail.update(outcome="timeout", reason=f"math-verify's time limit cut the "
                                                    f"{limits.fired} short")
        return detail

    def _check(self, prediction: Any, reference: Any) -> dict[str, Any]:
        from math_verify import verify

        gold = self._parse_gold(reference)
        detail: dict[str, Any] = {"answer": reference}
        if not gold:
            detail.update(pred=_show(prediction), correct=False, error=NO_GOLD)
            return detail
        pred = _parse(prediction, gold=False, parse_timeout=self.parse_timeout)
        if not pred:
            detail.update(pred="", correct=False)
            return detail
        correct = bool(verify(gold, pred, timeout_seconds=self.verify_timeout))
        detail.update(pred=_show_parsed(pred), correct=correct)
        return detail

    def _parse_gold(self, reference: Any) -> list[Any]:
        """The parsed reference, from this process's cache when it was parsed before."""
        if reference is None or not str(reference).strip():
            return []
        try:
            return list(_parsed_gold(str(reference).strip(), self.parse_timeout))
        except _Unparsed:
            return []


#: Answers of the kinds MATH-style benchmarks ask for, written for the warm-up (taken
#: from no benchmark): integers, decimals, percentages, fractions, roots, multiples of
#: pi, complex numbers, points, intervals, unions, sets, lists, polynomials, equations,
#: differences of symbols, degrees, option letters, words, other bases, vectors, money,
#: powers, logarithms, trigonometry, plus-minus, inequalities, infinity, e, factorials,
#: binomials, scientific notation and sized delimiters.
WARM_UP_ANSWERS = (
    "7", "-12", "2048", "0.75", ".125", "3.5\\%", "\\frac{2}{9}", "\\dfrac{11}{4}",
    "-\\frac{5}{3}", "\\tfrac{1}{6}", "2\\sqrt{7}", "\\frac{\\sqrt{5}}{3}", "\\sqrt[3]{4}",
    "4\\pi", "\\frac{\\pi}{6}", "3 + 2i", "(2, -1)", "(1, \\frac{\\pi}{4})", "[-3, 5)",
    "(-\\infty, 2] \\cup [4, \\infty)", "\\{1, 3\\}", "1, -2", "x^2 + 3x - 4", "y = 2x + 1",
    "a - b", "30^\\circ", "\\text{(B)}", "\\text{east}", "1011_2",
    "\\begin{pmatrix} 1 \\\\ -2 \\end{pmatrix}", "\\$18.90", "10^{6}", "2^{10}", "\\log_2 9",
    "\\sin 20^\\circ", "\\pm 3", "x \\ge 2", "\\infty", "\\frac{e}{2}", "6!", "\\binom{7}{3}",
    "1.2 \\times 10^{3}", "\\left( 3, \\frac{2}{5} \\right)",
)


def warm_up_pairs() -> list[tuple[str, str]]:
    """The (prediction, gold) pairs ``warm_up`` scores: every ``WARM_UP_ANSWERS`` answer
    as gold, answered the ways models answer (boxed inside a sentence, between dollars
    in prose, bare) and once wrongly, with another answer boxed."""
    answers = WARM_UP_ANSWERS
    pairs = []
    for i, gold in enumerate(answers):
        other = answers[(i * 7 + 3) % len(answers)]
        other = answers[i - 1] if other == gold else other
        pairs += [(f"Putting it together, the final answer is $\\boxed{{{gold}}}$.", gold),
                  (f"Therefore the answer is ${gold}$.", gold), (gold, gold),
                  (f"So we get $\\boxed{{{other}}}$.", gold)]
    return pairs


class _LimitWatch(logging.Handler):
    """Notes when math-verify's own time limit ends a parse or a comparison: it then
    returns "unparsed" or "unequal" and only logs a warning, which this handler, on
    math-verify's logger while the check runs, reads."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        #: What the limit cut short ("parsing", "comparison"), ``None`` while it did not fire.
        self.fired: str | None = None
        self._logger = logging.getLogger("math_verify")
        self._level = self._logger.level

    def emit(self, record: logging.LogRecord) -> None:
        if self.fired is None and (m := _LIMIT_FIRED.match(record.getMessage())):
            self.fired = m[1]

    def __enter__(self) -> _LimitWatch:
        self._logger.addHandler(self)
        # A logger silenced above warnings would drop the record before any handler.
        if not self._logger.isEnabledFor(logging.WARNING):
            self._logger.setLevel(logging.WARNING)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._logger.removeHandler(self)
        self._logger.setLevel(self._level)


#: math-verify's warnings when its limit fires (math_verify.parser, math_verify.grader).
_LIMIT_FIRED = re.compile(r"Timeout during (parsing|comparison)")


class _Unparsed(Exception):
    """A reference math-verify could not parse (raised, so ``lru_cache`` keeps no entry:
    a parse that timed out on a busy machine is tried again next time)."""


def _parse(text: Any, *, gold: bool, parse_timeout: int) -> list[Any]:
    """math-verify's parse of an answer or a reply (``[]`` when it finds nothing)."""
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse

    if text is None or not str(text).strip():
        return []
    # Notations math-verify would not equate (0.\overline{3}; a predicted -2 \le x \le 7
    # for a gold [-2, 7]) first; see math_forms.
    text = rewrite(str(text).strip(), intervals=not gold)
    configs = [LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig()]
    # A bare LaTeX answer (MATH-500 golds, or a prediction already extracted by a
    # postprocessor) has no delimiters for math-verify to anchor on; read it as if it
    # were boxed, else math-verify may pick a number out of the middle of it.
    attempts = [f"\\boxed{{{text}}}", text] if (gold or _looks_bare(text)) else [text]
    for candidate in attempts:
        parsed = parse(candidate, extraction_config=configs, parsing_timeout=parse_timeout)
        if parsed:
            return parsed
    return []


@lru_cache(maxsize=4096)
def _parsed_gold(text: str, parse_timeout: int) -> tuple[Any, ...]:
    """Parsing the reference is over half of a check (1.8 of 3.3 ms on the MATH-500
    answers), and references repeat: across the ``n`` replicas of a sample, and across
    samples (MATH-500 has 301 distinct answers in 500). Parsed expressions are immutable
    sympy objects, so each process keeps them; the pool sends checks of one reference
    to the same worker when it can (``WorkerPool.run(key=...)``)."""
    parsed = _parse(text, gold=True, parse_timeout=parse_timeout)
    if not parsed:
        raise _Unparsed(text)
    return tuple(parsed)


_DELIMITERS = ("$", "\\boxed", "\\fbox", "\\(", "\\[")


_TEXT_COMMANDS = re.compile(r"\\(?:text|mathrm|mbox|textbf|operatorname|begin|end)\{[^{}]*\}")


#: A one-word answer written without ``\\text`` (``Evelyn``, ``east``), as a box holds it.
_WORD = re.compile(r"[A-Za-z]+")


def _looks_bare(text: str) -> bool:
    """True for a short expression without delimiters or prose (``\\frac{1}{2}``,
    ``(3, \\pi/2)``, ``\\text{Evelyn}``, ``Evelyn``, a ``pmatrix``, ``\\$36``)."""
    if len(text) > 300:
        return False
    # A word of 4+ letters marks prose, which must not be boxed whole; a word alone
    # is not prose but an answer, as \boxed{Evelyn} reads.
    if _WORD.fullmatch(text):
        return True
    # Words inside \text{...} or environment names are part of an answer, not prose,
    # and an escaped dollar is a currency sign, not a math delimiter.
    core = _TEXT_COMMANDS.sub("", text).replace("\\$", "")
    if any(d in core for d in _DELIMITERS):
        return False
    return not re.findall(r"(?<![\\A-Za-z])[A-Za-z]{4,}", core)


def _show(value: Any) -> str:
    return "" if value is None else str(value)


def _show_parsed(parsed: list[Any]) -> str:
    # math-verify returns [sympy_expr, original_string]; the string is what a reader wants.
    return str(parsed[-1]) if parsed else ""

#: OpenCompass's name for it, so a config that imports it ports.
MATHEvaluator = MATHVerifyEvaluator
