"""Demo: the first 20 GSM8K test problems, short answers, on any endpoint.

Run it with no endpoint configured and harness starts the embedded local model
(Gemma 3 270M, a tiny base model: expect a score near zero, every path is real)::

    python -m harness run datasets/gsm8k_demo.py
"""

from harness import (AccEvaluator, CustomDataset, GenInferencer, RawPromptTemplate,
                     ZeroRetriever, gsm8k_dataset_postprocess, gsm8k_postprocess)

gsm8k_reader_cfg = dict(input_columns=["question"], output_column="answer",
                        test_range="[0:20]")

gsm8k_infer_cfg = dict(
    prompt_template=dict(
        type=RawPromptTemplate,
        messages=[
            {"role": "user",
             "content": "{question}\nSolve it briefly, then finish with "
                        "'The answer is N.' where N is a number."},
        ],
    ),
    retriever=dict(type=ZeroRetriever),
    inferencer=dict(type=GenInferencer, max_out_len=160),
)

gsm8k_eval_cfg = dict(
    evaluator=dict(type=AccEvaluator),
    pred_postprocessor=dict(type=gsm8k_postprocess),
    dataset_postprocessor=dict(type=gsm8k_dataset_postprocess),
    pred_role="BOT",
)

datasets = [
    dict(
        abbr="gsm8k-demo",
        type=CustomDataset,
        path="data/gsm8k/test.jsonl",
        reader_cfg=gsm8k_reader_cfg,
        infer_cfg=gsm8k_infer_cfg,
        eval_cfg=gsm8k_eval_cfg,
        n=1,
    )
]
