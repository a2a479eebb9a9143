"""Every key of a config is understood or rejected, with a "did you mean".

One helper serves every dict a config holds (a dataset, ``reader_cfg``, ``infer_cfg``,
``eval_cfg``, evaluators, postprocessors, models, ``judge_cfg``) and the keyword
arguments of what a config names as ``type`` (a class or a function): a misspelled key
must stop the run when the config is loaded, never be ignored while the model is paid
for.

A check raises ``ConfigError`` whose field is relative to the dict it checked
(``temprature``); each enclosing builder wraps its part in :func:`within`, which puts
its own path in front, so the user reads the whole path and the file
(``cfg.py field 'datasets[0].eval_cfg.evaluator.llm_evaluator.judge_cfg.temprature'``).
"""

from __future__ import annotations

import contextlib
import difflib
import inspect
import math
import os
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any

from .errors import ConfigError


def did_you_mean(word: str, choices: Collection[str], cutoff: float = 0.6) -> str:
    """``"; did you mean 'x'?"`` for the closest of ``choices`` (at least ``cutoff``
    alike, as ``difflib`` measures), or ``""``."""
    close = difflib.get_close_matches(word, [str(c) for c in choices], n=1, cutoff=cutoff)
    return f"; did you mean {close[0]!r}?" if close else ""


def check_keys(cfg: Mapping[str, Any], known: Collection[str] | None, owner: str) -> None:
    """Raise ``ConfigError`` for the first key of ``cfg`` that is not in ``known``.

    ``known=None`` means anything goes (a function taking ``**kwargs``). The error's
    field is the key itself; :func:`within` adds the path of ``cfg``.
    """
    if known is None:
        return
    for key in cfg:
        if key not in known:
            hint = (did_you_mean(str(key), known)
                    or f"; known keys: {', '.join(sorted(known)) or 'none'}")
            raise ConfigError(f"unknown key {key!r} in {owner}{hint}", field=str(key))


def accepted_keywords(target: Callable[..., Any], skip: int = 0) -> frozenset[str] | None:
    """The keyword arguments ``target`` accepts; ``None`` when it takes any (``**kwargs``)
    or cannot be inspected.

    For a function, its named parameters after the first ``skip`` (the values it is
    called with, such as a postprocessor's text). For a class, the parameters of each
    ``__init__`` along its MRO, for as long as they pass ``**kwargs`` on to
    ``super().__init__`` (as every harness evaluator does), so a typo that would only
    reach a base class is caught by name too; ``None`` when ``**kwargs`` reaches
    ``object`` (the class keeps them for itself).
    """
    if inspect.isclass(target):
        return _class_keywords(target)
    params = _parameters(target)
    if params is None or any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return _named(params[skip:])


def _class_keywords(cls: type) -> frozenset[str] | None:
    names: set[str] | None = None
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if klass is object:
            # Reached with **kwargs still open: object takes none, so the class keeps
            # them for itself (and checks them itself, as GenInferencer does).
            return frozenset() if names is None else None
        if init is None:
            continue
        params = _parameters(init)
        if params is None:  # an __init__ written in C: nothing to go by
            return None
        names = (names or set()) | _named(params[1:])  # without self
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            return frozenset(names)
    return None


def _parameters(func: Callable[..., Any]) -> list[inspect.Parameter] | None:
    try:
        return list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return None


def _named(params: list[inspect.Parameter]) -> frozenset[str]:
    return frozenset(p.name for p in params
                     if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


def construct(cfg: Mapping[str, Any], default: Callable[..., Any] | None = None) -> Any:
    """Call ``cfg['type']`` (else ``default``) with the other keys, after checking them
    against what it accepts; an unknown key is a ``ConfigError`` naming it."""
    kind = cfg.get("type", default)
    if not callable(kind):
        raise TypeError(f"type must be a class or a function, not {kind!r}")
    kwargs = {k: v for k, v in cfg.items() if k != "type"}
    check_keys(kwargs, accepted_keywords(kind), getattr(kind, "__name__", repr(kind)))
    return kind(**kwargs)


#: The most calls in flight at once a run, a model or a judge may ask for: far more than
#: any server serves, and each one is a task and a connection (10**9 exhausts memory).
MAX_CONCURRENCY = 10_000
#: The most attempts per call, and the longest attempt (seconds): a limit, not "never
#: give up" (issue 13: nothing waits unboundedly).
MAX_ATTEMPTS = 100
MAX_TIMEOUT = 86_400.0
#: The most worker processes for rule checks (``--rule-workers``): each is a Python
#: process with its own imports, and more than the cores only adds switching.
MAX_RULE_WORKERS = 256


def positive(value: Any, field: str | None, kind: type = float,
             at_most: float | None = None) -> Any:
    """``value`` as a positive, finite ``kind`` (``int`` or ``float``) no larger than
    ``at_most``, ``None`` when it is ``None``; anything else is a ``ConfigError`` naming
    ``field`` (``None``: the caller names it, as argparse does for a flag) and what is
    allowed."""
    if value is None:
        return None
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not is_number or (kind is int and not isinstance(value, int)):
        expected = "an integer" if kind is int else "a number"
        raise ConfigError(f"must be {expected}, not {value!r}", field=field)
    # NaN passes every comparison, and an infinite timeout or rate is no limit at all.
    if not math.isfinite(value):
        raise ConfigError(f"must be a finite number, not {value!r}", field=field)
    if value <= 0:
        raise ConfigError(f"must be positive, not {value!r}", field=field)
    if at_most is not None and value > at_most:
        allowed = (f"from 1 to {at_most:g}" if kind is int
                   else f"above 0 and at most {at_most:g}")
        raise ConfigError(f"must be {allowed}, not {value!r}", field=field)
    return kind(value)


def switch(value: Any, field: str | None) -> bool:
    """``value`` if it is ``True`` or ``False``; anything else is a ``ConfigError``
    naming ``field`` (read with ``bool()``, ``'no'`` and ``'false'`` would switch it on)."""
    if not isinstance(value, bool):
        raise ConfigError(f"must be True or False, not {value!r}", field=field)
    return value


def directory(value: Any, field: str | None) -> str | None:
    """``value`` as a directory path (text or a path object, not blank), ``None`` when
    it is ``None``; anything else is a ``ConfigError`` naming ``field``."""
    if value is None:
        return None
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"must be a directory path, not {value!r}", field=field)
    return value


@contextlib.contextmanager
def within(prefix: str, path: str | None = None) -> Iterator[None]:
    """Put ``prefix`` in front of the field of a ``ConfigError`` raised inside, and name
    ``path`` as its file when it names none."""
    try:
        yield
    except ConfigError as exc:
        raise _relocated(exc, prefix, path) from exc


def _relocated(exc: ConfigError, prefix: str, path: str | None) -> ConfigError:
    # ConfigError keeps only its formatted text: rebuild the location part it starts
    # with (the same constructor, an empty message) and cut it off.
    head = str(type(exc)("", path=exc.path, line=exc.line, field=exc.field))
    message = str(exc)[len(head):]
    field = f"{prefix}.{exc.field}" if exc.field else prefix
    return type(exc)(message, path=exc.path or path, line=exc.line, field=field)
