"""Isolated execution of model-written Python programs (bubblewrap per program).

::

    run_program(source, Limits(...)) ─▶ bwrap (new namespaces, read-only system,
                                        private tmpfs) ─▶ launcher (uid, rlimits)
                                        ─▶ python: program.py as module
                                        'program' (not __main__) ─▶ Execution

``resolve`` refuses (``SandboxUnavailable``) where bwrap cannot sandbox, unless the
caller opted in to ``sandbox='none'``.

Names are loaded on first use (PEP 562): the scoring stage catches
``SandboxUnavailable`` in every run, and only code evaluation runs programs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .bwrap import INSTALL_HINT, SandboxUnavailable, check_bwrap
    from .limits import Execution, Limits, Outcome, SandboxKind
    from .run import UNSAFE_ENV, resolve, run_program

_EXPORTS = {"INSTALL_HINT": "bwrap", "SandboxUnavailable": "bwrap", "check_bwrap": "bwrap",
            "Execution": "limits", "Limits": "limits", "Outcome": "limits",
            "SandboxKind": "limits", "UNSAFE_ENV": "run", "resolve": "run",
            "run_program": "run"}

__all__ = ["INSTALL_HINT", "UNSAFE_ENV", "Execution", "Limits", "Outcome", "SandboxKind",
           "SandboxUnavailable", "check_bwrap", "resolve", "run_program"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
