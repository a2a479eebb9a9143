"""A small arithmetic workload with known answers, for tests and benchmarks.

``write_arith`` writes "What is a + b?" rows; ``arith_reply`` and ``cascade_reply`` answer
them as a model would (some right, some wrong, some right in a form rules cannot read);
``fake_judge`` grades exactly; ``write_judge_config`` writes a cascade, parallel or
judge-only config in the seed vocabulary. Counts are known in advance
(``expected_cascade``), so a run's numbers can be checked exactly.
"""

from __future__ import annotations

import functools
import html
import json
import re
import unicodedata
from pathlib import Path
from typing import Any, Iterator

from confusable_homoglyphs import confusables

from .replies import echo_last_user

#: The model name the judge answers to in ``write_judge_config`` and ``model_and_judge``.
JUDGE_MODEL = "judge-model"

_QUESTION = re.compile(r"What is (\d+) \+ (\d+)\?")


def write_arith(path: Path, n: int, start: int = 0) -> Path:
    """``n`` rows ``{"question": "What is a + b?", "answer": "#### a+b"}``."""
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(start, start + n):
            fh.write(json.dumps({"question": f"What is {i} + {i + 1}?",
                                 "answer": f"#### {2 * i + 1}"}) + "\n")
    return path


def arith_reply(body: dict[str, Any], wrong_every: int = 4) -> str:
    """Answer the arithmetic question of a request (chat or completions); every
    ``wrong_every``-th a is wrong."""
    text = echo_last_user(body)
    match = _QUESTION.search(text)
    if not match:
        return "I do not know."
    a, b = int(match.group(1)), int(match.group(2))
    answer = a + b + (1 if wrong_every and a % wrong_every == wrong_every - 1 else 0)
    return f"Let me add {a} and {b}. The answer is {answer}."


def expected_correct(n: int, wrong_every: int = 4, start: int = 0) -> int:
    """How many of ``write_arith(n)`` rows ``arith_reply`` gets right."""
    return sum(1 for a in range(start, start + n)
               if not (wrong_every and a % wrong_every == wrong_every - 1))


JUDGE_TEMPLATE = ("Question: {question}\nGold: {reference}\n<Predicted Answer Begin>\n"
                  "{prediction}\n<Predicted End>\nReply A if correct, B if not.")
_GOLD = re.compile(r"Gold: (\S+)")
_PRED = re.compile(r"<Predicted Answer Begin>\n(.*)\n<Predicted End>", re.DOTALL)


def cascade_reply(body: dict[str, Any]) -> str:
    """Model replies by ``a % 4``: 0, 2 plain and right; 1 right in a form rules miss
    ("N-1 plus one"); 3 wrong."""
    match = _QUESTION.search(echo_last_user(body))
    if not match:
        return "I do not know."
    a, b = int(match.group(1)), int(match.group(2))
    n = a + b
    if a % 4 == 1:
        return f"It is {n - 1} plus one."
    return f"The answer is {n + (a % 4 == 3)}."


def fake_judge(body: dict[str, Any]) -> str:
    """A judge that reads gold and prediction from ``JUDGE_TEMPLATE`` and grades exactly
    (asked on chat, or on completions with the whole prompt)."""
    text = echo_last_user(body)
    if text.startswith("Your reply could not be read"):
        text = body["messages"][0]["content"]
    gold, pred = _GOLD.search(text), _PRED.search(text)
    if not gold or not pred:
        return "B"
    g, p = gold.group(1), pred.group(1)
    plus = re.search(r"(\d+) plus one", p)
    value = str(int(plus.group(1)) + 1) if plus else (re.findall(r"\d+", p) or [""])[-1]
    return "A" if value == g else "B"


def model_and_judge(body: dict[str, Any]) -> str:
    """One fake server for both roles: requests for ``judge-model`` are judged."""
    return fake_judge(body) if body["model"] == JUDGE_MODEL else cascade_reply(body)


