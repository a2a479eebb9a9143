"""BIG-Bench-Hard's three multiple-choice tasks scored by likelihood (PPLInferencer).

No generation: each option letter is a candidate continuation of the same prompt (the
task description, the question with its options, then "A: The answer is ("), and the
letter the model finds most likely is its answer. That needs token log-probabilities:
vLLM and SGLang give them for the whole prompt (``echo``), llama.cpp's server (the
embedded model) and OpenAI chat models for the next token (single-token candidates,
as option letters are). The gold ``'(D)'`` becomes ``'D'`` by ``bbh_mcq_postprocess``.

The template has a prompt for every letter a task's questions use: A-F (dates), A-C
(three-object deduction), A-K (SVG shapes). Each question is scored over the options it
lists only (``listed_options=True``): 38 of the 250 date questions offer (A)-(E), 200 of
the 250 shape questions (A)-(J), and a letter the question does not offer is no answer.
Chance, averaged over the questions, is 17.2% (dates), 33.3% (deduction) and 9.8%
(shapes). Abbrs end in ``-ppl``, so this config shares a work directory with ``bbh.py``.

    python -m harness run bbh_ppl --limit 20
"""

from pathlib import Path

from harness import (AccEvaluator, CustomDataset, PPLInferencer, PromptTemplate,
                     ZeroRetriever, bbh_mcq_postprocess)

#: Task → the option letters its questions use (each question offers some of them).
TASKS = {"date_understanding": "ABCDEF", "logical_deduction_three_objects": "ABC",
         "geometric_shapes": "ABCDEFGHIJK"}

COT_PROMPTS = Path(__file__).parent / "data" / "bbh" / "cot-prompts"


def task_description(task):
    """The task's one-line description, from its 3-shot prompt file."""
    text = (COT_PROMPTS / f"{task}.txt").read_text(encoding="utf-8")
    return text.split("-----\n", 1)[1].strip().splitlines()[0]


def bbh_ppl_dataset(task, letters):
    """One task: a candidate prompt per option letter its questions use."""
    prompt = f"{task_description(task)}\n\nQ: {{input}}\nA: The answer is ("
    return dict(
        abbr=f"bbh-{task}-ppl",
        type=CustomDataset,
        path=f"data/bbh/{task}.json",
        reader_cfg=dict(input_columns=["input"], output_column="target"),
        infer_cfg=dict(
            prompt_template=dict(type=PromptTemplate,
                                 template={letter: prompt + letter for letter in letters}),
            retriever=dict(type=ZeroRetriever),
            # normalization='sum', method='auto'; each row's candidates: the options it lists
            inferencer=dict(type=PPLInferencer, listed_options=True),
        ),
        eval_cfg=dict(evaluator=dict(type=AccEvaluator),
                      dataset_postprocessor=dict(type=bbh_mcq_postprocess)),  # '(D)' → 'D'
    )


datasets = [bbh_ppl_dataset(task, letters) for task, letters in TASKS.items()]
