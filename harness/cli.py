"""``python -m harness``: a thin command-line layer over ``harness.api``.

Kept light on purpose: only ``argparse`` is imported before a command runs, so
``--help`` answers at once (the OpenAI SDK and sympy take most of a second to import).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .summary import ResultSummary

#: Exit codes: 0 all scored; 1 some samples pending, the run is incomplete (rerun to
#: retry them);
#: 2 bad config/input (a bad flag, value or endpoint URL), an unusable work directory or
#: store (a file, read-only, full, damaged, in use by another run), or a permanent
#: endpoint error; 130 interrupted.
EXIT_OK, EXIT_FAILED_SAMPLES, EXIT_CONFIG = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (also used to document the CLI in the README)."""
    from .defaults import CONCURRENCY, MAX_ATTEMPTS

    parser = argparse.ArgumentParser(
        prog="harness", description="Asynchronous LLM evaluation harness.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="evaluate the datasets and models of a config file",
                         description="Evaluate a config. With no endpoint configured, the "
                         "embedded local model is started and evaluated.")
    run.add_argument("config", help="Python config file defining `datasets` (and "
                     "`models`), or the name of a shipped config (see `harness list`)")
    run.add_argument("-w", "--work-dir", help="output directory; reusing it resumes and "
                     "reuses stored predictions (default: the config's work_dir, else "
                     "outputs/<config name>)")
    run.add_argument("--mode", choices=["all", "infer", "eval"], default="all",
                     help="all: predict and score; infer: only predict; eval: re-score "
                     "stored predictions with zero model requests")
    run.add_argument("-c", "--concurrency", type=_positive(int, "MAX_CONCURRENCY"),
                     default=CONCURRENCY, help=f"model calls in flight at once (default "
                     f"{CONCURRENCY}, at most 10000)")
    run.add_argument("--limit", type=_positive(int),
                     help="only the first N samples of each dataset")
    run.add_argument("--model-base-url", help="OpenAI-compatible endpoint, e.g. "
                     "http://localhost:8000/v1 (overrides the config's models)")
    run.add_argument("--model", help="model name sent to the endpoint (default: the "
                     "first one its /v1/models lists)")
    run.add_argument("--model-api", choices=["chat", "completions", "auto"],
                     help="where prompts go: chat (/chat/completions, the default), "
                     "completions (/completions), or auto (text prompts, including PPL "
                     "candidates, to /completions)")
    run.add_argument("--api-key-env", metavar="VAR",
                     help="name of the environment variable holding the API key")
    run.add_argument("--timeout", type=_positive(float, "MAX_TIMEOUT"),
                     help="seconds per attempt of a model call")
    run.add_argument("--max-attempts", type=_positive(int, "MAX_ATTEMPTS"),
                     help=f"attempts per model call (default {MAX_ATTEMPTS})")
    run.add_argument("--rule-workers", type=_positive(int, "MAX_RULE_WORKERS"),
                     metavar="N", help="worker processes for rule checks that need them "
                     "(math-verify; default: one per core, at most 256)")
    run.add_argument("--reuse", nargs="?", const="latest", metavar="TIMESTAMP",
                     help="accepted for OpenCompass compatibility, with or without its "
                     "timestamp: every prediction and verdict stored in the work "
                     "directory is always reused")
    run.add_argument("--dump-eval-details", dest="dump_details", action="store_true",
                     default=True, help="write per-sample details (default: on)")
    run.add_argument("--no-dump-eval-details", dest="dump_details", action="store_false")
    run.add_argument("--dump-extract-rate", action="store_true",
                     help="print the extract rate (it is always in the results JSON)")
    run.add_argument("-q", "--quiet", action="store_true", help="no live progress")
    _add_report_commands(sub)
    return parser


