"""Text-metric evaluators under OpenCompass's names: BLEU/chrF, ROUGE, SQuAD and NQ EM/F1.

Each ``score_sample`` returns the per-sample fields its metrics are computed from (see
``statistics()``) plus ``score``, the primary metric's per-sample value. ``correct`` is
given only where the metric is a 0/1 judgement (exact match); BLEU and ROUGE have none.
A reference may be one string or a list of them (several references).

sacrebleu, rouge-score (which imports nltk: seconds) and numpy are imported when an
evaluator is built, not with this module: every CLI start imports the registry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..config_keys import switch
from ..errors import ConfigError
from ..metrics.text import best_over_references, exact_match, token_f1
from .base import EVALUATORS, BaseEvaluator

if TYPE_CHECKING:
    from ..metrics import Statistic

#: ROUGE types reported by RougeEvaluator (``harness.metrics.rouge.ROUGE_TYPES``).
_ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _references(reference: Any) -> list[str]:
    if isinstance(reference, (list, tuple)):
        return [_text(r) for r in reference]
    return [] if reference is None else [_text(reference)]


@EVALUATORS.register("BleuEvaluator")
class BleuEvaluator(BaseEvaluator):
    """sacrebleu BLEU (primary) and chrF, as corpus scores over all outputs.

    ``tokenize`` is sacrebleu's tokenizer (default ``13a``; ``'zh'``, ``'ja-mecab'``,
    ``'char'`` …), ``lowercase`` its case folding; ``chrf_word_order=2`` makes chrF
    chrF++. Per sample: ``bleu`` and ``chrf`` sentence scores (for reading) and
    ``bleu_stats``/``chrf_stats``, the sentence statistics the corpus scores sum.
    """

    metric = "bleu"
    verdicts = False

    def __init__(self, tokenize: str | None = None, lowercase: bool = False,
                 chrf_word_order: int = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # sacrebleu takes True as 1 and a negative order as fewer character n-grams.
        if (isinstance(chrf_word_order, bool) or not isinstance(chrf_word_order, int)
                or chrf_word_order < 0):
            raise ConfigError(f"must be 0 (chrF), 2 (chrF++) or another whole number of "
                              f"word n-grams, not {chrf_word_order!r}",
                              field="chrf_word_order")
        self._options = {"tokenize": tokenize, "lowercase": switch(lowercase, "lowercase"),
                         "chrf_word_order": chrf_word_order}
        from sacrebleu.metrics import BLEU  # imported with the evaluator, as its metrics are

        if tokenize is not None and tokenize not in BLEU.TOKENIZERS:
            raise ConfigError(f"must be one of sacrebleu's tokenizers "
                              f"({', '.join(BLEU.TOKENIZERS)}), not {tokenize!r}",
                              field="tokenize")
        try:
            self._build_metrics()
        except (AssertionError, KeyError, ValueError) as exc:  # sacrebleu's own checks
            raise ValueError(f"BleuEvaluator: {exc or 'invalid sacrebleu option'}") from exc

    def _build_metrics(self) -> None:
        from ..metrics.bleu import bleu, chrf

        options: dict[str, Any] = self._options
        self._bleu = bleu(options["tokenize"], options["lowercase"])
        self._chrf = chrf(options["chrf_word_order"], options["lowercase"])

    def __getstate__(self) -> dict[str, Any]:
        """Its settings without sacrebleu's objects (a worker process, a copy builds
        them again from its options)."""
        state = dict(vars(self))
        del state["_bleu"], state["_chrf"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        vars(self).update(state)
        self._build_metrics()

    def metric_options(self) -> dict[str, Any]:
        """The tokenizer, case folding and chrF word order the scores depend on."""
        return dict(self._options)

    def statistics(self) -> tuple[Statistic, ...]:
        """Corpus BLEU, then corpus chrF."""
        from ..metrics.bleu import corpus_statistic

        return (corpus_statistic("bleu", "bleu_stats", self._bleu),
                corpus_statistic("chrf", "chrf_stats", self._chrf))

    def score_sample(self, prediction: Any, reference: Any,
                     test_item: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Sentence statistics and scores of one output against its references."""
        refs = _references(reference)
        bleu_stats = self._bleu.stats(_text(prediction), refs)
        chrf_stats = self._chrf.stats(_text(prediction), refs)
        sentence = self._bleu.sentence_score(bleu_stats)
        return {"pred": prediction, "answer": reference, "score": sentence,
                "bleu": sentence, "chrf": self._chrf.sentence_score(chrf_stats),
                "bleu_stats": bleu_stats, "chrf_stats": chrf_stats}