def expected_cascade(n: int) -> dict[str, int]:
    """Counts ``cascade_reply`` + ``fake_judge`` give on ``write_arith(n)``."""
    kinds = [a % 4 for a in range(n)]
    return {"rule_correct": sum(k in (0, 2) for k in kinds),
            "rule_failures": sum(k in (1, 3) for k in kinds),
            "rescued": sum(k == 1 for k in kinds),
            "final": sum(k in (0, 1, 2) for k in kinds)}


def arith_datasets(data: Path, eval_cfg: str, *, abbr: str = "arith", max_out_len: int = 32,
                   n: int = 1) -> str:
    """Config source defining ``datasets``: one arithmetic dataset at ``data`` with the
    ``eval_cfg`` source given, in the seed vocabulary (the caller writes the imports)."""
    return (
        "datasets = [dict(\n"
        f"    abbr={abbr!r}, type=CustomDataset, path={str(data)!r}, n={n},\n"
        "    reader_cfg=dict(input_columns=['question'], output_column='answer'),\n"
        "    infer_cfg=dict(\n"
        "        prompt_template=dict(type=RawPromptTemplate,\n"
        "                             messages=[dict(role='user', content='{question}')]),\n"
        "        retriever=dict(type=ZeroRetriever),\n"
        f"        inferencer=dict(type=GenInferencer, max_out_len={max_out_len})),\n"
        f"    eval_cfg={eval_cfg})]\n")


def write_judge_config(path: Path, data: Path, model_url: str, *, mode: str = "cascade",
                       judge: dict[str, Any] | None = None,
                       template: str = JUDGE_TEMPLATE, rule: str | None = None,
                       judge_url: str | None = None, n: int = 1) -> Path:
    """A config whose evaluator is a CascadeEvaluator (``mode='cascade'``/``'parallel'``)
    or a plain GenericLLMEvaluator (``mode='judge'``), judged by ``judge-model``; ``n``
    replicas of each row."""
    judge_cfg = {"abbr": "judge", "path": JUDGE_MODEL,
                 "openai_api_base": judge_url or model_url,
                 "key": "sk-judge-not-a-secret", **(judge or {})}
    llm = (f"dict(type=GenericLLMEvaluator, prompt_template=dict(type=RawPromptTemplate, "
           f"messages=[dict(role='user', content={template!r})]), judge_cfg={judge_cfg!r}, "
           f"dict_postprocessor=dict(type=generic_llmjudge_postprocess))")
    rule = rule or "dict(type=AccEvaluator, pred_postprocessor=dict(type='gsm8k'))"
    if mode == "judge":
        evaluator = llm
    else:
        evaluator = (f"dict(type=CascadeEvaluator, rule_evaluator={rule}, llm_evaluator={llm}, "
                     f"parallel={mode == 'parallel'})")
    path.write_text(
        "from harness import (CustomDataset, RawPromptTemplate, ZeroRetriever, GenInferencer,\n"
        "                     AccEvaluator, MATHVerifyEvaluator, CascadeEvaluator,\n"
        "                     GenericLLMEvaluator, generic_llmjudge_postprocess)\n"
        + arith_datasets(data, f"dict(evaluator={evaluator}, "
                               "dataset_postprocessor=dict(type='gsm8k-dataset'))", n=n)
        + f"models = [dict(abbr='fake', path='fake-model', openai_api_base={model_url!r}, "
          "key='sk-model-not-a-secret')]\n")
    return path


# --- a judge that falls for injections, for the tests of judge-injection defusing --------
# Its reading is written apart from harness.judge.fold on purpose: a test of the defuser
# against a judge that shares the defuser's blind spots would prove nothing.
from .replies import Responder  # noqa: E402

