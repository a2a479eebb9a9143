"""Text-metric evaluators' options: a value that is not what the option takes stops the
config, naming the field, instead of being read as something else."""

from __future__ import annotations

import pytest

from harness.config import load_config
from harness.errors import ConfigError
from harness.evaluators import build_evaluator

from .helpers import write_arith, write_config


@pytest.mark.parametrize("evaluator,field,value", [
    # Read with bool(), the strings 'no' and 'false' switched the option on.
    ("BleuEvaluator", "lowercase", "no"), ("BleuEvaluator", "lowercase", 0),
    ("RougeEvaluator", "use_stemmer", "false"), ("RougeEvaluator", "use_stemmer", None),
    # sacrebleu takes True as word order 1 and -1 as five character n-grams.
    ("BleuEvaluator", "chrf_word_order", True), ("BleuEvaluator", "chrf_word_order", -1),
    ("BleuEvaluator", "chrf_word_order", "2"),
    # sacrebleu's KeyError named no field
    ("BleuEvaluator", "tokenize", "bogus"),
], ids=repr)
def test_an_option_of_the_wrong_kind_is_refused_naming_it(evaluator, field, value):
    with pytest.raises(ConfigError, match=f"field '{field}'"):
        build_evaluator({"type": evaluator, field: value})


def test_a_string_for_a_switch_stops_the_config_at_its_field(tmp_path):
    cfg = write_config(tmp_path / "cfg.py", write_arith(tmp_path / "a.jsonl", 2),
                       extra="from harness import BleuEvaluator")
    cfg.write_text(cfg.read_text().replace("dict(type=AccEvaluator)",
                                           "dict(type=BleuEvaluator, lowercase='no')"))
    with pytest.raises(ConfigError, match=r"eval_cfg\.evaluator\.lowercase'"):
        load_config(cfg)


@pytest.mark.parametrize("evaluator,options", [
    ("BleuEvaluator", {"lowercase": True, "chrf_word_order": 2}),
    ("RougeEvaluator", {"use_stemmer": True})])
def test_options_of_the_right_kind_are_kept_as_given(evaluator, options):
    assert build_evaluator({"type": evaluator, **options}).metric_options().items() \
        >= options.items()
