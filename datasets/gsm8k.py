"""GSM8K: the full test set (1,319 grade-school math word problems), zero-shot.

The model reasons step by step and boxes its final number; ``gsm8k_postprocess`` reads
the answer it committed to (``\\boxed{}``, "The answer is N", ``#### N``, else the last
number), ``gsm8k_dataset_postprocess`` reads the gold after ``####``, and both give one
canonical spelling (``1,000`` → ``1000``, ``18.00`` → ``18``), so exact-match accuracy
(AccEvaluator) is enough. Try it on a few problems first::

    python -m harness run datasets/gsm8k.py --limit 20 --model-base-url http://localhost:8000/v1
"""

from harness import (AccEvaluator, CustomDataset, GenInferencer, RawPromptTemplate,
                     ZeroRetriever, gsm8k_dataset_postprocess, gsm8k_postprocess)

# Each row is {"question": ..., "answer": "...reasoning...\n#### 72"}.
gsm8k_reader_cfg = dict(input_columns=["question"], output_column="answer")

gsm8k_infer_cfg = dict(
    prompt_template=dict(
        type=RawPromptTemplate,
        messages=[
            # OpenCompass's zero-shot GSM8K instruction. `\\boxed{}` has no value, so it
            # stays in the prompt as written; only {question} is filled in.
            {"role": "user",
             "content": "{question}\nPlease reason step by step, and put your final answer "
                        "within \\boxed{}."},
        ],
    ),
    retriever=dict(type=ZeroRetriever),
    inferencer=dict(type=GenInferencer, max_out_len=1024),
)

gsm8k_eval_cfg = dict(
    evaluator=dict(type=AccEvaluator),
    pred_postprocessor=dict(type=gsm8k_postprocess),          # the reply → '72'
    dataset_postprocessor=dict(type=gsm8k_dataset_postprocess),  # '… #### 72' → '72'
    pred_role="BOT",
)

datasets = [
    dict(
        abbr="gsm8k",
        type=CustomDataset,
        path="data/gsm8k/test.jsonl",   # relative to this file
        reader_cfg=gsm8k_reader_cfg,
        infer_cfg=gsm8k_infer_cfg,
        eval_cfg=gsm8k_eval_cfg,
    )
]