def _positive(kind: type, at_most: str | None = None) -> Callable[[str], Any]:
    """An argparse ``type``: the flag's value as a positive ``kind`` (``int`` or
    ``float``), at most the ``config_keys`` constant named ``at_most``, checked by the
    same rule as config values (``config_keys.positive``).

    A bad value (``-c 0``, ``--timeout -1``, ``--max-attempts two``) is a usage error:
    exit 2, naming the flag, the value and what is allowed, before anything runs.
    """

    def parse(text: str) -> Any:
        from . import config_keys
        from .errors import ConfigError

        try:
            value: Any = kind(text)
        except ValueError:
            value = text  # not a number at all: the check says what is allowed
        try:
            limit = getattr(config_keys, at_most) if at_most else None
            return config_keys.positive(value, None, kind, limit)
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = f"positive {kind.__name__}"
    return parse


def _add_report_commands(sub: argparse._SubParsersAction) -> None:
    report = sub.add_parser("report", help="write a self-contained HTML report of a work "
                            "directory", description="Write one HTML file (no network "
                            "needed to view it): summary table, per-dataset breakdown "
                            "charts, a sample browser with filters, and judge cost.")
    report.add_argument("work_dir", help="a run's work directory")
    report.add_argument("-o", "--output", help="HTML file to write (default: "
                        "WORK_DIR/report.html)")
    report.add_argument("--max-samples", type=int, default=2000, metavar="N",
                        help="samples embedded per (model, dataset), wrong and "
                        "disagreeing ones first (default 2000)")
    compare = sub.add_parser("compare", help="compare two work directories sample by sample",
                             description="For every (model, dataset) in both work "
                             "directories: the samples whose verdict changed, fixed/broken "
                             "counts, and the accuracy difference with a paired 95% "
                             "confidence interval. Exits 1 when a run compared is "
                             "incomplete (pending samples).")
    compare.add_argument("work_dir_a", help="the baseline run's work directory")
    compare.add_argument("work_dir_b", help="the run to compare with it")
    compare.add_argument("--json", action="store_true", help="machine-readable output")
    compare.add_argument("--max-changed", type=int, default=200, metavar="N",
                         help="changed samples listed per dataset (0 = all; default 200)")
    sub.add_parser("list", help="list shipped datasets, postprocessors, evaluators and "
                   "judge templates")


