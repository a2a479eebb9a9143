"""BIG-Bench-Hard, the same five tasks as ``bbh.py``, zero-shot chain of thought.

No worked examples: the prompt is the task description, the question, one line that
says how to finish, and "A: Let's think step by step." Without examples a model does
not know BBH's "So the answer is …" convention, so the prompt states it; the
postprocessors still accept what models write instead (the option's text rather than
its letter, "eight" for 8, "Answer: 8"). Scores are comparable across models run with
this config, not with the 3-shot ``bbh.py``; abbrs end in ``-0shot`` so both can
share a work directory.

    python -m harness run datasets/bbh_zeroshot.py --model-base-url http://localhost:8000/v1
"""

from pathlib import Path

from harness import (AccEvaluator, CustomDataset, GenInferencer, RawPromptTemplate,
                     ZeroRetriever, bbh_freeform_postprocess, bbh_mcq_postprocess)

MULTIPLE_CHOICE = ["date_understanding", "logical_deduction_three_objects", "geometric_shapes"]
FREE_FORM = ["object_counting", "multistep_arithmetic_two"]

COT_PROMPTS = Path(__file__).parent / "data" / "bbh" / "cot-prompts"

MCQ_FINISH = 'Finish with "So the answer is (X)." where X is the letter of the correct option.'
NUMBER_FINISH = 'Finish with "So the answer is N." where N is the final number.'


def task_description(task):
    """The one-line task description of the 3-shot prompt file ("Infer the date from context.")."""
    text = (COT_PROMPTS / f"{task}.txt").read_text(encoding="utf-8")
    return text.split("-----\n", 1)[1].strip().splitlines()[0]


bbh_reader_cfg = dict(input_columns=["input"], output_column="target")

mcq_eval_cfg = dict(
    evaluator=dict(type=AccEvaluator),
    pred_postprocessor=dict(type=bbh_mcq_postprocess),
    dataset_postprocessor=dict(type=bbh_mcq_postprocess),
    pred_role="BOT",
)

freeform_eval_cfg = dict(
    evaluator=dict(type=AccEvaluator),
    pred_postprocessor=dict(type=bbh_freeform_postprocess),
    dataset_postprocessor=dict(type=bbh_freeform_postprocess),
    pred_role="BOT",
)


def bbh_zeroshot_dataset(task, finish, eval_cfg):
    """One task as a dataset with a zero-shot prompt."""
    prompt = (f"{task_description(task)}\n{finish}"
              "\n\nQ: {input}\nA: Let's think step by step.")
    return dict(
        abbr=f"bbh-{task}-0shot",
        type=CustomDataset,
        path=f"data/bbh/{task}.json",
        reader_cfg=bbh_reader_cfg,
        infer_cfg=dict(
            prompt_template=dict(type=RawPromptTemplate,
                                 messages=[{"role": "user", "content": prompt}]),
            retriever=dict(type=ZeroRetriever),
            inferencer=dict(type=GenInferencer, max_out_len=512),
        ),
        eval_cfg=eval_cfg,
    )


datasets = ([bbh_zeroshot_dataset(task, MCQ_FINISH, mcq_eval_cfg) for task in MULTIPLE_CHOICE]
            + [bbh_zeroshot_dataset(task, NUMBER_FINISH, freeform_eval_cfg)
               for task in FREE_FORM])
