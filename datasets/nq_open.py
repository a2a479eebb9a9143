"""NQ-open dev: 3,610 open-domain questions from Natural Questions, several answers each.

Scored with ``NQEvaluator``: exact match (the primary metric) and token F1 with the
official SQuAD normalization, the best over the question's answers, plus OpenCompass's
lenient ``contains`` score (a normalized answer occurs in the reply). The prompt is
OpenCompass's zero-shot NQ-open one (``Q: {question}?`` / ``A:``) as one user message,
with a line asking for a short answer, since the evaluator reads the reply's first line::

    python -m harness run datasets/nq_open.py --limit 50 --model-base-url http://localhost:8000/v1
"""

from harness import CustomDataset, GenInferencer, RawPromptTemplate, ZeroRetriever
from harness.evaluators import NQEvaluator

# Each row is {"question": "...", "answer": ["...", "..."]}: the answer list is the reference.
nq_open_reader_cfg = dict(input_columns=["question"], output_column="answer")

nq_open_infer_cfg = dict(
    prompt_template=dict(
        type=RawPromptTemplate,
        messages=[
            {"role": "user",
             "content": "Answer the question with a few words, on one line.\n"
                        "Q: {question}?\nA:"},
        ],
    ),
    retriever=dict(type=ZeroRetriever),
    inferencer=dict(type=GenInferencer, max_out_len=50),
)

nq_open_eval_cfg = dict(evaluator=dict(type=NQEvaluator), pred_role="BOT")

datasets = [
    dict(
        abbr="nq_open",
        type=CustomDataset,
        path="data/nq_open/NQ-open.dev.jsonl",   # relative to this file
        reader_cfg=nq_open_reader_cfg,
        infer_cfg=nq_open_infer_cfg,
        eval_cfg=nq_open_eval_cfg,
    )
]
