"""``GenericLLMEvaluator`` and ``CascadeEvaluator``, with the seed's semantics.

These evaluators describe *what* to judge; the pipeline's judge stage
(``harness.judge.runner``) does the judging, rate-limited and cached, as rule results
stream in. So ``score()``, OpenCompass's batch call, is not how they run: configs use
them through ``harness.evaluate`` or ``python -m harness run``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..config_keys import accepted_keywords, check_keys, construct, within
from ..errors import ConfigError
from ..judge.verdict import parse_verdict
from ..prompt import PLACEHOLDER, RawPromptTemplate
from .base import EVALUATORS, BaseEvaluator, as_detail, build_evaluator

if TYPE_CHECKING:
    from ..judge.defuse import Defuser


#: What ``GenericLLMEvaluator.render`` fills in besides the sample's columns.
JUDGE_VALUES = frozenset({"prediction", "reference", "obj_gold"})


@EVALUATORS.register("GenericLLMEvaluator")
class GenericLLMEvaluator(BaseEvaluator):
    """Judge every sample with an LLM (or, inside a cascade, the rule failures).

    ``prompt_template`` is ``dict(type=RawPromptTemplate, messages=[...])`` or the name of
    a preset in ``judges/`` (``'grader'``, ``'strict'``). Its placeholders are any column
    of the sample plus ``{prediction}`` (required: a template without it is a
    ``ConfigError``), ``{reference}`` and ``{obj_gold}``; one naming no column of the
    data is refused when the dataset is validated (``validate.check_judge_placeholders``),
    and filling is one pass. ``judge_cfg`` is described in
    ``harness.judge.spec``; its keys are checked here, when the config is loaded.
    ``dataset_cfg`` is accepted and ignored (the evaluated dataset supplies the rows), as
    in a cascade. ``timeout`` is not taken: a judge call's timeout is ``judge_cfg``'s.
    """

    def __init__(self, prompt_template: Mapping[str, Any] | str | None = None,
                 judge_cfg: Mapping[str, Any] | None = None,
                 dataset_cfg: Mapping[str, Any] | None = None,
                 dict_postprocessor: Mapping[str, Any] | None = None,
                 pred_postprocessor: Mapping[str, Any] | None = None) -> None:
        super().__init__(pred_postprocessor=pred_postprocessor)
        from ..judge.spec import judge_settings
        from ..judge.templates import judge_template

        with within("prompt_template"):
            if isinstance(prompt_template, str):
                prompt_template = judge_template(prompt_template)
            if not isinstance(prompt_template, Mapping):
                raise TypeError("GenericLLMEvaluator needs prompt_template")
            self.template: RawPromptTemplate = construct(prompt_template, RawPromptTemplate)
            _check_prediction_placeholder(self.template)
        with within("judge_cfg"):
            judge_settings(judge_cfg)
        self.judge_cfg = dict(judge_cfg or {})
        with within("dict_postprocessor"):
            _check_dict_postprocessor(dict_postprocessor)
        self.dict_postprocessor = dict_postprocessor

    @functools.cached_property
    def defuse(self) -> Defuser:
        """Neutralises copies of the template's structure in a prediction (``render``).
        Built on first use: a rerun whose judged samples are all stored renders none."""
        from ..judge.defuse import Defuser

        return Defuser(m["content"] for m in self.template.messages)

    @property
    def delimiters(self) -> tuple[str, ...]:
        """The template's delimiter-like tokens, as written (what ``defuse`` neutralises)."""
        return self.defuse.tokens

    def score_sample(self, prediction: Any, reference: Any,
                     test_item: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Not available: a verdict needs the judge stage of a run."""
        raise NotImplementedError("GenericLLMEvaluator judges inside a run: use "
                                  "harness.evaluate() or `python -m harness run`")

    def render(self, row: Mapping[str, Any], prediction: Any,
               reference: Any) -> tuple[dict[str, str], ...]:
        """The judge messages for one sample (one-pass fill; the prediction is data).

        The prediction cannot imitate the template's structure: every copy of one of its
        delimiter-like tokens in it, however disguised, is neutralised first (see
        ``harness.judge.defuse``).
        """
        values = dict(row)
        values.update(prediction=self.defuse(str(prediction)),
                      reference=reference, obj_gold=reference)
        return self.template.render(values)


@EVALUATORS.register("CascadeEvaluator")
class CascadeEvaluator(BaseEvaluator):
    """Rules first, then an LLM judge: the seed's CascadeEvaluator.

    ``parallel=False`` (cascade mode) judges only samples the rule layer marks wrong;
    ``parallel=True`` (the default, as in the seed) judges every sample. Either way a
    sample is correct when the rule layer or the judge says so. The rule layer is
    ``sample_score_fn`` when given (it takes precedence and receives the prediction after
    ``rule_evaluator``'s pred_postprocessor), else ``rule_evaluator``. A run applies
    the rule layer's pred_postprocessor (``prediction_postprocessors``), so the
    extraction sees how the reply ended, and math-verify's fast path applies here too.
    A prediction that postprocessor extracts nothing from is an extraction failure the
    judge decides, unless a config's own function (``sample_score_fn``, or a function
    as ``rule_evaluator``), called on it as in OpenCompass, says it is right.
    """

    def __init__(self, llm_evaluator: Mapping[str, Any] | GenericLLMEvaluator,
                 rule_evaluator: Mapping[str, Any] | BaseEvaluator | None = None,
                 sample_score_fn: Callable[[Any, Any, Any], Any] | None = None,
                 parallel: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if rule_evaluator is None and sample_score_fn is None:
            raise ValueError("CascadeEvaluator needs rule_evaluator or sample_score_fn "
                             "(or both)")
        if sample_score_fn is not None and not callable(sample_score_fn):
            raise TypeError("sample_score_fn must be callable")
        if not isinstance(parallel, bool):
            raise TypeError(f"parallel must be True or False, not {parallel!r}")
        with within("llm_evaluator"):
            llm = build_evaluator(llm_evaluator)
        if not isinstance(llm, GenericLLMEvaluator):
            raise TypeError("llm_evaluator must be a GenericLLMEvaluator")
        self.llm_evaluator = llm
        with within("rule_evaluator"):
            self.rule_evaluator = build_evaluator(rule_evaluator) if rule_evaluator else None
        self.sample_score_fn = sample_score_fn
        self.parallel = parallel
        self.scores_failed_extraction = sample_score_fn is not None or bool(
            self.rule_evaluator and self.rule_evaluator.scores_failed_extraction)
        # math-verify's rule layer runs in worker processes; a user's function may not
        # pickle (it lives in a config file), so it runs inline.
        self.needs_worker = bool(self.rule_evaluator and self.rule_evaluator.needs_worker
                                 and sample_score_fn is None)
        if self.rule_evaluator is not None:
            self.timeout = self.rule_evaluator.timeout
        # A code rule layer runs its programs through the score stage's async path, and
        # its pass@k values are the cascade's.
        self.executes = bool(self.rule_evaluator and self.rule_evaluator.executes
                             and sample_score_fn is None)
        self.k = getattr(self.rule_evaluator, "k", None)

    def check_ready(self) -> None:
        """Check the rule layer (a code one needs its sandbox)."""
        if self.rule_evaluator is not None:
            self.rule_evaluator.check_ready()

    def quiet_timeout(self) -> float | None:
        """The rule layer's (see ``BaseEvaluator.quiet_timeout``)."""
        return self.rule_evaluator.quiet_timeout() if self.rule_evaluator is not None else None

    def warm_up(self) -> None:
        """Warm the rule layer."""
        if self.rule_evaluator is not None:
            self.rule_evaluator.warm_up()

    def score(self, predictions: list[Any], references: list[Any],
              test_set: Any = None) -> dict[str, Any]:
        """Not available: the judge layer needs the judge stage of a run."""
        raise NotImplementedError("CascadeEvaluator judges inside a run: use "
                                  "harness.evaluate() or `python -m harness run`")

    def prediction_postprocessors(self) -> tuple[Callable[..., Any], ...]:
        """Its own ``pred_postprocessor``, then the rule layer's: both extract the
        prediction the rule layer checks (the judge sees the dataset's prediction)."""
        rule = self.rule_evaluator
        return super().prediction_postprocessors() + (
            rule.prediction_postprocessors() if rule is not None else ())

    def rule_checker(self) -> BaseEvaluator | None:
        """The rule layer (``score_sample`` delegates to it); None with a
        ``sample_score_fn``."""
        return self.rule_evaluator if self.sample_score_fn is None else None

    def fast_score(self, prediction: Any, reference: Any) -> dict[str, Any] | None:
        """The rule layer's ``fast_score`` (math-verify's fast path); None with a
        ``sample_score_fn``."""
        if self.rule_evaluator is None or self.sample_score_fn is not None:
            return None
        return self.rule_evaluator.fast_score(prediction, reference)

    async def ascore_sample(self, prediction: Any, reference: Any,
                            test_item: Mapping[str, Any], cache: Any) -> dict[str, Any]:
        """The rule layer's verdict on one sample, for a rule layer that ``executes``."""
        rule = self.rule_evaluator
        assert rule is not None and self.executes
        detail: dict[str, Any] = await rule.ascore_sample(prediction, reference, test_item,
                                                          cache)
        return detail

    def score_sample(self, prediction: Any, reference: Any,
                     test_item: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The rule layer's verdict on one sample, whose prediction went through
        ``prediction_postprocessors()``."""
        if self.sample_score_fn is not None:
            return as_detail(self.sample_score_fn(prediction, reference, test_item),
                             prediction, reference)
        assert self.rule_evaluator is not None
        return self.rule_evaluator.score_sample(prediction, reference, test_item)


def judge_plan(evaluator: BaseEvaluator | None) -> tuple[bool, GenericLLMEvaluator | None, bool]:
    """``(has_rule_layer, judge, judge_every_sample)`` for an evaluator."""
    if isinstance(evaluator, GenericLLMEvaluator):
        return False, evaluator, True
    if isinstance(evaluator, CascadeEvaluator):
        return True, evaluator.llm_evaluator, evaluator.parallel
    return evaluator is not None, None, False


def generic_llmjudge_postprocess(output: Mapping[Any, Mapping[str, Any]],
                                 output_path: str | None = None) -> dict[str, Any]:
    """OpenCompass's judge-output postprocessor, on the one anchored verdict parser.

    ``output`` maps sample ids to ``{'prediction': judge_reply, 'gold': ...}``. Replies
    that are not exactly a verdict count as ``unparsed``, never silently as wrong;
    ``accuracy`` is over the parsed ones.
    """
    details, correct, parsed = [], 0, 0
    for item in output.values():
        verdict = parse_verdict(item.get("prediction"))
        parsed += verdict is not None
        correct += verdict == "A"
        details.append({"prediction": item.get("prediction"), "gold": item.get("gold"),
                        "verdict": verdict, "llm_correct": verdict == "A",
                        "status": "ok" if verdict else "unparsed"})
    return {"accuracy": 100.0 * correct / parsed if parsed else 0.0,
            "unparsed": len(details) - parsed, "details": details}


def _check_prediction_placeholder(template: RawPromptTemplate) -> None:
    # Without {prediction} every sample would be judged on the question and the gold
    # alone: verdicts that look real and mean nothing.
    if not any(found.group(1) == "prediction" for m in template.messages
               for found in PLACEHOLDER.finditer(m["content"])):
        raise ConfigError("the judge template has no {prediction} placeholder, so the judge "
                          "would never see the model's answer; put {prediction} where the "
                          "answer goes")


def _check_dict_postprocessor(cfg: Mapping[str, Any] | None) -> None:
    kind = cfg.get("type") if isinstance(cfg, Mapping) else cfg
    if kind in (None, generic_llmjudge_postprocess, "generic_llmjudge_postprocess"):
        if isinstance(cfg, Mapping):
            kwargs = {k: v for k, v in cfg.items() if k != "type"}
            check_keys(kwargs, accepted_keywords(generic_llmjudge_postprocess, skip=1),
                       "generic_llmjudge_postprocess")
        return
    raise ValueError("dict_postprocessor: harness reads every verdict with its one anchored "
                     "parser; only generic_llmjudge_postprocess is supported")