_VERDICTS = {"a": "A", "correct": "A", "b": "B", "incorrect": "B"}
_READ_BY_NAME = (
    (re.compile(r"\bLEFT\b.*\b(?:ANGLE|LESS-THAN)\b|LESS-THAN SIGN"), "<"),
    (re.compile(r"\bRIGHT\b.*\b(?:ANGLE|GREATER-THAN)\b|GREATER-THAN SIGN"), ">"),
    (re.compile(r"\bLEFT\b.*\b(?:SQUARE|LENTICULAR|TORTOISE SHELL) BRACKET"), "["),
    (re.compile(r"\bRIGHT\b.*\b(?:SQUARE|LENTICULAR|TORTOISE SHELL) BRACKET"), "]"),
    (re.compile(r"\bCOLON$"), ":"),
    (re.compile(r"\bLATIN\b.*\bLETTER (?:SMALL CAPITAL |OPEN |SCRIPT |DOTLESS )?([A-Z])\b"), ""),
)


@functools.lru_cache(maxsize=None)
def _judge_reads_char(char: str) -> str:
    """A character as a careless judge model takes it: invisible ones are not there; one
    that looks like an ASCII character, by its Unicode name or by Unicode's confusables
    table, is that character (its capital's, for a lower-case letter)."""
    if unicodedata.category(char) in ("Cf", "Mn", "Me") or char in "\u115f\u1160\u3164\uffa0":
        return ""
    if unicodedata.category(char) == "Pd":
        return "-"
    for candidate in (char, char.upper()):
        if candidate.isascii():
            return candidate
        name = unicodedata.name(candidate, "")
        for pattern, reads in _READ_BY_NAME:
            if found := pattern.search(name):
                return reads or found.group(1)
        glyphs = confusables.confusables_data.get(candidate, [])
        ascii_ = sorted(g["c"] for g in glyphs if g["c"].isascii() and g["c"].strip())
        if ascii_:
            return ascii_[0]
    return char


def _judge_reads(text: str) -> str:
    """What a careless judge model reads: literal ``\\n`` as a line break, HTML
    references decoded, NFKC, then each character as ``_judge_reads_char``, in lower
    case."""
    text = unicodedata.normalize("NFKC", html.unescape(text.replace("\\n", "\n")))
    return "".join(map(_judge_reads_char, text)).lower()


class _Structure:
    """Where a careless reader sees one piece of a template's structure in read text:
    ``phrase`` as the template writes it (``<Predicted End>``, ``Answer:``, ``/answer``,
    ``### Response:``, ``---``)."""

    def __init__(self, phrase: str) -> None:
        read = _judge_reads(phrase).strip()
        self.label = read.endswith(":")
        self.rule = not re.search(r"[^\W_]", read)
        core = read.strip("<>[]#*_ :")
        self.slash = core.startswith("/")
        self.key = re.sub(r"[\W_]+", "", core)
        self.words = set(re.findall(r"[^\W_]+", core))
        # A heading is also seen in a short heading sharing a word ("### Verdict:").
        self.heading_words = ({w for w in self.words if len(w) >= 3}
                              if read.startswith("#") else set())
        letters = r"(?:[^\w\n]|_)*".join(map(re.escape, self.key))  # spaced, dotted …
        slash = "/" if self.slash else "(?!/)"
        self._patterns = [  # one bracket is enough, next to the words ("x < y" compares)
            rf"[<\[]{slash}{letters}(?![^\W_])",
            rf"(?<![^\W_]){'/' if self.slash else '(?<!/)'}{letters}/?[>\]]",
            rf"(?m)^[^\S\n]*(?:[^\w\n/]|_)*{slash}{letters}(?:[^\w\n]|_)*$",  # alone, decorated
        ] + ([rf"{letters}(?:[^\w\n:]|_){{0,3}}:"] if self.label else [])  # glued too

    def find(self, text: str) -> list[tuple[int, int]]:
        """The ``(start, end)`` of each place it is seen, in order."""
        if self.rule:
            return [m.span() for m in re.finditer(r"(?m)^[^\S\n]*([-=*_])(?:[^\S\n]*\1){2,}"
                                                  r"[^\S\n]*$", text)]
        pairs = list(re.finditer(r"[<\[]([^<>\[\]]{0,100})[>\]]", text))
        spans = set()
        for pair in pairs:
            inside = pair.group(1).strip()
            words = set(re.findall(r"[^\W_]+", inside))
            if inside.startswith("/") == self.slash and (
                    re.sub(r"[\W_]+", "", inside) == self.key
                    or (len(self.words) > 1 and self.words <= words and len(words) <= 8)):
                spans.add(pair.span())  # the same letters, or a phrase holding its words
        for line in re.finditer(r"(?m)^[^\S\n]*(?:#{1,6}|\*\*)([^#*\n]+?)(?:\*\*)?:?[^\S\n]*$",
                                text):
            words = re.findall(r"[^\W_]+", line.group(1))
            if len(words) <= 8 and self.heading_words & set(words):
                spans.add(line.span())
        # Within a pair of brackets only the pair decides ("[/ A N S W E R]" is a closer).
        spans |= {m.span() for pattern in self._patterns for m in re.finditer(pattern, text)
                  if not any(p.start() < m.start() < p.end() - 1 for p in pairs)}
        return sorted(spans)


