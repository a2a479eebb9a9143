"""The report page's stylesheet and script, inlined into every report.

Kept as Python strings so the report is one self-contained file with no package data
to install. The script only ever puts sample text on the page with ``textContent``:
model replies are untrusted and may contain markup or ``</script>``.
"""

from __future__ import annotations

#: The page's stylesheet; category badge colours are appended from ``svg.COLORS``.
CSS = """
:root { --fg: #1f2933; --muted: #616e7c; --line: #d9e2ec; --bg: #f5f7fa; --accent: #1e88e5; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
       color: var(--fg); background: var(--bg); }
main { max-width: 1240px; margin: 0 auto; padding: 20px 24px 60px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 0 0 10px; }
h3 { font-size: 15px; margin: 18px 0 8px; }
.meta, .note { color: var(--muted); }
.note { font-size: 13px; margin: 6px 0; }
nav { margin: 10px 0 18px; }
nav a { margin-right: 14px; color: var(--accent); }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px;
        padding: 16px 18px; margin: 16px 0; }
table { border-collapse: collapse; }
table.samples { width: 100%; }
table.summary td { min-width: 220px; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line);
         vertical-align: top; }
th { background: #f0f4f8; font-weight: 600; font-size: 13px; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.acc { font-size: 18px; font-weight: 600; }
.small { font-size: 12px; color: var(--muted); }
.kind { display: inline-block; font-size: 12px; padding: 1px 8px; border-radius: 10px;
        background: #e3f2fd; color: #0d47a1; margin-left: 8px; vertical-align: middle; }
.chart text { font: 13px system-ui, sans-serif; fill: var(--fg); }
.filters { display: flex; flex-wrap: wrap; gap: 6px; margin: 10px 0; }
.filter { border: 1px solid var(--line); background: #fff; border-radius: 16px;
          padding: 4px 12px; cursor: pointer; font: inherit; font-size: 13px; }
.filter[aria-pressed="true"] { background: var(--accent); border-color: var(--accent);
                               color: #fff; }
.filter .n { opacity: .75; margin-left: 4px; }
table.samples { table-layout: fixed; }
table.samples td { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
tr.sample { cursor: pointer; }
tr.sample:hover, tr.sample:focus { background: #f0f7ff; outline: none; }
tr.open { background: #e8f1fb; }
.badge { display: inline-block; color: #fff; border-radius: 4px; padding: 0 6px;
         font-size: 12px; white-space: nowrap; }
.detail-cell { background: #fbfcfd; white-space: normal !important; }
.detail h4 { margin: 10px 0 4px; font-size: 13px; color: var(--muted); }
.detail pre { margin: 0; padding: 8px 10px; background: #fff; border: 1px solid var(--line);
              border-radius: 4px; white-space: pre-wrap; word-break: break-word;
              max-height: 360px; overflow: auto; font: 12.5px/1.4 ui-monospace, Menlo,
              Consolas, monospace; }
.detail .role { font-size: 12px; font-weight: 600; color: var(--muted); }
.detail dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 4px 0; }
.detail dt { color: var(--muted); }
.detail dd { margin: 0; word-break: break-word; }
.more { margin-top: 8px; }
.ok { color: #2e7d32; font-weight: 600; }
.bad { color: #c62828; font-weight: 600; }
"""

