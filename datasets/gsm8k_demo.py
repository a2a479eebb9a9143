"""Demo: the first 20 GSM8K test problems, four worked examples before each, on any endpoint.

The prompt is a plain text few-shot prompt (``Question: … Answer: … The answer is N.``),
the format base models are evaluated with: the embedded model (a base model, ``api='auto'``)
continues it on the completions endpoint, a chat model gets it as one user message. The
four examples are written for harness, not taken from GSM8K::

    python -m harness run datasets/gsm8k_demo.py
    python -m harness run datasets/gsm8k_demo.py --model-base-url http://localhost:8000/v1
"""

from harness import (AccEvaluator, CustomDataset, GenInferencer, PromptTemplate, ZeroRetriever,
                     gsm8k_dataset_postprocess, gsm8k_postprocess)

EXAMPLES = [
    ("A baker makes 3 trays of 12 cookies and sells 20 of them. How many cookies are left?",
     "The baker makes 3 * 12 = 36 cookies. After selling 20, 36 - 20 = 16 are left. "
     "The answer is 16."),
    ("Tom has $50. He buys 2 books for $8 each and a pen for $3. How much money does he "
     "have left?",
     "The books cost 2 * 8 = 16 dollars, so he spends 16 + 3 = 19 dollars. He has "
     "50 - 19 = 31 dollars left. The answer is 31."),
    ("A garden has 4 rows of 7 tomato plants. Each plant gives 5 tomatoes. How many "
     "tomatoes does the garden give?",
     "There are 4 * 7 = 28 plants, and they give 28 * 5 = 140 tomatoes. The answer is 140."),
    ("Sara reads 15 pages a day. How many days does she need to read a 120-page book?",
     "She needs 120 / 15 = 8 days. The answer is 8."),
]

gsm8k_demo_reader_cfg = dict(input_columns=["question"], output_column="answer",
                             test_range="[0:20]")

gsm8k_demo_infer_cfg = dict(
    prompt_template=dict(
        type=PromptTemplate,
        template="".join(f"Question: {q}\nAnswer: {a}\n\n" for q, a in EXAMPLES)
        + "Question: {question}\nAnswer:",
    ),
    retriever=dict(type=ZeroRetriever),
    # The reply ends where the model would start the next question.
    inferencer=dict(type=GenInferencer, max_out_len=256, stop=["\n\n", "Question:"]),
)

gsm8k_demo_eval_cfg = dict(
    evaluator=dict(type=AccEvaluator),
    pred_postprocessor=dict(type=gsm8k_postprocess),
    dataset_postprocessor=dict(type=gsm8k_dataset_postprocess),
)

datasets = [
    dict(
        abbr="gsm8k-demo",
        type=CustomDataset,
        path="data/gsm8k/test.jsonl",
        reader_cfg=gsm8k_demo_reader_cfg,
        infer_cfg=gsm8k_demo_infer_cfg,
        eval_cfg=gsm8k_demo_eval_cfg,
    )
]
