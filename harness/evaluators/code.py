"""``HumanEvalEvaluator`` and ``MBPPEvaluator``: run the extracted program against the
dataset's tests in the sandbox (``harness.sandbox``); correct means it exited 0.

The program is built from the row: HumanEval's ``prompt + completion + test +
check(entry_point)`` (a completion that redefines the whole function simply overrides
the prompt's stub, and keeps the prompt's imports and helpers), MBPP's
``test_imports + code + test_list``. The evaluators extract the code themselves
(``humaneval_postprocess_v2``, idempotent), so a config ported from OpenCompass with
no ``pred_postprocessor`` still runs code, not prose.

These evaluators are async (``executes``): the score stage awaits ``ascore_sample``
with the run's ``ExecutionCache``, many at a time (one per core), and a stored
execution is reused rather than run again.
"""

from __future__ import annotations

import dataclasses
import platform
import re
import secrets
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Protocol

from ..config_keys import check_keys, positive, within
from ..errors import ConfigError
from ..keys import content_key
from ..postprocessors.code import humaneval_postprocess_v2
from ..sandbox import Execution, Limits, run_program
from ..sandbox.launcher import RUNNER
from ..sandbox.run import check, choose
from .base import EVALUATORS, BaseEvaluator

#: The ``limits=dict(...)`` keys (``harness.sandbox.Limits``' fields).
LIMIT_KEYS = tuple(Limits.__dataclass_fields__)

_ASSERTION = re.compile(r"^\s*(assert\b.*)$", re.MULTILINE)

#: Appended to every program: exit status 0 alone does not mean the tests passed (the
#: model's code may call ``sys.exit(0)``, ``unittest.main()`` or ``os._exit(0)``, or exit
#: 0 from an ``atexit`` hook after a failed assertion), so the program passes only if
#: this line, reached after the last test, printed a nonce of this run.
_DONE = ("\ntry:\n    import sys as _harness_sys\n    _harness_sys.stdout.flush()\n"
         "    _harness_sys.stderr.flush()\nexcept BaseException:\n    pass\n"
         "import os as _harness_os\n_harness_os.write(1, b'\\n{nonce}\\n')\n"
         "_harness_os._exit(0)\n")


class ExecutionCache(Protocol):
    """Where executions are stored by key (the run's ``Store``)."""

    async def lookup_execution(self, key: str) -> Execution | None:
        """The stored execution under ``key``, if any."""

    async def write_execution(self, key: str, execution: Execution) -> None:
        """Store ``execution`` under ``key``."""


