"""The evaluator interface: score one sample, aggregate many.

OpenCompass evaluators score a whole list at the end; harness streams, so an evaluator
scores one sample at a time (``score_sample``) as its prediction arrives and the
pipeline aggregates. ``score`` keeps the OpenCompass batch interface for library users.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ..config_keys import accepted_keywords, check_keys, construct, positive, within
from ..registry import Registry

if TYPE_CHECKING:
    from ..metrics import MetricValue, Statistic

#: Evaluators by name; configs may also give the class itself as ``type``. harness's
#: own are declared by module and imported on first use (see ``Registry``): the code
#: evaluators import the sandbox, the judge's its prompt defusing.
EVALUATORS: Registry[Any] = Registry("evaluator", {
    "harness.evaluators.code": ("HumanEvalEvaluator", "MBPPEvaluator"),
    "harness.evaluators.llm": ("GenericLLMEvaluator", "CascadeEvaluator"),
    "harness.evaluators.math_verify": ("MATHVerifyEvaluator", "MATHEvaluator"),
    "harness.evaluators.rules": ("AccEvaluator", "BBHEvaluator_mcq", "BBHEvaluator",
                                 "EMEvaluator"),
    "harness.evaluators.text": ("BleuEvaluator", "RougeEvaluator", "SquadEvaluator",
                                "NQEvaluator", "TriviaQAEvaluator"),
})

SampleScoreFn = Callable[[Any, Any, Any], "Mapping[str, Any] | bool"]


#: The keyword arguments every evaluator takes (see ``BaseEvaluator``).
EVALUATOR_KEYS = ("timeout", "pred_postprocessor")


class BaseEvaluator:
    """Base of every rule evaluator.

    ``needs_worker`` evaluators (math-verify) run ``score_sample`` in a worker process
    under ``timeout`` seconds; the others run inline, where they cost microseconds.
    ``pred_postprocessor`` is applied after the dataset's. A subclass takes its own
    keyword arguments by name and passes the rest to ``super().__init__``: any other
    key is an error, never silently ignored.
    """

    #: Set per instance by a cascade whose rule layer needs a worker, so not a ClassVar.
    needs_worker: bool = False
    #: Evaluators that run programs (code) are awaited through ``ascore_sample``.
    executes: bool = False
    metric: ClassVar[str] = "accuracy"
    #: Whether ``score_sample`` judges each sample right or wrong (``correct``); BLEU and
    #: ROUGE only score, so a sample without an answer is not "wrong" there either.
    verdicts: ClassVar[bool] = True
    #: Whether a prediction its postprocessors extracted nothing from still goes to
    #: ``score_sample`` (a config's own function, which OpenCompass gives it to): a
    #: "right" from it stands; "wrong", or raising on it, leaves an extraction failure.
    #: Set per instance by a cascade, so not a ClassVar.
    scores_failed_extraction: bool = False
    timeout: float = 30.0

    def __init__(self, timeout: float | None = None,
                 pred_postprocessor: Mapping[str, Any] | None = None) -> None:
        from ..postprocessors.build import build_postprocessor

        checked = positive(timeout, "timeout")
        if checked is not None:
            self.timeout = float(checked)
        # OpenCompass evaluators may carry their own pred_postprocessor, applied after the
        # dataset's (a cascade's rule layer uses it; see CascadeEvaluator).
        with within("pred_postprocessor"):
            self.pred_postprocessor = build_postprocessor(pred_postprocessor)

    def prediction_postprocessors(self) -> tuple[Callable[..., Any], ...]:
        """The postprocessors a run applies, in order, to the dataset's prediction before
        ``score_sample`` sees it: this evaluator's ``pred_postprocessor``, if any. The
        scoring methods never apply them themselves."""
        return (self.pred_postprocessor,) if self.pred_postprocessor is not None else ()

    def rule_checker(self) -> BaseEvaluator | None:
        """The evaluator whose ``score_sample`` gives this one's rule verdict on a
        postprocessed prediction: itself; a cascade's rule layer (never its judge).
        None when that is a function of the config's (``sample_score_fn``)."""
        return self

    def score_sample(self, prediction: Any, reference: Any,
                     test_item: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Score one sample: a dict with at least ``correct``, ``pred`` and ``answer``."""
        raise NotImplementedError

    async def ascore_sample(self, prediction: Any, reference: Any,
                            test_item: Mapping[str, Any], cache: Any) -> dict[str, Any]:
        """Score one sample by running something (``executes`` evaluators), with
        ``cache`` (the run's store) keeping the outcomes."""
        raise NotImplementedError

    def fast_score(self, prediction: Any, reference: Any) -> dict[str, Any] | None:
        """``score_sample``'s detail when the evaluator can tell it at once in the calling
        process, so a ``needs_worker`` check skips the worker; ``None`` (the default):
        run ``score_sample``."""
        return None

    def quiet_timeout(self) -> float | None:
        """Seconds after which a check may have been cut short by a time limit of the
        evaluator's own that ends it as a verdict instead of an error (math-verify's
        parse and verify limits say "wrong"), or ``None`` without such limits. A check
        that took longer is not reproducible, so its result is never stored as an
        outcome (``harness.outcomes``)."""
        return None

    def statistics(self) -> tuple[Statistic, ...]:
        """The metrics this evaluator reports, primary first: by default the percentage
        of ``correct`` samples under ``metric``'s name, with a Wilson interval."""
        from ..metrics import Statistic

        return (Statistic(self.metric, "correct", "proportion"),)

    def metric_options(self) -> dict[str, Any]:
        """The settings that change what ``statistics()`` computes (a tokenizer, say),
        as keyword arguments to build the same evaluator again: written to the results
        JSON as ``evaluator_options``, so ``compare`` scores both runs as they were
        scored, and refuses two runs scored differently. None by default."""
        return {}

    @classmethod
    def reports_own_metrics(cls) -> bool:
        """Whether the evaluator reports metrics of its own (BLEU, EM …) from its
        per-sample fields, rather than the default accuracy over ``correct``; checked
        without building them, so an accuracy run never imports numpy."""
        return cls.statistics is not BaseEvaluator.statistics

    def aggregate(self, details: Sequence[Mapping[str, Any]],
                  name: str | None = None) -> MetricValue:
        """One metric (the primary one by default) over scored per-sample details,
        with its 95% interval; see ``harness.metrics.aggregate`` for whole runs."""
        from ..metrics.aggregate import aggregate_details

        stats = self.statistics()
        chosen = stats[0] if name is None else next((s for s in stats if s.name == name), None)
        if chosen is None:
            raise KeyError(f"{type(self).__name__} reports no metric {name!r}; "
                           f"it reports {', '.join(s.name for s in stats)}")
        return aggregate_details(chosen, details)

    def check_ready(self) -> None:
        """Raise if this evaluator cannot score on this machine (a code evaluator with
        no working sandbox); called before a run that scores sends any request."""

    def warm_up(self) -> None:
        """Prepare a worker process (imports, caches) before it scores samples."""

    def score(self, predictions: list[Any], references: list[Any],
              test_set: Iterable[Mapping[str, Any]] | None = None) -> dict[str, Any]:
        """OpenCompass's batch interface: ``{metric: value, …, 'details': [...]}``,
        one entry per metric of ``statistics()`` (percent; 0.0 for no samples)."""
        if len(predictions) != len(references):
            return {"error": "predictions and references have different lengths"}
        items = list(test_set) if test_set is not None else [None] * len(predictions)
        if len(items) != len(predictions):
            return {"error": "test_set and predictions have different lengths"}
        details = [self.score_sample(p, r, t)
                   for p, r, t in zip(predictions, references, items, strict=True)]
        out: dict[str, Any] = {}
        for stat in self.statistics():
            value = self.aggregate(details, stat.name).value if details else None
            out[stat.name] = 0.0 if value is None else value
        out["details"] = details
        return out


def as_detail(result: Any, prediction: Any, reference: Any) -> dict[str, Any]:
    """Normalize a ``sample_score_fn`` result: a bool, or a dict with ``correct``.

    A non-dict becomes ``{'correct': bool(result), 'pred': ..., 'answer': ...}``; a dict
    keeps its extra fields and gains ``pred``/``answer`` when it lacks them.
    """
    if isinstance(result, Mapping):
        if "correct" not in result:
            raise ValueError("sample_score_fn returned a dict without 'correct'")
        detail = dict(result)
        detail["correct"] = bool(detail["correct"])
    else:
        detail = {"correct": bool(result)}
    detail.setdefault("pred", prediction)
    detail.setdefault("answer", reference)
    return detail


@EVALUATORS.register("SampleScoreEvaluator")
class SampleScoreEvaluator(BaseEvaluator):
    """Wrap a custom ``sample_score_fn(prediction, reference, test_item, **fn_kwargs)``.

    The function returns a bool or a dict with ``correct``; configs may write
    ``evaluator=dict(type=SampleScoreEvaluator, sample_score_fn=fn)`` or simply
    ``evaluator=dict(type=fn, threshold=0.5)``, where every key but ``timeout`` and
    ``pred_postprocessor`` goes to the function: a key its signature does not accept
    is a ``ConfigError``.
    """

    scores_failed_extraction = True

    def __init__(self, sample_score_fn: SampleScoreFn,
                 fn_kwargs: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not callable(sample_score_fn):
            raise TypeError("sample_score_fn must be callable")
        self.sample_score_fn = sample_score_fn
        self.fn_kwargs = dict(fn_kwargs or {})
        name = getattr(sample_score_fn, "__name__", repr(sample_score_fn))
        known = accepted_keywords(sample_score_fn, skip=3)
        check_keys(self.fn_kwargs, None if known is None else {*known, *EVALUATOR_KEYS}, name)

    def score_sample(self, prediction: Any, reference: Any,
                     test_item: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Call the function and normalize what it returns."""
        result = self.sample_score_fn(prediction, reference, test_item, **self.fn_kwargs)
        return as_detail(result, prediction, reference)


def build_evaluator(cfg: Mapping[str, Any] | BaseEvaluator) -> BaseEvaluator:
    """An evaluator instance from ``dict(type=Class_or_name_or_function, **kwargs)``.

    A plain function as ``type`` is a ``sample_score_fn`` and is wrapped in
    ``SampleScoreEvaluator``; the keys other than ``timeout`` and ``pred_postprocessor``
    go to the function. Unknown names raise ``KeyError``, a key the class or function
    does not accept ``ConfigError`` (field: the key), other bad arguments ``TypeError``
    or ``ValueError``: all at config time, before any request is sent.
    """
    if isinstance(cfg, BaseEvaluator):
        return cfg
    if not isinstance(cfg, Mapping) or "type" not in cfg:
        raise TypeError("evaluator must be dict(type=..., ...)")
    target = EVALUATORS.get(cfg["type"])
    if inspect.isclass(target):
        try:
            return construct({**cfg, "type": target})
        except TypeError as exc:
            raise TypeError(f"{target.__name__}: {exc}") from exc
    if callable(target):
        base = {k: v for k, v in cfg.items() if k in EVALUATOR_KEYS}
        fn_kwargs = {k: v for k, v in cfg.items() if k not in (*EVALUATOR_KEYS, "type")}
        return SampleScoreEvaluator(sample_score_fn=target, fn_kwargs=fn_kwargs, **base)
    raise TypeError(f"evaluator type {cfg['type']!r} is neither a class nor a function")
