"""The one judge-verdict parser, and the request extras that make judges easy to parse.

OpenCompass has two parsers that disagree (one reads ``'Answer: B'`` as A, the other reads
a paragraph of explanation as "incorrect"). Here there is one, and it is anchored: after
removing decoration (whitespace, a ``<think>`` block, markdown emphasis/code, surrounding
quotes, trailing punctuation) the *whole* reply must be the verdict::

    "A"  "**B**"  "`A`."  "correct"  "INCORRECT"  "A: CORRECT"  "<think>…</think> B"   → A / B
    "\\boxed{A}"  "(A)"  "A)"  "[[B]]"  "A。"  "A：正确"  "B</s>"  "```text\nA\n```"      → A / B
    "Answer: B"  "The answer is A."  "A or B"  "NOT CORRECT"  "A: INCORRECT"  ""         → None

``None`` means *unparsed*: the caller records it as its own status and may re-ask with
``FORMAT_REMINDER``; it is never silently "incorrect".
"""

from __future__ import annotations

import copy
import json
import math
import re
import unicodedata
from collections.abc import Sequence
from typing import Any, Literal

__all__ = [
    "CONSTRAINT_MODES",
    "FORMAT_REMINDER",
    "JSON_FORMAT_REMINDER",
    "Verdict",
    "constraint_params",
    "parse_verdict",
    "verdict_from_json",
    "verdict_probability",
]

#: A judge verdict: ``"A"`` means the prediction is correct, ``"B"`` that it is incorrect.
Verdict = Literal["A", "B"]

#: The follow-up user message sent after a reply that ``parse_verdict`` could not read.
FORMAT_REMINDER = (
    'Your reply could not be read. Reply with exactly one letter: "A" if the prediction '
    'is correct, "B" if it is incorrect. No other text.'
)
#: The same for a judge asked for JSON (``constraint_params("json_schema")``).
JSON_FORMAT_REMINDER = (
    'Your reply could not be read. Reply with exactly this JSON object and no other text: '
    '{"verdict": "A"} if the prediction is correct, {"verdict": "B"} if it is incorrect.'
)

#: Whole-reply words and what they mean; the seed's template asks for A/B, then for
#: CORRECT/INCORRECT, so judges answer with either.
_WORDS: dict[str, Verdict] = {"A": "A", "B": "B", "CORRECT": "A", "INCORRECT": "B",
                              "正确": "A", "错误": "B"}

#: The template's option line echoed back ("A: CORRECT", "(A) CORRECT", "A：正确"); only
#: consistent pairs count.
_PAIR = re.compile(r"\(?([AB])\)?\s*(?:[:).\-\u2013\u2014]\s*|\s+)"
                   r"\(?(CORRECT|INCORRECT|正确|错误)\)?", re.IGNORECASE)
_CONSISTENT_PAIRS = {("A", "CORRECT"), ("B", "INCORRECT"), ("A", "正确"), ("B", "错误")}

