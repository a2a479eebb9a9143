"""How much context the embedded server gives each slot: enough for the run's longest
prompt plus its largest ``max_out_len``, never more than the model's own 32,768 tokens."""

from __future__ import annotations

import json
import logging

import harness
from harness.embedded import MIN_CTX_PER_SLOT, context_per_slot
from harness.local_model import MAX_CTX_PER_SLOT


def config(tmp_path, prompt_chars: int, max_out_len: int):
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"q": "short", "a": "1"}) + "\n"
                    + json.dumps({"q": "x" * prompt_chars, "a": "2"}) + "\n")
    cfg = tmp_path / "cfg.py"
    cfg.write_text(
        "from harness import CustomDataset, PromptTemplate, GenInferencer, AccEvaluator\n"
        f"datasets = [dict(abbr='d', type=CustomDataset, path={str(data)!r},\n"
        "    reader_cfg=dict(input_columns=['q'], output_column='a'),\n"
        "    infer_cfg=dict(prompt_template=dict(type=PromptTemplate, template='Q: {q}'),\n"
        f"                   inferencer=dict(type=GenInferencer, max_out_len={max_out_len})),\n"
        "    eval_cfg=dict(evaluator=dict(type=AccEvaluator)))]\n")
    return harness.load_config(cfg).datasets


def test_a_slot_holds_the_longest_prompt_and_the_largest_reply(tmp_path):
    size = context_per_slot(config(tmp_path, 3000, 4096), limit=None)
    assert size >= 3000 + 4096 and size % 256 == 0 and size < 3000 + 4096 + 512


def test_short_runs_keep_the_small_default(tmp_path):
    assert context_per_slot(config(tmp_path, 10, 16), limit=None) == MIN_CTX_PER_SLOT


def test_limit_leaves_unused_rows_out_of_the_estimate(tmp_path):
    datasets = config(tmp_path, 3000, 16)  # the long row is the second
    assert context_per_slot(datasets, limit=1) == MIN_CTX_PER_SLOT
    assert context_per_slot(datasets, limit=None) > MIN_CTX_PER_SLOT


def test_more_than_the_model_can_hold_is_clamped_with_a_warning(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="harness"):
        size = context_per_slot(config(tmp_path, 100, 40000), limit=None)
    assert size == MAX_CTX_PER_SLOT
    assert "the longest replies will stop early" in caplog.text
