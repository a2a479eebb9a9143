"""Isolated execution of model-written Python programs (bubblewrap per program).

::

    run_program(source, Limits(...)) ─▶ bwrap (new namespaces, read-only system,
                                        private tmpfs) ─▶ launcher (uid, rlimits)
                                        ─▶ python program.py ─▶ Execution

``resolve`` refuses (``SandboxUnavailable``) where bwrap cannot sandbox, unless the
caller opted in to ``sandbox='none'``.
"""

from .bwrap import INSTALL_HINT, SandboxUnavailable, check_bwrap
from .limits import Execution, Limits, Outcome, SandboxKind
from .run import UNSAFE_ENV, resolve, run_program

__all__ = ["INSTALL_HINT", "UNSAFE_ENV", "Execution", "Limits", "Outcome", "SandboxKind",
           "SandboxUnavailable", "check_bwrap", "resolve", "run_program"]