#: Reasoning blocks, by the tags models close them with (``<think>``, ``<thinking>``,
#: ``<reasoning>``, Kimi's ``◁think▷``).
_THINK_OPEN = re.compile(r"<(?:think|thinking|reasoning)>|◁think▷", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</(?:think|thinking|reasoning)>|◁/think▷", re.IGNORECASE)
#: End-of-turn tokens a server leaked at the end of a reply.
_END_TOKENS = re.compile(r"(?:<\|(?:im_end|eot_id|endoftext|end)\|>|</s>|<end_of_turn>)+\s*$")
#: A code fence around the whole reply, with or without a language tag.
_FENCE = re.compile(r"```(?:(?P<tag>[\w-]*)[ \t]*\n)?(?P<body>.*?)\n?```", re.DOTALL)
#: Wrappers around a whole verdict: LaTeX boxes and math, brackets.
_WRAPPERS = (("\\boxed{", "}"), ("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"),
             ("[[", "]]"), ("(", ")"), ("[", "]"), ("{", "}"), ("【", "】"))

#: Markdown emphasis and code marks, plus zero-width characters and BOMs (which NFKC keeps).
#: They are removed wherever they are: they never carry meaning in a verdict, and removing
#: them cannot turn a sentence into a bare letter.
_MARKUP = str.maketrans("", "", "*_`\u200b\u200c\u200d\u2060\ufeff")
_QUOTES = (('"', '"'), ("'", "'"), ("\u201c", "\u201d"), ("\u2018", "\u2019"))
_TRAILING_PUNCTUATION = ".!,;:。、"


def parse_verdict(text: str | None) -> Verdict | None:
    """Read a judge reply as ``"A"`` (correct) or ``"B"`` (incorrect); ``None`` if unparsed.

    The whole reply, once stripped of decoration, must be ``A``, ``B``, ``CORRECT``,
    ``INCORRECT`` (any case) or a consistent option line such as ``A: CORRECT``.
    Anything that merely *contains* a verdict (``Answer: B``) is unparsed on purpose:
    guessing which letter the judge meant is how the two OpenCompass parsers diverged.
    """
    if text is None:
        return None
    core = _strip_thinking(unicodedata.normalize("NFKC", text))
    if core is None:
        return None
    return _read(_unfence(_END_TOKENS.sub("", core).strip()))


def _unfence(core: str) -> str:
    """``core`` without a code fence around all of it, or as it is.

    A first line that reads as a verdict is content, not a language tag: ``B`` then
    ``A`` in a fence are two verdicts, not an ``A``.
    """
    fence = _FENCE.fullmatch(core)
    if fence is None:
        return core
    tag, body = fence.group("tag", "body")
    return f"{tag}\n{body}" if tag and _read(tag) is not None else body


def _read(core: str) -> Verdict | None:
    """The verdict that ``core`` (a reply without reasoning, end tokens or fence) is
    once its markup and decoration are peeled, or ``None``."""
    core = _strip_decoration(core.translate(_MARKUP))
    if core.endswith(")") and "(" not in core:  # an option letter: "A)"
        core = core[:-1].rstrip()
    word = _WORDS.get(core.upper())
    if word is not None:
        return word
    pair = _PAIR.fullmatch(core)
    if pair is None:
        return None
    letter, meaning = pair.group(1).upper(), pair.group(2).upper()
    return _WORDS[letter] if (letter, meaning) in _CONSISTENT_PAIRS else None


def _strip_thinking(text: str) -> str | None:
    """Drop reasoning: all before the last closing tag (``</think>`` and the like).

    That covers closed blocks, a block the chat template itself opened (a lone
    ``</think>``), and reasoning that quotes a ``<think>`` of the reply it judges. An
    opening tag after it means the reply was cut mid-thought: there is no verdict yet.
    """
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:
        text = text[closes[-1].end():]
    return None if _THINK_OPEN.search(text) else text


def _strip_decoration(text: str) -> str:
    """Peel whitespace, surrounding quotes and trailing punctuation until nothing changes.

    Repeated because the layers come in any order: ``"A."``, ``"A".``, ``'A' !``,
    ``$\\boxed{A}$``, ``(A)``, ``[[B]]``. A wrapper goes only when it holds the whole
    text, so a verdict inside a sentence stays inside it.
    """
    while True:
        peeled = text.strip().rstrip(_TRAILING_PUNCTUATION).strip()
        for left, right in (*_QUOTES, *_WRAPPERS):
            if (len(peeled) >= len(left) + len(right) and peeled.startswith(left)
                    and peeled.endswith(right)):
                peeled = peeled[len(left):len(peeled) - len(right)]
                break
        if peeled == text:
            return text
        text = peeled


def verdict_from_json(text: str | None) -> Verdict | None:
    """Read a reply made under ``constraint_params("json_schema")``: ``{"verdict": "A"}``.

    The value goes through ``parse_verdict``; any other shape (not JSON, not an object,
    extra or missing keys, a non-string value) is unparsed. Extra keys are refused
    because the schema forbids them: a server that added some did not enforce it.
    """
    if text is None:
        return None
    core = _strip_thinking(text)
    if core is None:
        return None
    core = _unfence(core.strip())
    try:
        data = json.loads(core)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or set(data) != {"verdict"}:
        return None
    value = data["verdict"]
    return parse_verdict(value) if isinstance(value, str) else None


#: Request extras that restrict the judge's reply to the two verdicts, per server kind.
_CONSTRAINTS: dict[str, dict[str, Any]] = {
    # llama.cpp server: a GBNF grammar; after "A" or "B" only end-of-text is allowed.
    "grammar": {"grammar": 'root ::= "A" | "B"'},
    # vLLM (and SGLang's vLLM-compatible API): guided decoding to one of the choices.
    "guided_choice": {"guided_choice": ["A", "B"]},
    # OpenAI structured outputs; read the reply with verdict_from_json.
    "json_schema": {
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": "verdict",
                "strict": True,
                "schema": {
                    "type": "object",
                    "properties": {"verdict": {"type": "string", "enum": ["A", "B"]}},
                    "required": ["verdict"],
                    "additionalProperties": False,
                },
            },
        },
    },
}