#: The sample browser: reads the JSON island, draws filters and rows, sets
#: ``data-ready`` on ``<html>`` when done (the browser test waits for it).
JS = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var PAGE = 100;

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function mark(value) {
    return el("span", value === true ? "ok" : value === false ? "bad" : "small",
              value === true ? "\u2713" : value === false ? "\u2717" : "\u2013");
  }
  function firstLine(text) {
    if (text === null || text === undefined) return "";
    var line = String(text).split("\n").find(function (l) { return l.trim(); });
    return line === undefined ? "" : line;
  }
  function judgeText(s) {
    if (!s.judge) return "";
    if (s.judge.status !== "ok") return s.judge.status;
    return s.judge.verdict + (s.judge.correct ? " (correct)" : " (wrong)");
  }

  function detail(s, labels) {
    var box = el("div", "detail");
    function block(title, text) {
      if (text === null || text === undefined || text === "") return;
      box.appendChild(el("h4", null, title));
      box.appendChild(el("pre", null, text));
    }
    box.appendChild(el("h4", null, "Prompt"));
    s.prompt.forEach(function (m) {
      box.appendChild(el("div", "role", m.role));
      box.appendChild(el("pre", null, m.content));
    });
    block("Raw reply", s.reply);
    block("Reasoning (sent apart from the reply; never scored)", s.reasoning);
    var dl = el("dl");
    function item(name, value) {
      if (value === null || value === undefined) return;
      dl.appendChild(el("dt", null, name));
      dl.appendChild(el("dd", null, value));
    }
    item("extracted", s.pred === "" ? "(nothing extracted)" : s.pred);
    item("reference", s.reference);
    item("status", s.status + " \u00b7 " + (labels[s.cat] || s.cat));
    if (typeof s.score === "number") item("sample score", s.score.toFixed(2));
    if (typeof s.score !== "number" || s.correct !== null)
      item("final", s.correct === true ? "correct" : s.correct === false ? "wrong" : "not scored");
    if (s.rule) item("rule check", (s.rule.correct ? "correct" : "wrong") +
                     " (extracted " + JSON.stringify(s.rule.pred) + ")");
    if (s.judge) {
      item("judge", judgeText(s) + (s.judge.cached ? " \u00b7 cached verdict" : ""));
      if (typeof s.judge.probability === "number")
        item("verdict probability", s.judge.probability.toFixed(3));
      item("judge note", s.judge.reason);
    }
    box.appendChild(dl);
    if (s.judge) block("Judge reply", s.judge.reply);
    block("Error", s.error);
    return box;
  }

  function browser(root, sec) {
    var labels = {};
    sec.breakdown.forEach(function (b) { labels[b.key] = b.label; });
    var judged = sec.kind === "cascade" || sec.kind === "judge";
    var state = { filter: "all", limit: PAGE };
    var bar = el("div", "filters");
    bar.setAttribute("role", "group");
    bar.setAttribute("aria-label", "filter samples");
    var buttons = sec.filters.map(function (f) {
      var b = el("button", "filter", f.label);
      b.type = "button";
      b.dataset.filter = f.key;
      // Under a cap, "embedded/total": the button lists only what the page holds.
      b.appendChild(el("span", "n", f.total > f.count ? f.count + "/" + f.total : f.count));
      b.addEventListener("click", function () {
        state.filter = f.key;
        state.limit = PAGE;
        draw();
      });
      bar.appendChild(b);
      return b;
    });
    var shown = el("p", "note shown");
    var table = el("table", "samples");
    var head = el("tr");
    var cols = [["#", "8%"], ["result", "13%"], ["extracted", "15%"], ["reference", "15%"]];
    if (judged) cols.push(["judge", "12%"]);
    cols.push(["raw reply (first line)", judged ? "37%" : "49%"]);
    cols.forEach(function (c) {
      var th = el("th", null, c[0]);
      th.style.width = c[1];
      head.appendChild(th);
    });
    table.appendChild(el("thead")).appendChild(head);
    var body = table.appendChild(el("tbody"));
    var more = el("button", "filter more", "show more");
    more.type = "button";
    more.addEventListener("click", function () { state.limit += PAGE; draw(); });
    root.append(bar, shown, table, more);

    function row(s) {
      var tr = el("tr", "sample");
      tr.tabIndex = 0;
      tr.dataset.index = s.index;
      tr.appendChild(el("td", null, s.index + (s.replica ? " \u00b7 r" + s.replica : "")));
      var cell = el("td");
      cell.appendChild(el("span", "badge cat-" + s.cat, labels[s.cat] || s.cat));
      tr.appendChild(cell);
      var pred = el("td", null, s.pred === "" ? "(none)" : s.pred);
      pred.title = s.pred || "";
      tr.append(pred, el("td", null, s.reference));
      if (judged) tr.appendChild(el("td", null, judgeText(s)));
      var start = s.reply ? firstLine(s.reply) : s.error ? "error: " + firstLine(s.error) : "";
      tr.appendChild(el("td", s.reply ? null : "bad", start));
      var open = null;
      function toggle() {
        if (open) { open.remove(); open = null; tr.classList.remove("open"); return; }
        open = el("tr", "detail-row");
        var td = el("td", "detail-cell");
        td.colSpan = cols.length;
        td.appendChild(detail(s, labels));
        open.appendChild(td);
        tr.after(open);
        tr.classList.add("open");
      }
      tr.addEventListener("click", toggle);
      tr.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); toggle(); }
      });
      return tr;
    }

    function draw() {
      buttons.forEach(function (b) {
        b.setAttribute("aria-pressed", String(b.dataset.filter === state.filter));
      });
      var rows = sec.samples.filter(function (s) {
        return state.filter === "all" || s.flags.indexOf(state.filter) >= 0;
      });
      body.replaceChildren.apply(body, rows.slice(0, state.limit).map(row));
      var f = sec.filters.find(function (x) { return x.key === state.filter; });
      var text = "Showing " + Math.min(rows.length, state.limit) + " of " + rows.length +
                 " samples (" + f.label + ")";
      if (f.total > f.count) text += "; " + f.total + " in the run, " + f.count + " embedded";
      shown.textContent = text + ". Click a row for the prompt, the reply and the verdicts.";
      more.hidden = rows.length <= state.limit;
    }
    draw();
  }

  data.sections.forEach(function (sec) {
    var root = document.getElementById(sec.id);
    if (root && sec.samples.length) browser(root, sec);
  });
  document.documentElement.dataset.ready = "1";
})();
"""
