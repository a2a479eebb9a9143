"""The HTML report of a text-metric run (shipped ntrex128, BLEU/chrF) names the metric."""

from __future__ import annotations

from harness.report import gather, render_html

from .test_metrics_results import fail_some, results_json, run_ntrex


async def test_report_shows_bleu_and_chrf_by_name_with_their_intervals(tmp_path):
    await run_ntrex(tmp_path / "w")
    page = render_html(gather(tmp_path / "w"))
    summary = page[page.index('<table class="summary">'):page.index("</table>")]
    metrics = results_json(tmp_path / "w", "ntrex128_en-de")["metrics"]
    for name in ("bleu", "chrf"):
        m = metrics[name]
        assert f"{name} {m['value']:.2f}</span>" in summary
        assert f"95% CI {m['ci95'][0]:.2f}–{m['ci95'][1]:.2f}" in summary
    # No accuracy of a BLEU run (the old defect showed 0.00% and 0 / 50 correct).
    assert "correct" not in summary and "0.00%" not in summary


async def test_report_breakdown_counts_scored_samples_not_wrong_ones(tmp_path):
    await run_ntrex(tmp_path / "w", faults=fail_some)
    report = gather(tmp_path / "w")
    (section,) = report["sections"]
    counts = {b["key"]: b["count"] for b in section["breakdown"]}
    assert section["kind"] == "metric"
    assert counts == {"scored": 45, "extract_failed": 0, "error": 5}
    assert all(isinstance(s["score"], float) for s in section["samples"]
               if s["status"] == "ok")
    page = render_html(report)
    assert "bounds" not in results_json(tmp_path / "w", "ntrex128_en-de")["metrics"]["bleu"]
    assert "bleu incomplete: no value" in page and "chrf incomplete: no value" in page
