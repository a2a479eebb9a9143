"""MATH-500 with cascade evaluation: math-verify first, an LLM judge for its failures.

The rule layer extracts the final answer as ``math500.py`` does (``math_postprocess_v2``:
the last ``\\boxed{}``, two different boxed answers without a visible correction fail) and
MATHVerifyEvaluator checks it for symbolic equivalence. A reply with no such answer is
``extract_failed`` and lowers ``extract_rate``; math-verify is never left to pick a number
out of the working. Only the samples the rule layer marks wrong, extraction failures
included, go to the judge (``parallel=False``), so judge cost is proportional to rule
failures, and the judge reads the model's whole reply: a right answer the rules cannot
find (stated without a box) can still be rescued. The judge is read from the environment::

    export OC_JUDGE_MODEL=Qwen/Qwen2.5-32B-Instruct OC_JUDGE_API_BASE=http://host:4000/v1
    export OC_JUDGE_API_KEY=...            # if the judge endpoint needs one
    python -m harness run datasets/math500_cascade.py --model-base-url http://host:8000/v1

The summary reports the rule layer and the judge correction separately.
"""

from harness import (CascadeEvaluator, CustomDataset, GenericLLMEvaluator, GenInferencer,
                     MATHVerifyEvaluator, RawPromptTemplate, ZeroRetriever,
                     generic_llmjudge_postprocess, judge_template, math_postprocess_v2)

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
        # Extraction belongs to the rule layer, not to eval_cfg: a dataset-level
        # pred_postprocessor would also hand the judge the extracted answer, and a reply
        # without a box would reach it as '' and never be judged (nothing to rescue).
        rule_evaluator=dict(type=MATHVerifyEvaluator,
                            pred_postprocessor=dict(type=math_postprocess_v2)),
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