def console_main() -> int:
    """Entry point of the ``harness`` script: ``main``, under a main module (the
    script's wrapper, which is guarded) that worker processes may be spawned under."""
    from .stages.offload import started_by_cli

    started_by_cli()
    return main()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m harness``; returns the exit code."""
    args = build_parser().parse_args(argv)
    commands = {"run": _run, "report": _report, "compare": _compare, "list": _list}
    return commands[args.command](args)


def _run(args: argparse.Namespace) -> int:
    import anyio

    from .catalog import resolve_config
    from .errors import HarnessError, ModelCallError
    from .gc_tuning import tune_gc
    from .models import ModelOverrides

    config = resolve_config(args.config)

    async def go():
        from .api import evaluate
        from .interrupt import run_until_signal
        from .options import RunOptions

        # Made here, inside the error handling below: they check their values.
        overrides = ModelOverrides(args.model_base_url, args.model, args.api_key_env,
                                   args.timeout, args.max_attempts, args.model_api)
        options = RunOptions(work_dir=args.work_dir, mode=args.mode,
                             concurrency=args.concurrency, limit=args.limit,
                             dump_details=args.dump_details, rule_workers=args.rule_workers,
                             overrides=overrides)
        return await run_until_signal(lambda: evaluate(config, options,
                                                       show_progress=not args.quiet))

    # This process is ours: collect garbage for throughput (see harness.gc_tuning), and
    # show the library's warnings (a context too small for max_out_len, say).
    tune_gc(args.concurrency)
    _show_warnings()
    try:
        report = anyio.run(go)
    except KeyboardInterrupt:
        from .urls import redact_url

        # A base URL may carry a secret (?api-key=…): never echoed, even here.
        shown = [redact_url(arg) for arg in sys.argv[1:]]
        masked = " (with its URL's secrets, masked here)" if shown != sys.argv[1:] else ""
        print("interrupted; every stored prediction and verdict is kept. Run the same "
              f"command again{masked} to resume:\n  python -m harness " + shlex.join(shown),
              file=sys.stderr)
        from .interrupt import EXIT_INTERRUPTED

        return EXIT_INTERRUPTED
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        if isinstance(exc, ModelCallError):
            print("the run stopped: results/ and details/ of earlier runs are as they were, "
                  "and every answer received is stored", file=sys.stderr)
        return getattr(exc, "exit_code", 1)
    except OSError as exc:
        # A file of the work directory could not be written (a full disk, a read-only
        # file system): the cause and the file, not a traceback.
        print(f"error: {_os_error_text(exc)}; every prediction and verdict stored so far "
              "is kept: fix the cause and run the same command again", file=sys.stderr)
        return EXIT_CONFIG
    print(report.table())
    for line in _judge_lines(report.summaries):
        print(line)
    if args.dump_extract_rate:
        for s in report.summaries:
            if s.extract_rate is not None:
                print(f"extract rate {s.model}/{s.dataset}: {s.extract_rate:.2f}%")
    details = f"  details: {report.work_dir}/details" if args.dump_details else ""
    print(f"\nresults: {report.work_dir}/results{details}  ({report.elapsed:.1f}s)")
    print(f"report: python -m harness report {shlex.quote(str(report.work_dir))}")
    for (model, dataset), kept in report.kept.items():
        print(_kept_line(model, dataset, kept, report.result(dataset, model)), file=sys.stderr)
    for s in report.summaries:
        if s.scored and s.counts.get("empty_reply") == s.scored:
            print(f"warning: every reply of {s.model} on {s.dataset} was empty ({s.scored}), "
                  "so its score measures the endpoint, not the model: a reasoning model may "
                  "put its whole answer in reasoning_content (give it a larger max_out_len), "
                  "or a proxy drops the content", file=sys.stderr)
    if report.failed:
        print(f"INCOMPLETE: {report.failed} samples are pending, so no result above is "
              "final: each shows the range its metric lies in. See 'status' and "
              "'error' in the details.", file=sys.stderr)
        for line in _pending_lines(report.summaries):
            print(f"  {line}", file=sys.stderr)
        return EXIT_FAILED_SAMPLES
    return EXIT_OK


def _kept_line(model: str, dataset: str, kept: ResultSummary, own: ResultSummary) -> str:
    """What a run left in place of its own result (see ``results.keeps_previous``), and
    how to let it replace them."""
    from .paths import result_path
    from .results import found_nothing, reach

    def far(summary: ResultSummary) -> str:
        scored, predicted = reach(summary)
        return f"{scored} scored, {predicted} predicted"

    why = ("as this run found nothing stored for it" if found_nothing(own)
           else "which got further than this run")
    return (f"kept the earlier results of {model} on {dataset}, {why} ({far(kept)}; this "
            f"run: {far(own)}): results/ and details/ are as they were. To replace them "
            f"anyway, delete {result_path('', model, dataset)}")


def _os_error_text(exc: OSError) -> str:
    """``FILE: cause`` of an ``OSError`` (just the cause when it names no file)."""
    cause = exc.strerror or str(exc)
    return f"{exc.filename}: {cause}" if exc.filename else cause


def _show_warnings() -> None:
    import logging

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("warning: %(message)s"))
    log = logging.getLogger("harness")
    log.addHandler(handler)
    log.setLevel(logging.WARNING)


def _report(args: argparse.Namespace) -> int:
    from .errors import HarnessError
    from .report import write_report

    try:
        path = write_report(args.work_dir, args.output, cap=max(0, args.max_samples))
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", 1)
    print(f"report: {path}")
    return EXIT_OK


def _compare(args: argparse.Namespace) -> int:
    import json

    from .compare import compare_dirs, format_text
    from .errors import HarnessError

    try:
        result = compare_dirs(args.work_dir_a, args.work_dir_b)
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", 1)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False, default=str))
    else:
        print(format_text(result, args.max_changed))
    if not result["pairs"]:
        # Nothing compared is not a comparison: a mistyped directory must not pass a script.
        print(f"error: {args.work_dir_a} and {args.work_dir_b} have no (model, dataset) in "
              "common; compare two runs of the same models on the same datasets",
              file=sys.stderr)
        return EXIT_CONFIG
    if any(p.get("pending_a") or p.get("pending_b") for p in result["pairs"]):
        return EXIT_FAILED_SAMPLES  # as ``run`` exits for an incomplete run
    if any(not p["pairing"]["by"] for p in result["pairs"]):
        return EXIT_FAILED_SAMPLES  # a (model, dataset) NOT COMPARED has no figure to pass
    return EXIT_OK


def _list(args: argparse.Namespace) -> int:
    from .catalog import catalog_text

    print(catalog_text(), end="")
    return EXIT_OK


#: What to do about each kind of pending sample.
_PENDING_ADVICE = {
    "model_error": "the model call failed for good: run the same command again to retry it",
    "judge_error": "the judge call failed for good: run the same command again to retry it",
    "judge_unparsed": "the judge's verdict stayed unreadable after its re-asks (a rerun "
                      "keeps it unless max_reasks is raised): use a judge that answers A "
                      "or B, or constrain its reply",
    "eval_error": "the evaluator raised on the sample: fix it and re-score with --mode eval",
    "missing": "never predicted: run without --mode eval to predict it",
    "sandbox_error": "the code sandbox failed (not the program): run the same command "
                     "again to retry it",
}


#: What to do about a PPL sample no rerun can decide (``UNDECIDABLE_CAUSE``).
_UNDECIDABLE_ADVICE = ("the stored next-token list leaves the candidates undecided, and a "
                       "rerun reads the same list: raise the PPLInferencer's top_logprobs "
                       "(up to 20), or use method='echo' on a /completions endpoint that "
                       "offers echo")


def _pending_lines(summaries: list[ResultSummary]) -> list[str]:
    """The run's pending samples grouped by cause (``model_error: 12 × connection refused
    after 6 attempts``), then what to do about each kind."""
    from .ppl.choice import UNDECIDABLE_CAUSE

    # A cause no rerun clears has its own advice, instead of its status's.
    cause_advice = {UNDECIDABLE_CAUSE: _UNDECIDABLE_ADVICE}
    causes: dict[tuple[str, str], int] = {}
    for s in summaries:
        for item in s.pending_causes:
            key = (item.status, item.cause)
            causes[key] = causes.get(key, 0) + item.count
    lines = [f"{status}: {n} × {cause}"
             for (status, cause), n in sorted(causes.items(), key=lambda kv: -kv[1])]
    statuses = sorted({status for status, cause in causes if cause not in cause_advice})
    lines += [f"{status}: {_PENDING_ADVICE.get(status, 'see the details')}"
              for status in statuses]
    lines += [f"{status}: {cause_advice[cause]}"
              for status, cause in sorted(causes) if cause in cause_advice]
    if any(cause.startswith("timed out") for _, cause in causes):
        lines.append("timed out: the endpoint may be overloaded rather than down: try a "
                     "longer --timeout or a lower -c (for a judge: its timeout or "
                     "concurrency in judge_cfg)")
    return lines


def _judge_lines(summaries: list[ResultSummary]) -> list[str]:
    """One line per judge endpoint: what judging cost and how it went."""
    seen: dict[str, dict] = {}
    for s in summaries:
        if s.judge_stats:
            seen[s.judge_stats["judge"]] = dict(s.judge_stats)
    lines = []
    for name, j in seen.items():
        lines.append(f"judge {name}: {j['requests']} requests ({j['retries']} retries, "
                     f"{j['rate_limited']} rate-limited), {j['cache_hits']} cached verdicts, "
                     f"{j['reasks']} re-asks, {j['unparsed']} unparsed, {j['errors']} errors, "
                     f"{j['prompt_tokens'] + j['completion_tokens']} tokens")
    return lines

