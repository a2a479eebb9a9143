"""NTREX-128 English→German: 1,997 sentences of the WMT19 news test set, new references.

Scored with ``BleuEvaluator``: sacrebleu's corpus BLEU (the primary metric, ``13a``
tokenizer) and chrF over all outputs, each with a bootstrap 95% interval. Sentences
are translated one at a time, without document context::

    python -m harness run datasets/ntrex128.py --limit 100 --model-base-url http://localhost:8000/v1
"""

from harness import CustomDataset, GenInferencer, RawPromptTemplate, ZeroRetriever
from harness.evaluators import BleuEvaluator

# Each row is {"id": 1, "doc_id": "...", "source": English, "reference": German}.
ntrex128_reader_cfg = dict(input_columns=["source"], output_column="reference")

ntrex128_infer_cfg = dict(
    prompt_template=dict(
        type=RawPromptTemplate,
        messages=[
            {"role": "user",
             "content": "Translate the following English sentence into German. Reply with "
                        "the German translation only.\nEnglish: {source}\nGerman:"},
        ],
    ),
    retriever=dict(type=ZeroRetriever),
    inferencer=dict(type=GenInferencer, max_out_len=256),
)

ntrex128_eval_cfg = dict(evaluator=dict(type=BleuEvaluator), pred_role="BOT")

datasets = [
    dict(
        abbr="ntrex128_en-de",
        type=CustomDataset,
        path="data/ntrex128/newstest2019.eng-deu.jsonl",   # relative to this file
        reader_cfg=ntrex128_reader_cfg,
        infer_cfg=ntrex128_infer_cfg,
        eval_cfg=ntrex128_eval_cfg,
    )
]
