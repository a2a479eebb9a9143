"""Render the data of ``harness.report.data.gather`` as one self-contained HTML page.

Static parts (summary table, charts, cost tables) are rendered here with every value
escaped; the sample browser is drawn by the inline script from a JSON island. The
page's Content-Security-Policy allows only this page's own script and style (by
hash) and no network at all, so even text that slipped past escaping could neither
run nor phone home.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from html import escape
from typing import Any

from ..table import rate
from .assets import CSS, JS
from .svg import COLORS, bar_chart

_KIND_LABEL = {"cascade": "rule + LLM judge", "judge": "LLM judge", "rule": "rule check",
               "infer": "predictions only", "metric": "text metric"}


def render_html(report: dict[str, Any]) -> str:
    """The complete HTML document for a gathered report."""
    css = CSS + "".join(f".cat-{k} {{ background: {c}; }}\n" for k, c in COLORS.items())
    csp = ("default-src 'none'; "
           f"style-src '{_sha256(css)}'; script-src '{_sha256(JS)}'")
    sections = [{**sec, "id": f"samples-{i}"} for i, sec in enumerate(report["sections"])]
    body = [
        "<header>", "<h1>Evaluation report</h1>",
        f'<p class="meta">Work directory <code>{escape(report["work_dir"])}</code> · '
        f'generated {escape(report["generated"])}{_elapsed(report.get("elapsed_seconds"))}</p>',
        "</header>", _nav(sections),
        '<section class="card" id="summary"><h2>Summary</h2>',
        _summary_table(report["summaries"]),
        '<p class="note">Accuracy is over every sample, with its 95% Wilson interval; a '
        "result with pending samples (a failed model or judge call) is incomplete and shows "
        "only the range its metric lies in. Extract rate is the share of scored replies "
        "an answer was found in. A text metric (BLEU, chrF, ROUGE, EM, F1) is shown by "
        "name, BLEU and chrF as corpus scores, with a 95% interval (Wilson for a 0/1 "
        "judgement such as EM, a bootstrap over samples otherwise).</p></section>",
        _costs(report["judges"], report["models"]),
        *(_section(i, sec, report) for i, sec in enumerate(sections)),
    ]
    island = {"sections": [{k: sec[k] for k in ("id", "kind", "breakdown", "filters",
                                                "samples")} for sec in sections]}
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">',
        f'<title>harness report · {escape(report["work_dir"])}</title>',
        f"<style>{css}</style></head><body><main>", *body, "</main>",
        f'<script type="application/json" id="report-data">{script_json(island)}</script>',
        f"<script>{JS}</script>", "</body></html>", ""])


def script_json(data: Any) -> str:
    """JSON safe inside ``<script>``: ``<``, ``>`` and ``&`` become ``\\u003c`` etc.

    With no ``<`` left, nothing in the data can close the script element or open a
    comment, whatever a model wrote; ``JSON.parse`` restores the characters.
    """
    text = json.dumps(_finite(data), ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def _finite(value: Any) -> Any:
    """Replace NaN and infinities, which ``JSON.parse`` rejects, by ``null``."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _elapsed(seconds: Any) -> str:
    return f" · last run took {seconds:.1f} s" if isinstance(seconds, (int, float)) else ""


def _nav(sections: list[dict[str, Any]]) -> str:
    links = ['<a href="#summary">summary</a>', '<a href="#costs">cost</a>']
    links += [f'<a href="#section-{i}">{escape(s["dataset"])} · {escape(s["model"])}</a>'
              for i, s in enumerate(sections)]
    return f"<nav>{''.join(links)}</nav>"


