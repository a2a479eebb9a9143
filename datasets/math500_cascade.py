"""MATH-500 with cascade evaluation: math-verify first, an LLM judge for its failures.

The rule layer (MATHVerifyEvaluator) checks the last ``\\boxed{}`` answer for symbolic
equivalence; only the samples it marks wrong go to the judge (``parallel=False``), so
judge cost is proportional to rule failures. The judge is read from the environment::

    export OC_JUDGE_MODEL=Qwen/Qwen2.5-32B-Instruct OC_JUDGE_API_BASE=http://host:4000/v1
    export OC_JUDGE_API_KEY=...            # if the judge endpoint needs one
    python -m harness run datasets/math500_cascade.py --model-base-url http://host:8000/v1

The summary reports the rule layer and the judge correction separately.
"""

from harness import (CascadeEvaluator, CustomDataset, GenericLLMEvaluator, GenInferencer,
                     MATHVerifyEvaluator, RawPromptTemplate, ZeroRetriever,
                     generic_llmjudge_postprocess, judge_template)

math500_reader_cfg = dict(input_columns=["problem"], output_column="answer")

math500_infer_cfg = dict(
    prompt_template=dict(
        type=RawPromptTemplate,
        messages=[{"role": "user",
                   "content": "{problem}\nRemember to put your final answer within \\boxed{}."}],
    ),
    retriever=dict(type=ZeroRetriever),
    inferencer=dict(type=GenInferencer, max_out_len=4096),
)

math500_eval_cfg = dict(
    evaluator=dict(
        type=CascadeEvaluator,
        rule_evaluator=dict(type=MATHVerifyEvaluator),
        llm_evaluator=dict(
            type=GenericLLMEvaluator,
            # judges/grader.txt: the seed's grader template ({problem}, {answer}, {prediction}).
            prompt_template=judge_template("grader"),
            judge_cfg=dict(),  # OC_JUDGE_MODEL / OC_JUDGE_API_KEY / OC_JUDGE_API_BASE
            dict_postprocessor=dict(type=generic_llmjudge_postprocess),
        ),
        parallel=False,
    ),
    pred_role="BOT",
)

datasets = [
    dict(
        abbr="math500-cascade",
        type=CustomDataset,
        path="data/math500/test.jsonl",
        reader_cfg=math500_reader_cfg,
        infer_cfg=math500_infer_cfg,
        eval_cfg=math500_eval_cfg,
        n=1,
    )
]
