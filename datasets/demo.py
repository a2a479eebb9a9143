"""Demo: one task the embedded model can do and one it cannot, on any endpoint.

``arithmetic-demo`` asks 40 one-digit sums, differences and products (``3 * 4 =``) after
eight worked examples; ``gsm8k-demo`` asks the first 20 GSM8K problems after four worked examples
(see ``gsm8k_demo.py``). Both are plain text few-shot prompts, the format base models are
evaluated with. Run it with no endpoint and harness starts the embedded Gemma 3 270M::

    python -m harness run datasets/demo.py
"""

from gsm8k_demo import datasets as gsm8k_demo_datasets

from harness import (AccEvaluator, CustomDataset, GenInferencer, PromptTemplate, ZeroRetriever,
                     gsm8k_postprocess)

EXAMPLES = ["2 + 3 = 5", "7 - 4 = 3", "3 * 4 = 12", "6 + 8 = 14", "9 - 2 = 7", "5 * 6 = 30",
            "4 + 4 = 8", "8 * 2 = 16"]

arithmetic_datasets = [
    dict(
        abbr="arithmetic-demo",
        type=CustomDataset,
        path="data/arithmetic/test.jsonl",
        reader_cfg=dict(input_columns=["question"], output_column="answer"),
        infer_cfg=dict(
            prompt_template=dict(
                type=PromptTemplate,
                template="".join(f"{example}\n" for example in EXAMPLES) + "{question}",
            ),
            retriever=dict(type=ZeroRetriever),
            inferencer=dict(type=GenInferencer, max_out_len=8, stop=["\n"]),
        ),
        eval_cfg=dict(evaluator=dict(type=AccEvaluator),
                      pred_postprocessor=dict(type=gsm8k_postprocess)),
    )
]

datasets = [*arithmetic_datasets, *gsm8k_demo_datasets]
