"""Reading numbers the way people write them: separators, signs, decimals, words.

:func:`normalize_numerals` rewrites a text so that every number is plain ASCII with
no thousands separator and no exponent (``2.5e-3``, ``1.5 × 10^6``); :func:`canonical`
then gives one spelling per value (``18.00`` → ``18``, ``-0`` → ``0``, ``.5`` →
``0.5``), used for predictions and golds.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from ._lazy_re import compile_lazily
from ._text import SPECIAL_SPACES, fold_width

_LATEX_GROUP = compile_lazily(r"(?<=\d)(?:\{,\}|\\[,!;: ]|\\text\{,\}|~)(?=\d{3}(?!\d))")
_SPACE_GROUP = compile_lazily(rf"(?<=\d)[{SPECIAL_SPACES}'’_](?=\d{{3}}(?!\d))")
# Groups of exactly three digits after a first group of one to three: 1,000,000.
_COMMA_GROUPS = compile_lazily(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?!\d|,\d)")
# Plain spaces are riskier: a group must not run into a word or hyphen
# ("3 400-gram bags" is three bags, not 3400).
_SPACE_GROUPS = compile_lazily(r"(?<![\d.,])\d{1,3}(?: \d{3})+(?![\w-])")
# What each group pattern needs: a separator between two digits. These start with the
# separator, which the regex engine skips ahead to (then looks back for the digit before
# it), so ruling a text out costs a few times less than the group patterns' look-behinds
# tried at every position, and less than starting with a digit class.
_SEP_BETWEEN_DIGITS = compile_lazily(rf"[{SPECIAL_SPACES}'’_](?<=\d.)(?=\d)")
_COMMA_BETWEEN_DIGITS = compile_lazily(r",(?<=\d,)(?=\d)")
_SPACE_BETWEEN_DIGITS = compile_lazily(r" (?<=\d )(?=\d)")
_FRAC = compile_lazily(r"\\[dt]?frac\s*\{\s*(-?\d+)\s*\}\s*\{\s*(\d+)\s*\}")

NUMBER = compile_lazily(r"-(?<![\w)\].]-)(?:\d+(?:\.\d+)?|\.\d+)(?:/\d+)?(?!\d)"
                        r"|\d(?<![\w.]\d)\d*(?:\.\d+)?(?:/\d+)?(?!\d)"
                        r"|\.(?<![\w.]\.)\d+(?:/\d+)?(?!\d)")
r"""A number after :func:`normalize_numerals`: sign only when not a binary minus (16-3).

