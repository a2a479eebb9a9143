"""HumanEval: 164 Python functions to complete from their signature and docstring.

The model sees the prompt (signature + docstring) and may answer with the body, the
whole function, or a fenced block among prose; ``humaneval_postprocess_v2`` extracts
the code, and ``HumanEvalEvaluator`` runs ``prompt + code + test + check(entry_point)``
in a bubblewrap sandbox (``apt-get install bubblewrap``): correct means the tests
passed. For pass@10, sample 10 replicas at a non-zero temperature::

    python -m harness run datasets/humaneval.py --limit 20 --model-base-url http://localhost:8000/v1
"""

from harness import (CustomDataset, GenInferencer, HumanEvalEvaluator, RawPromptTemplate,
                     ZeroRetriever, humaneval_postprocess_v2)

# Each row: task_id, prompt, canonical_solution, test, entry_point.
humaneval_reader_cfg = dict(input_columns=["prompt"], output_column="task_id")

humaneval_infer_cfg = dict(
    prompt_template=dict(
        type=RawPromptTemplate,
        messages=[
            # OpenCompass's humaneval_gen instruction.
            {"role": "user", "content": "Complete the following python code:\n{prompt}"},
        ],
    ),
    retriever=dict(type=ZeroRetriever),
    inferencer=dict(type=GenInferencer, max_out_len=1024),
)

humaneval_eval_cfg = dict(
    evaluator=dict(type=HumanEvalEvaluator, k=[1, 10]),
    pred_postprocessor=dict(type=humaneval_postprocess_v2),
    pred_role="BOT",
)

datasets = [
    dict(
        abbr="humaneval",
        type=CustomDataset,
        path="data/humaneval/HumanEval.jsonl",   # relative to this file
        reader_cfg=humaneval_reader_cfg,
        infer_cfg=humaneval_infer_cfg,
        eval_cfg=humaneval_eval_cfg,
    )
]