@EVALUATORS.register("RougeEvaluator")
class RougeEvaluator(BaseEvaluator):
    """rouge-score ROUGE-1 (primary), ROUGE-2 and ROUGE-L F-measures, in percent.

    The aggregate is the mean of the per-sample F-measures; with several references
    each sample takes the best one (rouge-score's ``score_multi``). ``use_stemmer`` is
    rouge-score's Porter stemming (off by default, as in OpenCompass).
    """

    metric = "rouge1"
    verdicts = False

    def __init__(self, use_stemmer: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        from ..metrics.rouge import ROUGE_TYPES, Rouge

        assert ROUGE_TYPES == _ROUGE_TYPES
        self._use_stemmer = switch(use_stemmer, "use_stemmer")
        self._rouge = Rouge(use_stemmer=self._use_stemmer)

    def metric_options(self) -> dict[str, Any]:
        """Whether words are stemmed before matching."""
        return {"use_stemmer": self._use_stemmer}

    def __getstate__(self) -> dict[str, Any]:
        """Its settings without rouge-score's objects (see BleuEvaluator)."""
        state = dict(vars(self))
        del state["_rouge"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        from ..metrics.rouge import Rouge

        vars(self).update(state)
        self._rouge = Rouge(use_stemmer=self._use_stemmer)

    def statistics(self) -> tuple[Statistic, ...]:
        """The mean F-measure of each ROUGE type."""
        from ..metrics import Statistic

        return tuple(Statistic(name, name, "mean") for name in _ROUGE_TYPES)

    def score_sample(self, prediction: Any, reference: Any,
                     test_item: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Each ROUGE type's F-measure of one output, best over its references."""
        scores = self._rouge.score(_text(prediction), _references(reference))
        return {"pred": prediction, "answer": reference, "score": scores["rouge1"], **scores}


@EVALUATORS.register("SquadEvaluator")
class SquadEvaluator(BaseEvaluator):
    """SQuAD v1.1 token F1 (primary, as OpenCompass's ``SquadEvaluator``) and exact match.

    The prediction's first line is scored (as OpenCompass does); both use the official
    normalization and the best score over the references. ``correct`` is exact match.
    """

    metric = "f1"

    def statistics(self) -> tuple[Statistic, ...]:
        """Mean token F1, then exact match (a proportion)."""
        from ..metrics import Statistic

        return (Statistic("f1", "f1", "mean"), Statistic("em", "em", "proportion"))

    def answer(self, prediction: Any) -> str:
        """The part of the output that is scored: its first line."""
        return _text(prediction).strip().split("\n")[0]

    def score_sample(self, prediction: Any, reference: Any,
                     test_item: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """EM and F1 (percent) of one answer, best over the references."""
        answer, refs = self.answer(prediction), _references(reference)
        em = best_over_references(exact_match, answer, refs)
        f1 = best_over_references(token_f1, answer, refs)
        detail = {"pred": prediction, "answer": reference, "correct": em == 100.0,
                  "em": em, "f1": f1}
        detail["score"] = detail[self.metric]
        return detail


@EVALUATORS.register("NQEvaluator", "TriviaQAEvaluator")
class NQEvaluator(SquadEvaluator):
    """Open-domain QA (NQ-open, TriviaQA): exact match (primary), token F1, ``contains``.

    The answer is read as OpenCompass's NQ/TriviaQA evaluators read it: the first line,
    from after its last "answer is". EM and F1 then use the official SQuAD
    normalization (the standard NQ-open metric). ``contains`` is OpenCompass's
    ``NQEvaluator`` score: some reference, after ``general_postprocess``, occurs in the
    answer after ``general_postprocess`` (a lenient substring match; 'ten' is found in
    'often'). ``correct`` is exact match.
    """

    metric = "em"

    def statistics(self) -> tuple[Statistic, ...]:
        """Exact match, mean token F1, then OpenCompass's containment score."""
        from ..metrics import Statistic

        return (Statistic("em", "em", "proportion"), Statistic("f1", "f1", "mean"),
                Statistic("contains", "contains", "proportion"))

    def answer(self, prediction: Any) -> str:
        """The first line, from after its last "answer is" (case-insensitive)."""
        line = super().answer(prediction)
        cut = line.lower().rfind("answer is")
        return line[cut + len("answer is"):] if cut >= 0 else line

    def score_sample(self, prediction: Any, reference: Any,
                     test_item: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """EM, F1 and containment of one answer, best over the references."""
        from ..postprocessors import general_postprocess

        detail = super().score_sample(prediction, reference, test_item)
        answer = general_postprocess(self.answer(prediction))
        refs = [general_postprocess(r) for r in _references(reference)]
        # An empty normalized reference would be "in" every answer.
        detail["contains"] = bool(answer) and any(r and r in answer for r in refs)
        return detail

#: OpenCompass's name for it, so a config that imports it ports.
TriviaQAEvaluator = NQEvaluator
