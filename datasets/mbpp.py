"""MBPP (sanitized): 427 short Python programming tasks, each with three assertions.

The model gets the task and its tests, as in OpenCompass's MBPP prompt, and answers
with a function (fenced or between ``[BEGIN]`` and ``[DONE]``); ``MBPPEvaluator``
extracts the code and runs it with the ``test_list`` assertions in a bubblewrap
sandbox (``apt-get install bubblewrap``)::

    python -m harness run datasets/mbpp.py --limit 20 --model-base-url http://localhost:8000/v1
"""

from harness import (CustomDataset, GenInferencer, MBPPEvaluator, RawPromptTemplate,
                     ZeroRetriever, humaneval_postprocess_v2)

# Each row: task_id, prompt (the task), code (a reference), test_imports, test_list.
mbpp_reader_cfg = dict(input_columns=["prompt", "test_list"], output_column="task_id")

mbpp_infer_cfg = dict(
    prompt_template=dict(
        type=RawPromptTemplate,
        messages=[
            {"role": "user",
             "content": "You are an expert Python programmer, and here is your task: "
                        "{prompt} Your code should pass these tests:\n\n{test_list}\n\n"
                        "Write the function in a ```python code block."},
        ],
    ),
    retriever=dict(type=ZeroRetriever),
    inferencer=dict(type=GenInferencer, max_out_len=512),
)

mbpp_eval_cfg = dict(
    evaluator=dict(type=MBPPEvaluator, k=[1, 10]),
    pred_postprocessor=dict(type=humaneval_postprocess_v2),  # finds the tested function
    pred_role="BOT",
)

datasets = [
    dict(
        abbr="mbpp",
        type=CustomDataset,
        path="data/mbpp/sanitized-mbpp.jsonl",   # relative to this file
        reader_cfg=mbpp_reader_cfg,
        infer_cfg=mbpp_infer_cfg,
        eval_cfg=mbpp_eval_cfg,
    )
]
