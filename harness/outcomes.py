"""The store of final sample outcomes: a rerun rebuilds a scored sample from one row.

A sample's result is a function of its scoring inputs: the dataset's scoring
configuration, the code that scores, the stored prediction and the dataset row. When
none of them changed, a rerun need not extract, rule-check, render the judge prompt
and look its verdict up again: it reads the outcome stored under a key of all of them
(``outcome_keys``) and rebuilds the ``SampleResult`` from it.

What the key covers:

- the dataset's **scoring fingerprint** (``scoring_fingerprint``, once per run): a
  digest of harness's own source (every ``harness/**/*.py``), the installed
  distributions and the Python version, the dataset's ``output_column`` and its
  ``eval_cfg`` (postprocessors, evaluator and every keyword argument, nested ones
  included), and for a judged dataset the resolved judge (endpoint identity, model,
  generation parameters, API, template, constraint and re-ask settings; never its key);
- the stored prediction itself (text, finish reason, reasoning), not its prediction
  key: a stored prediction can be replaced;
- the dataset row, every field in order (postprocessors, evaluators and judge templates
  may read any of them), and the replica.

A dataset is **not cacheable**, and is scored every run as before, when its scoring
names a callable that is not harness's own (a function or class of the user's config
or of another module: its code can change without the fingerprint seeing it), when its
evaluator runs programs (executions have their own store) or it is scored by
likelihood (PPL), and in ``--mode infer``.

Only final, reproducible results are stored (``STORED_STATUSES``): never a pending
sample, a timeout, or a math-verify check that ran long enough for one of its own time
limits to have cut it short (``Scorer``). A judged sample's row keeps the rule layer's
result, the judge messages and the verdict key; a rerun takes the verdict from the
verdicts table and combines it as a verdict lookup would (only if it serves the judge,
``JudgeRunner.serves``), so it shows exactly what the store holds. Outcomes are
derived data: losing rows only costs re-scoring.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .json_encode import encoder, loads
from .keys import KeyTemplate, content_key
from .records import JudgeRequest, OutcomeRow, Sample, SampleResult

if TYPE_CHECKING:
    from .config import DatasetSpec
    from .judge.runner import JudgeRunner

#: Final statuses a stored outcome may have: scored, and the same on every run. A
#: timeout is timing-dependent and every pending status is retried or re-checked.
STORED_STATUSES: frozenset[str] = frozenset({"ok", "extract_failed", "empty_reply"})

#: Judge verdicts a stored outcome combines with: paid for and final.
FINAL_VERDICTS: frozenset[str] = frozenset({"ok", "unparsed"})

#: The directory of harness's own code: callables defined under it are fingerprinted by
#: ``source_digest``; any other is the user's.
HARNESS_DIR = Path(__file__).resolve().parent

# Keys in the order written (a details row shows them in that order); ``_plain`` lets
# only values JSON gives back exactly reach it.
_ENCODE = encoder(ensure_ascii=False, separators=(",", ":"))


class NotCacheable(Exception):
    """The scoring of a dataset depends on something the fingerprint cannot see."""


@functools.cache
def source_digest() -> str:
    """sha256 of every ``harness/**/*.py`` file (path and bytes, sorted by path): an
    editable install changes without a version bump. Read once per process."""
    digest = hashlib.sha256()
    files = sorted(HARNESS_DIR.rglob("*.py"))
    if not files:  # installed without sources: nothing to tell one version from another
        raise NotCacheable("harness's source files are not installed")
    for path in files:
        digest.update(path.relative_to(HARNESS_DIR).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


@functools.cache
def environment() -> dict[str, Any]:
    """The Python version and every installed distribution (name and version).

    Every one, not a list of those scoring imports: math-verify alone pulls in sympy,
    latex2sympy2_extended, antlr4 and mpmath, and an unrelated upgrade only costs one
    re-scoring. Read from the names of the ``*.dist-info``/``*.egg-info`` folders on
    ``sys.path`` (``importlib.metadata`` costs more to import than this whole scan).
    harness's own is left out: its code is ``source_digest``'s.
    """
    found: set[str] = set()
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        found.update(name for name in names if name.endswith((".dist-info", ".egg-info"))
                     and not name.lower().startswith("harness-"))
    return {"python": [sys.implementation.name, *sys.version_info[:3]],
            "distributions": sorted(found)}


def _own(obj: Any) -> bool:
    """Whether ``obj`` is a function or class defined in harness's own source files.

    A function is judged by where its code is, not by its ``__module__``, which a
    wrapper (``functools.wraps``) copies from what it wraps.
    """
    code = getattr(obj, "__code__", None)
    if code is not None:
        filename = code.co_filename
    elif inspect.isclass(obj):
        filename = getattr(sys.modules.get(obj.__module__), "__file__", None)
    else:
        return False
    if not filename:
        return False
    return Path(os.path.realpath(filename)).is_relative_to(HARNESS_DIR)


def _registered(name: str) -> None:
    """Raise ``NotCacheable`` if ``name`` is registered to a callable not of harness:
    a name the user registered stands for the user's code."""
    from .evaluators.base import EVALUATORS
    from .postprocessors import POSTPROCESSORS

    for registry in (POSTPROCESSORS, EVALUATORS):
        if name in registry and not _own(registry.get(name)):
            raise NotCacheable(f"{name!r} is registered to code outside harness")