``(?:(?<![\w)\].])-)?(?<![\w.])(?:\d+(?:\.\d+)?|\.\d+)(?:/\d+)?(?!\d)`` written with its
first character (sign, digit or point) consumed before the look-behind that checks what
precedes it: the regex engine then tries only the positions that hold one, not every
position with two look-behinds (``bench/README.md``)."""


def normalize_numerals(text: str) -> str:
    """Full-width digits, Unicode minus, every thousands separator and scientific
    notation normalized away.

    Separators handled: comma, plain, thin (U+2009), narrow no-break (U+202F) and
    no-break (U+00A0) spaces, apostrophe, underscore, LaTeX ``{,}`` and ``\\,``.
    ``\\frac{a}{b}`` becomes ``a/b``.
    """
    # Each pass runs only when its trigger character is present: the regexes' look-
    # behinds test every position, and most replies have no separators at all.
    if _SEP_BETWEEN_DIGITS.search(text):
        text = _SPACE_GROUP.sub("", text)  # before folding: these spaces are unambiguous
    text = fold_width(text)
    if "{" in text or "\\" in text or "~" in text:
        text = _LATEX_GROUP.sub("", text)
    if "," in text and _COMMA_BETWEEN_DIGITS.search(text):
        text = _COMMA_GROUPS.sub(lambda m: m.group(0).replace(",", ""), text)
    if _SPACE_BETWEEN_DIGITS.search(text):
        text = _SPACE_GROUPS.sub(lambda m: m.group(0).replace(" ", ""), text)
    if "illion" in text or "thousand" in text:
        text = _MAGNITUDE.sub(_scaled, text)
    if _SCIENTIFIC_CUE.search(text):
        text = _SCIENTIFIC.sub(_expanded, text)
    return _FRAC.sub(r"\1/\2", text) if "frac" in text else text


# "2.5 million" is 2500000: a grader reads the magnitude word as part of the number.
_MAGNITUDE = compile_lazily(r"(?<![\w.])(\d+(?:\.\d+)?)[ \t]*(thousand|million|billion|trillion)\b"
                            r"(?!-)", re.IGNORECASE)  # not "3 thousand-dollar bonds"
_SCALE = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}


def _scaled(m: re.Match[str]) -> str:
    return canonical(str(Decimal(m.group(1)) * _SCALE[m.group(2).lower()]))


_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
_TIMES = r"[ \t]*(?:×|x|\*|·|\\times|\\cdot)[ \t]*"
_POWER_OF_TEN = (r"10[ \t]*(?:(?:\^|\*\*)[ \t]*(?:\{[ \t]*(?P<braced>[-+]?\d+)[ \t]*\}"
                 r"|\((?P<paren>[-+]?\d+)\)|(?P<bare>[-+]?\d+))|(?P<sup>[⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+))")
# A number in scientific notation: "2.5e-3", "1.5 × 10^6", "6.02\times10^{23}", "10⁶". Read
# as one number, not as its mantissa (2.5) or its exponent (a computation's last number).
_SCIENTIFIC = compile_lazily(
    rf"(?<![\w.^])(?:(?P<mantissa>\d+(?:\.\d+)?)[eE](?P<e>[-+]?\d+)"
    rf"|(?:(?P<factor>\d+(?:\.\d+)?){_TIMES})?{_POWER_OF_TEN})(?!\w|\.\d|[ \t]*(?:\^|\*\*))")
# What _SCIENTIFIC needs: an exponent after a digit, or a power of ten. It starts with
# the letter or the "10", which the regex engine skips ahead to.
_SCIENTIFIC_CUE = compile_lazily(r"[eE](?<=\d[eE])[-+]?\d|10[ \t]*(?:\^|\*\*|[⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺])")
# Exponents beyond this write no number: a reply's "1e999999" must not become a
# million digits (nor be read as its mantissa).
_MAX_EXPONENT = 400


def _expanded(m: re.Match[str]) -> str:
    exponent = m.group("e") or m.group("braced") or m.group("paren") or m.group("bare") \
        or m.group("sup").translate(_SUPERSCRIPT)
    if abs(int(exponent)) > _MAX_EXPONENT:
        return "NaN"
    mantissa = Decimal(m.group("mantissa") or m.group("factor") or "1")
    return canonical(str(mantissa.scaleb(int(exponent))))


def canonical(number: str) -> str:
    """One spelling per value: ``'018.50'`` → ``'18.5'``, ``'-0'`` → ``'0'``, ``'6/3'`` → ``'2'``.

    Returns the input stripped when it is not a number.
    """
    raw = number.strip().replace(",", "")
    if raw.isascii() and raw.isdigit() and len(raw) < 20:  # most answers: plain digits
        return str(int(raw))
    if "/" in raw:
        top, _, bottom = raw.partition("/")
        try:
            num, den = Decimal(top), Decimal(bottom)
        except InvalidOperation:
            return raw
        if den == 0:
            return raw
        if num % den == 0:
            return canonical(str(num / den))
        return f"{canonical(top)}/{canonical(bottom)}"
    try:
        value = Decimal(raw)
    except InvalidOperation:
        return raw
    if not value.is_finite():
        return raw
    if value == value.to_integral_value():
        return str(int(value))
    return format(value.normalize(), "f")


# After the first number, an operator means the span is a computation whose result
# comes last ("9 * 2 = 18"), not an answer followed by its explanation.
_OPERATOR = compile_lazily(r"\s*(?:[-+*/×x÷^=]|\\times|\\cdot|\\div)\s*[-$\\(]*\d")
_ASIDE = compile_lazily(r"\([^()]*\)")
NEGATED = compile_lazily(r"(?:\b(?:not|instead\s+of|rather\s+than|nor)|n't)\s+\$?-?\d[\d.,/]*",
                         re.IGNORECASE)
"""A number named only to be rejected: "not 20", "rather than 20", "isn't 20"."""
_OR = compile_lazily(r"(?:[\s(]or\s+(?:maybe\s+|perhaps\s+|possibly\s+)?\$?(?=-?\.?\d)"
                     # "18, maybe 20." (the number ends its sentence: not "18, probably 2
                     # more than last week")
                     r"|,\s*(?:maybe|perhaps|possibly|probably)\s+\$?"
                     r"(?=-?\.?\d[\d,.]*\s*(?:[.;!?)](?!\d)|$))"
                     # "18; 20 is also plausible"
                     r"|[,;]\s*\$?(?=-?\.?\d[\d,.]*\s+(?:is|would\s+be|could\s+be|might\s+be)"
                     r"\s+(?:also|equally)\s+(?:plausible|possible|likely|correct|right|valid)))",
                     re.IGNORECASE)


def hedged(span: str) -> bool:
    """Whether an answer span offers two different numbers as alternatives ("18 or 20",
    "18, maybe 20")."""
    if not _OR.search(span):  # most spans: a search costs a third of an empty finditer
        return False
    for m in _OR.finditer(span):
        before = list(NUMBER.finditer(span, 0, m.start()))
        after = NUMBER.match(span, m.end())
        if before and after and canonical(before[-1].group(0)) != canonical(after.group(0)):
            return True
    return False


def span_value(span: str) -> str | None:
    """The number a short answer span gives, canonical, or None.

    ``"18 dollars."`` → 18; ``"9 * 2 = $18."`` → 18; ``"14, not 12"`` → 14;
    ``"18 (9 eggs times $2)"`` → 18.
    """
    span = NEGATED.sub(" ", _ASIDE.sub(" ", span))
    first = NUMBER.search(span)  # the other numbers matter only to a computation
    if first is None:
        return None
    if _OPERATOR.match(span, first.end()):
        return canonical(list(NUMBER.finditer(span))[-1].group(0))
    return canonical(first.group(0))


_RESULT = compile_lazily(r"=\s*|\b(?i:so|therefore|thus|hence|total\s+is|it'?s|is)\s+")


def retraction_value(span: str, *, result_only: bool = False) -> str | None:
    """The number a correction settles on: the result after the last ``=`` or "so …".

    ``"I made a mistake. She has 9 eggs, so 9 * 2 = $18."`` → 18, while
    ``"actually 14, not 12"`` → 14 (see :func:`span_value`). With ``result_only``,
    None when nothing is stated as a result ("a mistake in step 2" names no answer).
    """
    cleaned = NEGATED.sub(" ", _ASIDE.sub(" ", span))
    cuts = [m.end() for m in _RESULT.finditer(cleaned) if NUMBER.search(cleaned, m.end())]
    if cuts:
        return span_value(cleaned[cuts[-1]:])
    return None if result_only else span_value(cleaned)


# "minus 3" and "negative 3" with digits: a sign, unless a number or a bracket comes
# right before it ("10 minus 3" subtracts).
_SIGN_WORD = compile_lazily(r"(?<![\d)\]}%][ \t])\b(?:minus|negative)[ \t]+(?=\d)", re.IGNORECASE)
# "3 degrees below zero", "3°C below freezing": the number restated as a temperature
# under zero; "below freezing" is that only on the Celsius scale.
_BELOW_ZERO = compile_lazily(
    r"(?<![\w.-])(?P<number>\d+(?:\.\d+)?)(?P<unit>[ \t]*(?:°(?:[ \t]*[CF]\b)?|degrees?\b"
    r"(?:[ \t]+(?:Celsius|Fahrenheit|C|F)\b)?)?)[ \t]+below[ \t]+(?:(?P<zero>zero|0)|freezing)\b",
    re.IGNORECASE)
# A Fahrenheit reading near "below freezing" (which then means below 32).
_FAHRENHEIT = compile_lazily(r"°[ \t]*F\b|\bFahrenheit\b|\bdegrees?[ \t]+F\b", re.IGNORECASE)


def signed_words(text: str) -> str:
    """Signs written in words as a minus sign: "minus 3" and "negative 3" → ``-3``,
    "3 degrees below zero" → ``-3 degrees``, "3°C below freezing" → ``-3°C``.

    A grader reads "−3 °C, i.e. 3 degrees below zero" as one answer, −3; read as digits
    the restatement gave 3 or, "zero" being a number word, 0. "Below freezing" near a
    Fahrenheit reading is left as written: 3 degrees below freezing is then 29 °F.
    """
    if "inus" in text or "egative" in text:
        text = _SIGN_WORD.sub("-", text)
    if "below" in text:
        text = _BELOW_ZERO.sub(lambda m: _below_zero(m, text), text)
    return text


def _below_zero(m: re.Match[str], text: str) -> str:
    if not m.group("zero") and _FAHRENHEIT.search(text, max(0, m.start() - 40), m.end()):
        return m.group(0)
    return f"-{m.group('number')}{m.group('unit')}"


_UNITS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen".split())}
_TENS = {w: 10 * i for i, w in enumerate(
    "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if w != "_"}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_SIGN = {"minus", "negative"}


def words_to_number(words: list[str]) -> tuple[int, int] | None:
    """``(value, words used)`` for a leading English number ("twenty-one apples"), or None.

    Stops at the first word that cannot continue the number; "one three" reads one.
    """
    sign, i = 1, 0
    if words and words[0] in _SIGN:
        sign, i = -1, 1
    total = current = 0
    used = i
    last = None  # kind of the previous number word, to refuse "one three"
    while i < len(words):
        w = words[i]
        if w == "and" and last == "scale":
            i += 1
            continue
        if w in _UNITS and last in (None, "tens", "scale"):
            if last == "tens" and (current % 10 or _UNITS[w] >= 10):
                break
            current += _UNITS[w]
            last = "unit"
        elif w in _TENS and last in (None, "scale"):
            current += _TENS[w]
            last = "tens"
        elif w in _SCALES and last in ("unit", "tens"):
            if _SCALES[w] == 100:
                current *= 100
            else:
                total, current = total + current * _SCALES[w], 0
            last = "scale"
        else:
            break
        i += 1
        used = i
    if last is None:
        return None
    return sign * (total + current), used


_WORD = "|".join((*_UNITS, *_TENS))
# A run of number words, from the same vocabulary words_to_number reads.
_NUMBER_WORD = compile_lazily(
    rf"\b(?:(?:{'|'.join(_SIGN)})\s+)?(?:{_WORD})"
    rf"(?:[\s-]+(?:and\s+)?(?:{_WORD}|{'|'.join(_SCALES)}))*\b", re.IGNORECASE)


_ONE_PRONOUN_BEFORE = compile_lazily(r"(?i:\b(?:the|no|each|this|that|every|any|which|some|"
                                     r"another|a)\s+)$")
_ONE_PRONOUN_AFTER = compile_lazily(r"(?i:\s+(?:of|another|by|at\s+a\s+time|who|that|which)\b)")


def words_to_digits(text: str) -> str:
    """English number words as digits: "one thousand four hundred thirty" → ``1430``,
    "ten degrees below zero" → ``-10 degrees`` (see :func:`signed_words`)."""
    def digits(m: re.Match[str]) -> str:
        words = [w for w in re.split(r"[\s-]+", m.group(0).lower()) if w]
        if words == ["one"] and (_ONE_PRONOUN_BEFORE.search(text, 0, m.start())
                                 or _ONE_PRONOUN_AFTER.match(text, m.end())):
            return m.group(0)  # "no one", "the one who", "one of them"
        read = words_to_number(words)
        if read is None or read[1] != len(words):
            return m.group(0)
        return str(read[0])
    return signed_words(_NUMBER_WORD.sub(digits, text))
