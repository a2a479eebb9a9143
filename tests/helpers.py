"""Test data: arithmetic datasets, a responder that answers them, config files.

The workload itself (datasets, replies, the judge) lives in ``harness.testing.workloads``
so the benchmarks use the very same one.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import harness
from harness.testing.workloads import (  # noqa: F401  (re-exported for the tests)
    JUDGE_MODEL,
    JUDGE_TEMPLATE,
    arith_datasets,
    arith_reply,
    cascade_reply,
    expected_cascade,
    expected_correct,
    fake_judge,
    model_and_judge,
    write_arith,
    write_judge_config,
)


def write_config(path: Path, data: Path, *, models: Iterable[dict[str, Any]] | None = None,
                 evaluator: str = "AccEvaluator", pred_pp: str | None = "gsm8k_postprocess",
                 ref_pp: str | None = "gsm8k_dataset_postprocess", n: int = 1,
                 extra: str = "") -> Path:
    """A config in the seed vocabulary, importing from ``harness``."""
    pp = f"pred_postprocessor=dict(type={pred_pp})," if pred_pp else ""
    rp = f"dataset_postprocessor=dict(type={ref_pp})," if ref_pp else ""
    import harness

    names = ["CustomDataset", "RawPromptTemplate", "ZeroRetriever", "GenInferencer",
             evaluator, pred_pp, ref_pp]
    imports = ", ".join(x for x in names if x and x in harness.__all__)
    models_src = f"models = {list(models)!r}" if models is not None else ""
    eval_cfg = f"dict(evaluator=dict(type={evaluator}), {pp} {rp} pred_role='BOT')"
    path.write_text(f"from harness import {imports}\n{extra}\n"
                    + arith_datasets(data, eval_cfg, n=n) + f"{models_src}\n")
    return path


def arith_dataset(path: Path, evaluator: dict[str, Any]) -> dict[str, Any]:
    """The arithmetic dataset as a dataset dict for ``harness.evaluate(datasets=...)``,
    scored by ``evaluator`` after gsm8k extraction."""
    import harness

    return dict(
        abbr="arith", type=harness.CustomDataset, path=str(path),
        reader_cfg=dict(input_columns=["question"], output_column="answer"),
        infer_cfg=dict(prompt_template=dict(type=harness.RawPromptTemplate,
                                            messages=[dict(role="user", content="{question}")]),
                       retriever=dict(type=harness.ZeroRetriever),
                       inferencer=dict(type=harness.GenInferencer, max_out_len=16)),
        eval_cfg=dict(evaluator=evaluator, pred_postprocessor=dict(type="gsm8k"),
                      dataset_postprocessor=dict(type="gsm8k-dataset")))


def model_cfg(base_url: str, **kw: Any) -> dict[str, Any]:
    """An OpenCompass-style model dict for the fake server."""
    return dict(abbr="fake", type="OpenAISDK", path="fake-model", openai_api_base=base_url,
                key="sk-test-not-a-secret", temperature=0.0, **kw)


def count_stored(db: Path, *tables: str) -> int:
    """Rows with status 'ok' in ``tables`` of a live store, read-only (0 while it does
    not exist yet or is busy): how subprocess tests watch a run's progress."""
    import sqlite3

    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            return sum(con.execute(f"SELECT count(*) FROM {t} WHERE status='ok'").fetchone()[0]
                       for t in tables or ("predictions",))
        finally:
            con.close()
    except sqlite3.Error:
        return 0


async def same_scores_and_a_free_rerun(report: Any, server: Any, cfg: Path, work: Path,
                                       datasets: tuple[str, ...], concurrency: int) -> None:
    """The ``datasets`` of ``report`` score alike, and the same run again sends
    ``server`` no request and prints the same scores and details (but for which
    predictions and verdicts were reused: ``cached``)."""
    scores = {d: report.result(d)["correct"] for d in datasets}
    assert len(set(scores.values())) == 1, scores
    rows = {s.details: _uncached(s.details) for s in report.summaries}
    server.reset()
    rerun = await harness.evaluate(cfg, work_dir=work, concurrency=concurrency)
    assert server.stats.total == 0
    assert {d: rerun.result(d)["correct"] for d in datasets} == scores
    for path, before in rows.items():
        after = _uncached(path)
        assert after == before, next((a, b) for a, b in zip(after, before, strict=True) if a != b)


def _uncached(details: Any) -> list[Any]:
    """The rows of a details file without their ``cached`` flags."""
    import json

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "cached"}
        return value

    return [strip(json.loads(line)) for line in Path(details).read_text().splitlines()]
