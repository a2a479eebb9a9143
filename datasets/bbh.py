"""BIG-Bench-Hard, five tasks, 3-shot chain of thought (OpenCompass's ``bbh_gen`` prompt).

Each task is its own dataset (``bbh-date_understanding`` …), so results are per task.
The prompt is the task's official 3-shot chain-of-thought prompt (``data/bbh/cot-prompts``,
without its canary header), then the question and "A: Let's think step by step."; the
worked examples teach the model to finish with "So the answer is …".

- Multiple choice (dates, logical deduction, SVG shapes): ``bbh_mcq_postprocess`` on
  the reply *and* on the gold, as in OpenCompass's ``bbh_new_gen``, so both become a
  letter (``'(D)'`` → ``'D'``). It also receives the dataset row, so a reply that names
  the option instead of its letter ("So the answer is 12/14/1937.") gets that option's
  letter.
- Free form (counting, arithmetic): ``bbh_freeform_postprocess`` on both sides, so
  "So the answer is eight." equals the gold ``8``. It also receives the dataset row:
  the gold is a number, so a reply that gives no number ("Let me think step by step.")
  is an extraction failure.

Run one task, or all five::

    python -m harness run datasets/bbh.py --limit 20 --model-base-url http://localhost:8000/v1
"""

from pathlib import Path

from harness import (AccEvaluator, CustomDataset, GenInferencer, RawPromptTemplate,
                     ZeroRetriever, bbh_freeform_postprocess, bbh_mcq_postprocess)

MULTIPLE_CHOICE = ["date_understanding", "logical_deduction_three_objects", "geometric_shapes"]
FREE_FORM = ["object_counting", "multistep_arithmetic_two"]

COT_PROMPTS = Path(__file__).parent / "data" / "bbh" / "cot-prompts"


def cot_prompt(task):
    """The task's 3-shot prompt: its description and three worked Q/A examples.

    Each file starts with the BIG-bench canary line and ``-----``; the canary is a
    marker for training-data filters, not part of the prompt.
    """
    text = (COT_PROMPTS / f"{task}.txt").read_text(encoding="utf-8")
    return text.split("-----\n", 1)[1].strip()


# Every BBH file is {"examples": [{"input": ..., "target": "(D)" or "8"}]}.
bbh_reader_cfg = dict(input_columns=["input"], output_column="target")

mcq_eval_cfg = dict(
    evaluator=dict(type=AccEvaluator),
    pred_postprocessor=dict(type=bbh_mcq_postprocess),     # "…So the answer is (D)." → 'D'
    dataset_postprocessor=dict(type=bbh_mcq_postprocess),  # '(D)' → 'D'
    pred_role="BOT",
)

freeform_eval_cfg = dict(
    evaluator=dict(type=AccEvaluator),
    pred_postprocessor=dict(type=bbh_freeform_postprocess),     # "…is eight." → '8'
    dataset_postprocessor=dict(type=bbh_freeform_postprocess),  # '8' → '8'
    pred_role="BOT",
)


def bbh_dataset(task, eval_cfg):
    """One task as a dataset: the 3-shot prompt, then this sample's question."""
    prompt = (f"Follow the given examples and answer the question.\n{cot_prompt(task)}"
              "\n\nQ: {input}\nA: Let's think step by step.")
    return dict(
        abbr=f"bbh-{task}",
        type=CustomDataset,
        path=f"data/bbh/{task}.json",
        reader_cfg=bbh_reader_cfg,
        infer_cfg=dict(
            prompt_template=dict(type=RawPromptTemplate,
                                 messages=[{"role": "user", "content": prompt}]),
            retriever=dict(type=ZeroRetriever),  # the examples are in the prompt itself
            inferencer=dict(type=GenInferencer, max_out_len=512),
        ),
        eval_cfg=eval_cfg,
    )


datasets = ([bbh_dataset(task, mcq_eval_cfg) for task in MULTIPLE_CHOICE]
            + [bbh_dataset(task, freeform_eval_cfg) for task in FREE_FORM])