#: The valid ``mode`` values of ``constraint_params`` (``None`` means no constraint).
CONSTRAINT_MODES: tuple[str, ...] = tuple(_CONSTRAINTS)


def constraint_params(mode: str | None) -> dict[str, Any]:
    """Extra request parameters that constrain the judge reply to ``A`` or ``B``.

    ``None`` → ``{}``; ``"grammar"`` (llama.cpp), ``"guided_choice"`` (vLLM),
    ``"json_schema"`` (OpenAI ``response_format``). Returns a fresh copy each call, so a
    caller may merge or mutate it. An unknown mode raises ``ValueError``.
    """
    if mode is None:
        return {}
    try:
        return copy.deepcopy(_CONSTRAINTS[mode])
    except KeyError:
        valid = ", ".join(repr(m) for m in CONSTRAINT_MODES)
        message = f"unknown judge constraint mode {mode!r}; valid: {valid} or None"
        raise ValueError(message) from None


def verdict_probability(
    logprobs: Sequence[tuple[Any, ...]] | None, verdict: Verdict
) -> float | None:
    """The judge's probability for ``verdict``, from the first generated token's logprobs.

    ``logprobs`` holds ``(token, logprob, ((alt_token, alt_logprob), ...))`` per token, as
    ``CallResult.logprobs`` does. The chosen verdict's probability is normalised over the
    A/B mass among the first token's alternatives (``" a"``, ``"CORRECT"`` … all count,
    summed per verdict). Without the rival verdict among them, it is plain
    ``exp(logprob)``. ``None`` when there are no logprobs or the first token is not
    ``verdict`` (e.g. the judge opened with reasoning).
    """
    if not logprobs:
        return None
    token, logprob, *rest = logprobs[0]
    if _token_verdict(token) != verdict:
        return None
    alternatives = dict(rest[0]) if rest and rest[0] else {}
    alternatives.setdefault(token, logprob)
    mass: dict[str, list[float]] = {"A": [], "B": []}
    for alt_token, alt_logprob in alternatives.items():
        alt_verdict = _token_verdict(alt_token)
        if alt_verdict is not None:
            mass[alt_verdict].append(float(alt_logprob))
    rival = "B" if verdict == "A" else "A"
    if not mass[rival]:
        return math.exp(logprob)
    return _sigmoid(_logsumexp(mass[verdict]) - _logsumexp(mass[rival]))


def _token_verdict(token: Any) -> Verdict | None:
    """The verdict one token spells on its own (``" A"``, ``"correct"``), else ``None``."""
    return _WORDS.get(token.strip().upper()) if isinstance(token, str) else None


def _logsumexp(values: list[float]) -> float:
    """``log(sum(exp(v)))`` without underflow for very negative logprobs."""
    top = max(values)
    if top == -math.inf:
        return top
    return top + math.log(sum(math.exp(v - top) for v in values))


def _sigmoid(x: float) -> float:
    """``p / (p + q)`` given ``x = log p - log q``, without overflow."""
    if math.isnan(x):  # both masses are zero: nothing to prefer
        return 0.0
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)
