"""BBH free-form labels stated as a sentence instead of a word.

BBH's free-form tasks answer with a label (``Yes``/``No``, ``True``/``False``,
``valid``/``invalid``) or a count. Models often close with a sentence instead of the
label: "…, so the argument is not valid.", "…, so the whole expression evaluates to
False.", "So Sherry does not tell the truth.", "…, so we do not return to the starting
point.", "Altogether I have 10 objects." :func:`closing_label` reads such a closing
sentence as the grader does; anything else is None (no answer). Labels in other
languages ("Falsch", "Sí", "Да") are mapped by :data:`FOREIGN_LABELS`.
"""

from __future__ import annotations

import re

from ._lazy_re import compile_lazily

#: Labels in the other languages models answer in, and their BBH spelling.
FOREIGN_LABELS = {
    "wahr": "True", "falsch": "False", "verdadero": "True", "falso": "False", "vrai": "True",
    "faux": "False", "истина": "True", "ложь": "False", "真": "True", "假": "False",
    "ja": "Yes", "nein": "No", "sí": "Yes", "si": "Yes", "oui": "Yes", "non": "No",
    "да": "Yes", "нет": "No", "是": "Yes", "否": "No", "是的": "Yes", "不是": "No",
    "gültig": "valid", "ungültig": "invalid", "válido": "valid", "inválido": "invalid",
    "no válido": "invalid", "valide": "valid", "invalide": "invalid", "non valide": "invalid",
    "有效": "valid", "无效": "invalid",
}

_NEGATION = r"(?:\b(?:not|never|no\s+longer|cannot)\b|n't\b)"
# (pattern of the claim, label when affirmed). Each claim is looked for in the closing
# sentence only; a negation before it in the same clause flips it.
_CLAIMS = [
    (re.compile(r"\b(?:deductively\s+)?valid\b", re.I), "valid", "invalid"),
    (re.compile(r"\binvalid\b", re.I), "invalid", "valid"),
    (re.compile(r"\b(?:evaluates|evaluate|simplifies|reduces)\s+to\s+(true|false)\b", re.I),
     None, None),
    (re.compile(r"\b(?:is|are)\s+(true|false)\s*$", re.I), None, None),
    (re.compile(r"\btell(?:s|ing)?\s+the\s+truth\b", re.I), "Yes", "No"),
    (re.compile(r"\b(?:lies|lying|is\s+a\s+liar)\b", re.I), "No", "Yes"),
    (re.compile(r"\bimplausible\b", re.I), "No", "Yes"),
    (re.compile(r"\bplausible\b", re.I), "Yes", "No"),
    (re.compile(r"\breturn(?:s|ed)?\s+to\s+the\s+(?:starting\s+point|start|origin)\b", re.I),
     "Yes", "No"),
    (re.compile(r"\bunintentional(?:ly)?\b", re.I), "No", "Yes"),
    (re.compile(r"\bintentional(?:ly)?\b", re.I), "Yes", "No"),
]


# A closing sentence that states no label of its own: a question, a plan ("we need to
# decide whether …"), a hypothetical ("If the premises were true, … would be valid"),
# or someone else's claim ("Jerry says Fidel tells the truth").
_NO_CLAIM = compile_lazily(
    r"(?i:\b(?:whether|need\s+to|check|decide|depends|if|would|could|might|suppose|assume"
    r"|says|said|claims|claimed|states|stated|thinks|either)\b)")


def closing_label(sentence: str) -> str | None:
    """The label a closing sentence states with its last claim, or None."""
    if sentence.rstrip().endswith("?") or _NO_CLAIM.search(sentence):
        return None
    claims: list[tuple[int, int, re.Match[str], str | None, str | None]] = []
    for pattern, yes, no in _CLAIMS:
        for m in pattern.finditer(sentence):
            if not any(s <= m.start() < e for s, e, *_ in claims):  # not "plausible" in
                claims.append((m.start(), m.end(), m, yes, no))     # "implausible"
    if not claims:
        return None
    first = min(c[0] for c in claims)
    if re.search(r"\bor\b", sentence[first:], re.I):
        return None  # "so the argument is valid or invalid": a hedge
    start, _, m, yes, no = max(claims, key=lambda c: c[0])
    if yes is None:
        return m.group(1).capitalize()
    clause = re.split(r"[,;:]|\b(?:but|so|because|since)\b", sentence[:start])[-1]
    return no if re.search(_NEGATION, clause, re.I) else yes
