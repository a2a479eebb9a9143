"""MATH-500: 500 competition problems (the PRM800K test split of MATH), rules only.

The model boxes its final answer; ``math_postprocess_v2`` takes the content of the last
``\\boxed{}`` (two different boxed answers without a visible correction earn nothing),
and MATHVerifyEvaluator decides symbolic equivalence with math-verify
(``\\frac{1}{2}`` = ``0.5``, ``\\left( 3, \\frac{\\pi}{2} \\right)`` = ``(3, \\pi/2)``), in
worker processes with a hard time limit. No LLM judge: for that, see
``math500_cascade.py``, which sends only the samples these rules mark wrong to a judge.

    python -m harness run datasets/math500.py --model-base-url http://localhost:8000/v1
"""

from harness import (CustomDataset, GenInferencer, MATHVerifyEvaluator, RawPromptTemplate,
                     ZeroRetriever, math_postprocess_v2)

# Rows: problem, solution, answer (LaTeX, e.g. "\\frac{14}{3}"), subject, level, unique_id.
math500_reader_cfg = dict(input_columns=["problem"], output_column="answer")

math500_infer_cfg = dict(
    prompt_template=dict(
        type=RawPromptTemplate,
        messages=[
            {"role": "user",
             "content": "{problem}\nPlease reason step by step, and put your final answer "
                        "within \\boxed{}."},
        ],
    ),
    retriever=dict(type=ZeroRetriever),
    # Competition solutions are long; a cut-off reply has no box and scores nothing.
    inferencer=dict(type=GenInferencer, max_out_len=4096),
)

math500_eval_cfg = dict(
    evaluator=dict(type=MATHVerifyEvaluator),
    # Extract first, so a reply without a box counts as an extraction failure in
    # `extract_rate` instead of math-verify guessing a number from the working.
    pred_postprocessor=dict(type=math_postprocess_v2),
    pred_role="BOT",
)

datasets = [
    dict(
        abbr="math500",
        type=CustomDataset,
        path="data/math500/test.jsonl",
        reader_cfg=math500_reader_cfg,
        infer_cfg=math500_infer_cfg,
        eval_cfg=math500_eval_cfg,
    )
]
