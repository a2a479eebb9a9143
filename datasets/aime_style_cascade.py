"""AIME-style cascade evaluation, following the seed's AIME 2026 config line by line.

One line differs: the rule layer extracts the final answer first, as ``math500.py``
does (``math_postprocess_v2``: the last ``\\boxed{}``, hedges fail), so a reply with no
answer is ``extract_failed`` instead of math-verify taking any number in it (``2019``
from "the years 2019-2020"). The judge still reads the whole reply and can rescue a
right answer written without a box. (``tests/seed_configs/aime2026_cascade.py`` is the
seed's config unchanged but for its imports.)

No AIME set ships with harness; ``data/aime_style`` holds the MATH-500 level-5 problems
with integer answers from 0 to 999 (AIME's answer format; see data/SOURCES.md). Point
``path`` at real AIME problems (columns ``problem`` and ``answer``) to evaluate those.
The judge comes from OC_JUDGE_MODEL / OC_JUDGE_API_KEY / OC_JUDGE_API_BASE.
"""

from harness import (CascadeEvaluator, CustomDataset, GenericLLMEvaluator, GenInferencer,
                     MATHVerifyEvaluator, RawPromptTemplate, ZeroRetriever,
                     generic_llmjudge_postprocess, judge_template, math_postprocess_v2)

aime_reader_cfg = dict(input_columns=["problem"], output_column="answer")

aime_infer_cfg = dict(
    prompt_template=dict(
        type=RawPromptTemplate,
        messages=[{"role": "user",
                   "content": "{problem}\nRemember to put your final answer within \\boxed{}."}],
    ),
    retriever=dict(type=ZeroRetriever),
    inferencer=dict(type=GenInferencer),
)

cascade_evaluator = dict(
    type=CascadeEvaluator,
    # On the rule layer only (see math500_cascade.py): the judge keeps the whole reply.
    rule_evaluator=dict(type=MATHVerifyEvaluator, pred_postprocessor=dict(type=math_postprocess_v2)),
    llm_evaluator=dict(
        type=GenericLLMEvaluator,
        prompt_template=judge_template("grader"),
        dataset_cfg=dict(type=CustomDataset, path="data/aime_style", reader_cfg=aime_reader_cfg),
        judge_cfg=dict(),
        dict_postprocessor=dict(type=generic_llmjudge_postprocess),
    ),
    parallel=False,
)

aime_eval_cfg = dict(evaluator=cascade_evaluator)

aime_style_datasets = [
    dict(
        type=CustomDataset,
        abbr="aime-style",
        path="data/aime_style",
        reader_cfg=aime_reader_cfg,
        infer_cfg=aime_infer_cfg,
        eval_cfg=aime_eval_cfg,
        n=1,
    )
]
