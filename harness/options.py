"""``RunOptions``: how one run goes, beside what its config file says.

One frozen value taken by ``evaluate``/``open_run`` and built by the CLI. Nothing here
changes a result (so none of it enters a key): where the run writes, how much runs at
once, how long calls may take, and which endpoint replaces the config's models.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Literal

from .breaker import BreakerPolicy
from .config_keys import MAX_RULE_WORKERS, positive
from .defaults import CONCURRENCY
from .errors import ConfigError
from .models import ModelOverrides
from .validate import check_run_options

#: ``all`` predicts and scores; ``infer`` only predicts; ``eval`` re-scores stored
#: predictions with zero model requests.
Mode = Literal["all", "infer", "eval"]

_MODES = ("all", "infer", "eval")


@dataclass(frozen=True)
class RunOptions:
    """The settings of one run (the config file's ``RunConfig`` says what to evaluate).

    Values are checked on construction: a ``ConfigError`` names the one that is wrong.
    """

    #: Where the store, results and details go (``None``: the config's ``work_dir``,
    #: else ``outputs/<config name>``); reusing one resumes and reuses predictions.
    work_dir: str | Path | None = None
    mode: Mode = "all"
    #: Model calls in flight at once.
    concurrency: int = CONCURRENCY
    #: Only the first N samples of each dataset.
    limit: int | None = None
    #: Write per-sample details (``details/MODEL/DATASET.jsonl``).
    dump_details: bool = True
    #: Worker processes for checks that need them (math-verify); ``None``: one per core.
    rule_workers: int | None = None
    #: When an endpoint counts as down and the run stops (``harness.breaker``).
    breaker: BreakerPolicy = BreakerPolicy()
    #: Endpoint, model name, key variable, ``--timeout`` and ``--max-attempts`` given
    #: beside the config (they replace the config's models' own).
    overrides: ModelOverrides = ModelOverrides()

    def __post_init__(self) -> None:
        check_run_options(self.concurrency, self.limit, self.work_dir)
        positive(self.rule_workers, "rule_workers", int, MAX_RULE_WORKERS)
        if self.mode not in _MODES:
            raise ConfigError(f"mode must be one of {', '.join(_MODES)}, not {self.mode!r}",
                              field="mode")

    @property
    def timeout(self) -> float | None:
        """The run's ``--timeout`` (judges use it unless their ``judge_cfg`` sets one)."""
        return self.overrides.timeout

    @property
    def max_attempts(self) -> int | None:
        """The run's ``--max-attempts`` (judges too, unless ``judge_cfg`` sets one)."""
        return self.overrides.max_attempts

    @classmethod
    def of(cls, options: RunOptions | None, settings: Mapping[str, Any]) -> RunOptions:
        """``options`` (default: all defaults) with ``settings`` (keyword arguments of
        ``evaluate``/``open_run``, named as the fields) applied: the one place keyword
        arguments become options. An unknown name is a ``TypeError``, as for any call."""
        unknown = sorted(set(settings) - _FIELDS)
        if unknown:
            raise TypeError(f"unexpected keyword argument {unknown[0]!r} (run settings: "
                            f"{', '.join(sorted(_FIELDS))})")
        base = options if options is not None else cls()
        return replace(base, **settings) if settings else base


_FIELDS = frozenset(f.name for f in fields(RunOptions))