def describe(value: Any) -> Any:
    """A JSON value standing for a scoring configuration (raw ``eval_cfg``), for the
    fingerprint; ``NotCacheable`` if some part of it could change unseen.

    harness's own functions and classes stand as their qualified names (their code is
    in ``source_digest``), a closure with what it captured (a wrapper the function it
    wraps, a factory's product what the factory was given); any other callable or
    object is not cacheable. Tuples are told
    from lists, as a postprocessor may tell them apart. ``judge_cfg`` is left out: its
    key must never be hashed into a stored key, and the resolved judge is fingerprinted
    instead (``scoring_fingerprint``).
    """
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        _registered(value)
        return value
    if isinstance(value, Mapping):
        if not all(isinstance(k, str) for k in value):
            raise NotCacheable("a configuration dict with keys that are not strings")
        return {k: describe(v) for k, v in value.items() if k != "judge_cfg"}
    if isinstance(value, list):
        return [describe(v) for v in value]
    if isinstance(value, tuple):
        return {"tuple": [describe(v) for v in value]}
    if inspect.isclass(value) and _own(value):
        return {"harness": f"{value.__module__}.{value.__qualname__}"}
    if inspect.isfunction(value) and _own(value):
        named = {"harness": f"{value.__module__}.{value.__qualname__}",
                 "line": value.__code__.co_firstlineno}
        if value.__closure__:  # a wrapper's or a factory's: what it was made with counts
            named["closure"] = [_cell(cell, value) for cell in value.__closure__]
        return named
    raise NotCacheable(f"{value!r} is not harness's own")


def _cell(cell: Any, owner: Any) -> Any:
    """What a closure of harness captured (``describe``), its own function by name."""
    try:
        content = cell.cell_contents
    except ValueError:  # an empty cell: the closure is not finished being made
        raise NotCacheable(f"{owner!r} has an empty closure cell") from None
    return "<itself>" if content is owner else describe(content)


def _judge(runner: JudgeRunner) -> dict[str, Any]:
    """What a judged dataset's verdicts depend on: the resolved judge (identity, never
    its key), its generation parameters and settings, and its template as resolved
    (a preset named in the config is read from a file)."""
    spec = runner.spec
    template = runner.evaluator.template
    return {"identity": runner.identity, "gen": runner.gen_params, "api": runner.api,
            "constrain": spec.constrain, "logprobs": spec.logprobs,
            "max_reasks": spec.max_reasks, "template": type(template).__qualname__,
            "messages": [dict(m) for m in template.messages]}


def scoring_fingerprint(dataset: DatasetSpec, judge: JudgeRunner | None) -> str | None:
    """The part of every outcome key of ``dataset`` that is the same for all its
    samples, or ``None`` when its outcomes are not cached (see the module docstring)."""
    evaluator = dataset.evaluator
    if (evaluator is None or dataset.eval_cfg is None or dataset.ppl is not None
            or evaluator.executes):
        return None
    try:
        return content_key("scoring", code=source_digest(), env=environment(),
                           output_column=dataset.output_column,
                           eval_cfg=describe(dataset.eval_cfg),
                           judge=_judge(judge) if judge is not None else None)
    except (NotCacheable, RecursionError):  # closures that capture one another
        return None


def outcome_keys(fingerprint: str) -> KeyTemplate:
    """The keys of a dataset's outcomes, of ``(replica, row, prediction)``: the scoring
    fingerprint (``scoring_fingerprint``), the replica, the whole row in order and the
    prediction as stored (text, finish reason, reasoning)."""
    return KeyTemplate("outcome", ("replica", "row", "prediction"), scoring=fingerprint)


