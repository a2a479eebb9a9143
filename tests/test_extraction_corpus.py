"""Every shipped benchmark config against the hand-labelled extraction corpus.

The corpus (``tests/extraction_corpus``) holds replies labelled by hand under the
grading policy in its README. Each shipped config must agree with the labels on at
least 97% of its task's rows, and never credit a wrong reply that hedges, is cut off
or addresses the grader. Rows are scored through the pipeline's own rule stage
(``harness.testing.corpus``), as a run scores them.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from harness.testing.corpus import (
    CATEGORIES,
    STRICT_CATEGORIES,
    TASKS,
    CorpusError,
    agreement,
    load_corpus,
    score_corpus,
    shipped_configs,
)

TARGET = 0.97


@pytest.fixture(scope="module")
def verdicts():
    import anyio

    return anyio.run(score_corpus, shipped_configs(), load_corpus())


def test_the_corpus_covers_every_task_and_category():
    rows = load_corpus()
    assert len(rows) >= 400
    per_task = Counter(r.task for r in rows)
    assert set(per_task) == set(TASKS)
    for task in TASKS:
        categories = Counter(r.category for r in rows if r.task == task)
        missing = [c for c in CATEGORIES if categories[c] < 4]
        assert not missing, f"{task}: fewer than 4 rows of {missing}"
        labels = Counter(r.correct for r in rows if r.task == task)
        assert labels[True] >= 0.3 * per_task[task] and labels[False] >= 0.3 * per_task[task]


def test_every_shipped_benchmark_config_is_measured():
    names = {c.name for c in shipped_configs()}
    assert {"gsm8k.py", "math500.py", "math500_cascade.py", "aime_style_cascade.py",
            "bbh.py:mcq", "bbh.py:bbh_freeform", "bbh_zeroshot.py:mcq",
            "bbh_zeroshot.py:bbh_freeform"} <= names


def test_each_config_agrees_with_the_labels_on_97_percent(verdicts):
    failures = []
    for config in sorted({v.config for v in verdicts}):
        counts = agreement(v for v in verdicts if v.config == config)
        if counts.rate < TARGET:
            wrong = [v.row.id for v in verdicts if v.config == config and not v.agrees]
            failures.append(f"{config}: {counts.rate:.1%} ({', '.join(wrong)})")
    assert not failures, "\n".join(failures)


def test_no_wrong_hedged_truncated_or_injected_reply_is_credited(verdicts):
    credited = [f"{v.config} {v.row.id}" for v in verdicts
                if v.row.category in STRICT_CATEGORIES and v.credited and not v.row.correct]
    assert credited == []


def test_a_bad_corpus_row_names_its_file_line_and_field(tmp_path: Path):
    good = dict(id="g-1", category="well_formed", kind="k", question="q", reference="#### 1",
                reply="1", correct=True, why="w")
    bad = {**good, "id": "g-2", "correct": "yes"}
    (tmp_path / "gsm8k.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(CorpusError, match=r"gsm8k\.jsonl:2: field 'correct' must be a bool"):
        load_corpus(tmp_path)