class CodeEvaluator(BaseEvaluator):
    """Shared by the code evaluators: extraction, limits, the sandbox, pass@k's ``k``.

    ``k`` chooses the pass@k values reported when the dataset has ``n`` replicas
    (those with k ≤ n); ``limits`` overrides ``Limits``' fields; ``sandbox`` is
    ``'bwrap'`` (default) or ``'none'`` (runs model code unsandboxed: only for code
    you trust). Without a working bwrap, ``check_ready`` (and scoring) raises
    ``SandboxUnavailable``.
    """

    executes = True
    metric: ClassVar[str] = "pass@1"

    def __init__(self, k: int | Sequence[int] = (1,), limits: Mapping[str, Any] | None = None,
                 sandbox: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        ks = [k] if isinstance(k, int) else list(k)
        with within("k"):
            self.k = tuple(sorted({positive(value, None, int) for value in ks}))
        if not self.k:
            raise ConfigError("must name at least one k", field="k")
        with within("limits"):
            check_keys(dict(limits or {}), LIMIT_KEYS, "limits")
            self.limits = Limits(**dict(limits or {}))
        self.sandbox = choose(sandbox)  # checked by check_ready, before a run scores
        self._checked = False
        if self.timeout == BaseEvaluator.timeout:
            self.timeout = self.limits.wall_time

    def check_ready(self) -> None:
        """Refuse (``SandboxUnavailable``) unless programs can run in the sandbox asked
        for: a run that scores checks before any request; one that only predicts
        (``--mode infer``) needs no sandbox."""
        if not self._checked:
            check(self.sandbox)
            self._checked = True

    def program(self, code: str, row: Mapping[str, Any]) -> str:
        """The program that runs ``code`` against the row's tests."""
        raise NotImplementedError

    def tests(self, row: Mapping[str, Any]) -> Any:
        """The row's tests, for the execution key."""
        raise NotImplementedError

    def execution_key(self, program: str, row: Mapping[str, Any]) -> str:
        """What decides an execution's outcome: the program, the tests, the limits, the
        sandbox kind, the Python that runs it (a newer one may pass or fail otherwise)
        and how it runs it (``RUNNER``: as ``__main__`` a guarded block ran)."""
        return content_key("execution", program=program, tests=self.tests(row),
                           limits=self.limits.as_key(), sandbox=self.sandbox,
                           python=platform.python_version(), done=_DONE, runner=RUNNER)

    async def ascore_sample(self, prediction: Any, reference: Any,
                            test_item: Mapping[str, Any] | None = None,
                            cache: ExecutionCache | None = None) -> dict[str, Any]:
        """Run one prediction's program; a detail with ``correct``, ``pred``, ``answer``,
        ``outcome``, and when it did not pass the first failing assertion and the
        stderr tail. ``outcome == 'sandbox_error'`` means it is not scored."""
        row = test_item or {}
        code = humaneval_postprocess_v2(prediction, test_item=row)
        if not code:
            return {"correct": False, "pred": "", "answer": reference}
        program = self.program(code, row)
        key = self.execution_key(program, row)
        execution = await cache.lookup_execution(key) if cache is not None else None
        cached = execution is not None
        if execution is None:
            self.check_ready()
            nonce = f"harness-tests-done-{secrets.token_hex(16)}"
            execution = finished(await run_program(program + _DONE.format(nonce=nonce),
                                                   self.limits, self.sandbox), nonce)
            if cache is not None and execution.outcome != "sandbox_error":
                await cache.write_execution(key, execution)  # a sandbox error is retried
        return self.detail(code, reference, execution, cached)

    def detail(self, code: str, reference: Any, execution: Execution,
               cached: bool) -> dict[str, Any]:
        """The per-sample detail of an execution."""
        detail: dict[str, Any] = {"correct": execution.outcome == "passed", "pred": code,
                                  "answer": reference, "outcome": execution.outcome,
                                  "execution_cached": cached}
        if execution.outcome != "passed":
            detail["reason"] = execution.reason
            detail["failed_assertion"], detail["exception"] = failure_of(execution.stderr)
            detail["stderr_tail"] = execution.stderr
        return detail

    def score_sample(self, prediction: Any, reference: Any,
                     test_item: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The batch interface's per-sample call, outside an event loop (no store)."""
        import anyio

        return anyio.run(self.ascore_sample, prediction, reference, test_item)


def finished(execution: Execution, nonce: str) -> Execution:
    """``execution`` judged by whether its tests ran to the end (the ``_DONE`` line
    printed ``nonce``): an exit 0 without it is ``failed``; the nonce is removed from
    the stdout kept."""
    line = f"\n{nonce}\n"
    if line in execution.stdout:
        return dataclasses.replace(execution, stdout=execution.stdout.replace(line, ""))
    if execution.outcome == "passed":
        return dataclasses.replace(execution, outcome="failed",
                                   reason="exited before its tests finished")
    return execution


def failure_of(stderr: str) -> tuple[str | None, str | None]:
    """From a traceback: the test assertion it stopped in (the last ``assert`` line it
    quotes) and the exception line (``AssertionError``, ``IndexError: …``); Nones
    without a traceback."""
    if "Traceback" not in stderr:
        return None, None
    quoted = _ASSERTION.findall(stderr)
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    return (quoted[-1].strip() if quoted else None), (lines[-1].strip() if lines else None)


@EVALUATORS.register("HumanEvalEvaluator")
class HumanEvalEvaluator(CodeEvaluator):
    """HumanEval: ``prompt + completion + test + check(entry_point)`` must exit 0.

    ``k=[1, 10, 100]`` as in OpenCompass; the row needs ``prompt``, ``test`` and
    ``entry_point``.
    """

    def program(self, code: str, row: Mapping[str, Any]) -> str:
        """The prompt, the completion, the tests and the call of ``check``."""
        return (f"{row['prompt']}{code}\n\n{row['test']}\n\n"
                f"check({row['entry_point']})\n")

    def tests(self, row: Mapping[str, Any]) -> Any:
        """HumanEval's ``test`` and ``entry_point``."""
        return {"test": row["test"], "entry_point": row["entry_point"]}


@EVALUATORS.register("MBPPEvaluator")
class MBPPEvaluator(CodeEvaluator):
    """MBPP: ``test_imports``, the code, then each ``test_list`` assertion must pass.

    The row needs ``test_list`` (``test_imports`` is optional).
    """

    def program(self, code: str, row: Mapping[str, Any]) -> str:
        """The imports, the code and the assertions."""
        imports = "\n".join(row.get("test_imports") or ())
        return f"{imports}\n{code}\n\n" + "\n".join(row["test_list"]) + "\n"

    def tests(self, row: Mapping[str, Any]) -> Any:
        """MBPP's ``test_imports`` and ``test_list``."""
        return {"imports": list(row.get("test_imports") or ()),
                "tests": list(row["test_list"])}