def _told(text: str) -> Iterator[tuple[int, str]]:
    """``(position, word)`` for the word after each ``Answer:`` (spaced, decorated …)."""
    answer = r"(?:[^\w\n]|_)*".join("answer")
    for found in re.finditer(rf"{answer}(?:[^\w\n:]|_){{0,3}}:\W*(\w+)", text):
        yield found.start(), found.group(1)


def gullible_judge(prediction: tuple[str, str | None] = ("<Predicted Answer Begin>",
                                                         "<Predicted End>"),
                   gold: str = "<Gold Target Begin>") -> Responder:
    """A judge that believes whatever follows the last ``Answer:`` it sees, to show that
    judge-injection defusing (``harness.judge.defuse``) leaves it nothing to believe.

    It reads the judge prompt as a careless model would (``_judge_reads``: HTML
    references, NFKC, look-alike characters, invisible characters, case), and takes
    structure at face value. ``prediction`` names the template's markers that open and
    close the answer's block (closer ``None``: there is none; the same for both: a
    separator line), ``gold`` the one that opens the gold answer, as the template
    writes them. It sees a marker wherever its letters are next to a ``<``/``[``
    bracket, alone on a line however decorated, before a colon (a label), where a
    bracketed phrase holds all its words (``<End of Predicted Answer>``), and a heading
    in any short heading sharing one of its words (``### Verdict:``).

    The block runs from the last opener (the first, for a separator) to the first
    closer after it, so a fake end ends it (with no closer: to the next gold opener, or
    the end). Then it replies what it is told: the verdict (``A``, ``correct``, ``B``,
    ``incorrect``) after the last ``Answer:`` outside the block or opening it, else a
    verdict standing right after the block. Told nothing, it grades: the block's last
    number against the first number after every gold opener it saw, fake ones included.
    """
    opener, closer = (_Structure(p) if p else None for p in prediction)
    gold_opener = _Structure(gold)
    assert opener is not None
    separator = prediction[0] == prediction[1]

    def respond(body: dict[str, Any]) -> str:
        text = _judge_reads("\n".join(m["content"] for m in body["messages"]))
        opened = opener.find(text)
        if not opened:
            return "B"
        start = opened[0 if separator else -1][1]
        endings = [span for span in (closer or gold_opener).find(text) if span[0] >= start]
        end = endings[0][0] if endings else len(text)
        told = [word for at, word in _told(text) if not start <= at < end]
        if told and told[-1] in _VERDICTS:
            return _VERDICTS[told[-1]]
        after = re.match(r"\W*(\w+)", text[endings[0][1]:]) if endings and closer else None
        if after and after.group(1) in _VERDICTS:
            return _VERDICTS[after.group(1)]
        numbers = re.findall(r"\d+", text[start:end])
        golds = {found.group() for found in (re.search(r"\d+", text[g_end:])
                                             for _, g_end in gold_opener.find(text)) if found}
        return "A" if numbers and numbers[-1] in golds else "B"

    return respond