def _summary_table(summaries: list[dict[str, Any]]) -> str:
    models = list(dict.fromkeys(s["model"] for s in summaries))
    datasets = list(dict.fromkeys(s["dataset"] for s in summaries))
    cells = {(s["dataset"], s["model"]): s for s in summaries}
    head = "".join(f"<th>{escape(m)}</th>" for m in models)
    rows = []
    for d in datasets:
        tds = "".join(f"<td>{_cell(cells[(d, m)]) if (d, m) in cells else '–'}</td>"
                      for m in models)
        rows.append(f"<tr><th>{escape(d)}</th>{tds}</tr>")
    return (f'<table class="summary"><thead><tr><th>dataset</th>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>")


def _cell(s: dict[str, Any]) -> str:
    counts = " · ".join(f"{escape(str(k))} {v}" for k, v in (s.get("counts") or {}).items())
    if s.get("mode") == "infer":
        failed = s.get("pending", 0)
        main = f'<span class="acc">{s.get("total", 0) - failed} predicted</span>'
        if failed:
            main += f' <span class="bad">incomplete: {failed} model_error</span>'
        return f'{main}<div class="small">{counts}</div>'
    if s.get("primary_metric") not in (None, "accuracy"):
        return _metric_cell(s, counts)
    if not s.get("complete", True) or s.get("accuracy") is None:
        return _incomplete_cell(s, counts)
    ci = s.get("accuracy_ci95")
    parts = [f'<span class="acc">{s["accuracy"]:.2f}%</span>']
    if ci:
        parts.append(f' <span class="small">95% CI {ci[0]:.2f}–{ci[1]:.2f}</span>')
    parts.append(f'<div>{s["correct"]} / {s["scored"]} correct')
    if s.get("extract_rate") is not None:
        parts.append(f' · extract {rate(s["extract_rate"])}%')
    parts.append("</div>")
    cascade = s.get("cascade_stats")
    if cascade and s.get("judge_mode") in ("cascade", "parallel"):
        gain = cascade["final_accuracy"] - cascade["rule_accuracy"]
        parts.append(f'<div class="small">rule {cascade["rule_accuracy"]:.2f} + judge '
                     f'{gain:.2f} ({escape(str(s["judge_mode"]))})</div>')
    parts.append(f'<div class="small">{counts}</div>')
    return "".join(parts)


def _incomplete_cell(s: dict[str, Any], counts: str) -> str:
    """An incomplete result shows no single number: only the bounds of its accuracy."""
    bounds = s.get("accuracy_bounds")
    main = (f'<span class="acc bad">incomplete: {bounds[0]:.2f}–{bounds[1]:.2f}%</span>'
            if bounds else '<span class="acc">n/a</span>')
    return (f'{main}<div>{s.get("correct", 0)} / {s.get("total", 0)} correct · '
            f'<span class="bad">{s.get("pending", 0)} pending</span> (all wrong … all right)'
            f'</div><div class="small">{counts}</div>')


def _metric_cell(s: dict[str, Any], counts: str) -> str:
    """A text-metric result: each metric by name, the primary one first and large; while
    samples are pending, each metric's bounds instead of a value."""
    metrics = s.get("metrics") or {}
    primary = s["primary_metric"]
    names = [primary, *(n for n in metrics if n != primary)]
    parts = []
    for i, name in enumerate(names):
        m = metrics.get(name) or {}
        cls = "acc" if i == 0 else "small"
        if m.get("value") is not None:
            ci = m.get("ci95")
            ci_text = f' <span class="small">95% CI {ci[0]:.2f}–{ci[1]:.2f}</span>' if ci else ""
            parts.append(f'<div><span class="{cls}">{escape(name)} {m["value"]:.2f}</span>'
                         f"{ci_text}</div>")
        elif m.get("bounds"):
            low, high = m["bounds"]
            parts.append(f'<div><span class="{cls} bad">{escape(name)} incomplete: '
                         f"{low:.2f}–{high:.2f}</span></div>")
        elif s.get("pending"):  # a corpus metric has no bounds while samples are pending
            parts.append(f'<div><span class="{cls} bad">{escape(name)} incomplete: '
                         "no value</span></div>")
    scored = f'{s.get("scored", 0)} / {s.get("total", 0)} scored'
    if s.get("pending"):
        scored += f' · <span class="bad">{s["pending"]} pending</span>'
    parts.append(f'<div>{scored}</div><div class="small">{counts}</div>')
    return "".join(parts)


def _costs(judges: list[dict[str, Any]], models: list[dict[str, Any]]) -> str:
    out = ['<section class="card" id="costs"><h2>Cost</h2>']
    if judges:
        out.append("<h3>Judge</h3>")
        cols = [("requests", "requests"), ("prompt_tokens", "prompt tokens"),
                ("completion_tokens", "completion tokens"), ("cache_hits", "cache hits"),
                ("retries", "retries"), ("rate_limited", "429s"), ("reasks", "re-asks"),
                ("unparsed", "unparsed"), ("errors", "errors")]
        out.append(_table(["judge", *(c[1] for c in cols)],
                          [[j["judge"], *(j.get(k, 0) for k, _ in cols)] for j in judges]))
        stored = [j for j in judges if j.get("stored")]
        if stored:
            out.append('<p class="note">The table counts the last run; verdicts served '
                       "from the store cost nothing. Over every run of this work "
                       "directory the store holds:</p>")
            out.append(_table(
                ["judge", "stored verdicts", "requests", "prompt tokens", "completion tokens"],
                [[j["judge"], j["stored"]["verdicts"], j["stored"]["requests"],
                  j["stored"]["prompt_tokens"], j["stored"]["completion_tokens"]]
                 for j in stored]))
    else:
        out.append('<p class="note">No LLM judge in these results.</p>')
    if models:
        out.append("<h3>Model calls (each model's latest run)</h3>")
        cols = [("requests", "requests"), ("prompt_tokens", "prompt tokens"),
                ("completion_tokens", "completion tokens"), ("retries", "retries"),
                ("rate_limited", "429s"), ("failures", "failed calls")]
        out.append(_table(["model", *(c[1] for c in cols)],
                          [[m["model"], *(m.get(k, 0) for k, _ in cols)] for m in models]))
    out.append("</section>")
    return "".join(out)


def _table(header: list[str], rows: list[list[Any]]) -> str:
    def td(v: Any, first: bool) -> str:
        return f"<td>{escape(str(v))}</td>" if first else f'<td class="num">{escape(str(v))}</td>'

    head = "".join(f"<th{'' if i == 0 else ' class=num'}>{escape(h)}</th>"
                   for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(td(v, i == 0) for i, v in enumerate(r)) + "</tr>"
                   for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _section(i: int, sec: dict[str, Any], report: dict[str, Any]) -> str:
    title = f'{escape(sec["dataset"])} · {escape(sec["model"])}'
    kind = _KIND_LABEL.get(sec["kind"], sec["kind"])
    if sec["judge_mode"] in ("cascade", "parallel"):
        kind += f' ({escape(sec["judge_mode"])})'
    out = [f'<section class="card" id="section-{i}">',
           f'<h2>{title}<span class="kind">{escape(kind)}</span></h2>']
    if not sec["has_details"]:
        out.append('<p class="note">No per-sample details in this work directory (the run '
                   "used --no-dump-eval-details), so there is no breakdown or sample list.</p>")
        return "".join(out) + "</section>"
    out.append(bar_chart(sec["breakdown"], f'{sec["dataset"]} on {sec["model"]}: '
                         f'{sec["total_samples"]} samples'))
    out.append(f'<h3>Samples</h3><div class="browser" id="{sec["id"]}">')
    if sec["embedded"] < sec["total_samples"]:
        out.append(f'<p class="note cap">This report embeds {sec["embedded"]:,} of '
                   f'{sec["total_samples"]:,} samples (cap {sec["cap"]:,} per dataset): '
                   "disagreements, failures and wrong answers first, sharing the cap evenly, "
                   "then the rest. The chart counts all samples; the filters show "
                   "embedded/total; every sample is in the details JSONL.</p>")
    out.append(f'<p class="note">Texts longer than {report["text_limit"]:,} characters are '
               "cut.</p><noscript><p class=\"note\">The sample browser needs JavaScript."
               "</p></noscript></div></section>")
    return "".join(out)