def _fields(result: SampleResult) -> list[Any]:
    """What a stored outcome holds of a result: all but the sample's own fields (its
    identity, prompt and prediction) and what marks a reuse (``cached``)."""
    return [result.status, result.extracted, result.reference, result.correct,
            result.error, result.details, result.rule_correct, result.cause]


#: Types JSON gives back as they were (``bool`` is an ``int`` to JSON's encoder, and
#: comes back as a ``bool``); a subclass of one of them does not (it comes back as its
#: base type), nor does a tuple (a list).
_PLAIN = frozenset({str, int, float, bool, type(None)})


def _plain(value: Any) -> bool:
    """Whether JSON gives ``value`` back exactly: plain values, lists and dicts with
    string keys of them, and no NaN (never equal to itself, so never "the same")."""
    kind = type(value)
    if kind in _PLAIN:
        return value == value  # False only for NaN
    if kind is list:
        for item in value:  # loops, not all(): this runs for every fresh result
            if not _plain(item):
                return False
        return True
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str or not _plain(item):
                return False
        return True
    return False


def _encode(fields: list[Any]) -> str | None:
    """``fields`` as JSON, or ``None`` if decoding would not give them back exactly (a
    tuple, a set, a number type JSON does not have, a NaN): such a result is not
    stored, so a rerun scores it again."""
    return _ENCODE(fields) if _plain(fields) else None


#: The judge side of a restored judged sample: whether it has a rule layer, and the judge
#: messages its verdict was asked with.
Judged = tuple[bool, tuple[dict[str, str], ...]]


def restore(sample: Sample, prediction: str, text: str) -> tuple[SampleResult, Judged | None]:
    """The result stored as ``text`` for ``sample`` and its stored ``prediction``,
    marked as a rerun marks a stored prediction (``cached``); for a judged sample it is
    the rule layer's side, with what ``Judged`` says, for its verdict to be combined
    with."""
    fields = loads(text)
    status, extracted, reference, correct, error, details, rule_correct, cause = fields[:8]
    result = SampleResult(sample.dataset, sample.model, sample.index, sample.replica, status,
                          sample.messages, prediction, extracted, reference, correct, error,
                          details, True, rule_correct=rule_correct, cause=cause)
    return result, ((fields[8], tuple(fields[9])) if len(fields) > 8 else None)


def final_row(key: str, result: SampleResult) -> OutcomeRow | None:
    """The row that stores a result no verdict is part of, if it is final."""
    if result.status not in STORED_STATUSES or result.judge_status is not None:
        return None
    text = _encode(_fields(result))
    return None if text is None else OutcomeRow(key, text, None)


def judged_row(request: JudgeRequest, result: SampleResult) -> OutcomeRow | None:
    """The row that stores a judged sample's ``result``, if it is final: the rule
    layer's side, the judge messages and the verdict key (the verdict itself stays in
    the verdicts table, where a rerun reads it)."""
    task = request.task
    if (task.outcome_key is None or result.status not in STORED_STATUSES
            or result.judge_status not in FINAL_VERDICTS):
        return None
    messages = [dict(m) for m in request.messages]
    text = _encode([*_fields(task.result), task.has_rule, messages])
    return None if text is None else OutcomeRow(task.outcome_key, text, request.key)


class Outcomes:
    """The outcome store's side of one run: each cacheable dataset's fingerprint and
    the outcome keys of its samples. ``runners`` are the judged datasets' judge
    runners: a restored verdict is counted and combined by its dataset's runner."""

    def __init__(self, datasets: Mapping[str, DatasetSpec],
                 runners: Mapping[str, JudgeRunner]) -> None:
        self.runners = runners
        #: dataset abbr → its outcome key template, for the cacheable datasets only.
        self.templates = {
            abbr: outcome_keys(fp) for abbr, spec in datasets.items()
            if (fp := scoring_fingerprint(spec, runners.get(abbr))) is not None}

    def key(self, sample: Sample, text: str | None, finish_reason: str | None,
            reasoning: str | None) -> str | None:
        """The outcome key of ``sample`` with a stored or fresh prediction (``None``:
        the dataset is not cacheable)."""
        template = self.templates.get(sample.dataset)
        if template is None:
            return None
        return template(sample.replica, list(sample.row.items()), [text, finish_reason, reasoning])
