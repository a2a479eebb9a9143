"""A judge's endpoint and settings, from ``judge_cfg``.

``judge_cfg`` is a model config (OpenCompass keys work) plus judge settings:

- ``rpm`` / ``tpm``: requests and tokens per minute, paced steadily (``query_per_second``
  is read as ``rpm = 60 × qps``);
- ``concurrency``: judge calls in flight at once (default 8);
- ``constrain``: ``'grammar'`` (llama.cpp), ``'guided_choice'`` (vLLM) or
  ``'json_schema'`` (OpenAI) to restrict the reply to the two verdicts;
- ``logprobs``: record the probability of the chosen verdict;
- ``max_reasks``: re-asks with a format reminder after an unreadable verdict (default 2,
  at most 10).

``judge_cfg=dict()`` (no endpoint in it) reads ``OC_JUDGE_MODEL``, ``OC_JUDGE_API_KEY``
and ``OC_JUDGE_API_BASE``, as OpenCompass does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..config_keys import check_keys, switch, within
from ..defaults import (
    ENV_API_KEY,
    ENV_JUDGE_API_BASE,
    ENV_JUDGE_API_KEY,
    ENV_JUDGE_MODEL,
    ENV_OPENAI_API_KEY,
    JUDGE_CONCURRENCY,
    REASKS_LIMIT,
)
from ..defaults import MAX_REASKS as DEFAULT_MAX_REASKS
from ..errors import ConfigError
from ..models import (
    ENDPOINT_KEYS,
    GEN_KEYS,
    INERT_MODEL_KEYS,
    MODEL_KEYS,
    model_settings,
    model_spec,
)
from ..records import ModelSpec
from ..urls import endpoint_url
from .verdict import CONSTRAINT_MODES, constraint_params

#: ``judge_cfg`` keys beyond a model dict's (``rpm``, ``tpm`` and ``concurrency`` are
#: model keys: they pace a judge exactly as they pace a model).
JUDGE_ONLY_KEYS = ("constrain", "logprobs", "max_reasks")


@dataclass(frozen=True)
class JudgeSpec:
    """A resolved judge: endpoint plus pacing, constraint and re-ask settings."""

    model: ModelSpec
    concurrency: int = JUDGE_CONCURRENCY
    constrain: str | None = None
    logprobs: bool = False
    max_reasks: int = DEFAULT_MAX_REASKS

    @property
    def rpm(self) -> float | None:
        """Requests per minute the judge is paced at (``None``: unlimited)."""
        return self.model.rpm

    @property
    def tpm(self) -> float | None:
        """Tokens per minute the judge is paced at (``None``: unlimited)."""
        return self.model.tpm

    def gen_params(self) -> dict[str, Any]:
        """Generation parameters of every judge request (part of the verdict key)."""
        params: dict[str, Any] = {"temperature": 0.0, "max_tokens": 512}
        params.update(self.model.gen_params)
        params.update(constraint_params(self.constrain))
        if self.logprobs:
            params.update(logprobs=True, top_logprobs=5)
        return params


def judge_settings(judge_cfg: Any) -> dict[str, Any]:
    """Check ``judge_cfg`` (a dict or ``None``) and read its judge settings
    (``constrain``, ``logprobs``, ``max_reasks``); its model part is checked by
    ``model_settings``. Needs no endpoint, so a config is checked when it is loaded;
    a ``ConfigError``'s field is relative (see ``harness.config_keys.within``)."""
    if judge_cfg is None:
        judge_cfg = {}
    if not isinstance(judge_cfg, Mapping):
        raise ConfigError(f"judge_cfg must be a dict, not {judge_cfg!r}")
    check_keys(judge_cfg, (*MODEL_KEYS, *GEN_KEYS, *INERT_MODEL_KEYS, *JUDGE_ONLY_KEYS),
               "judge_cfg")
    model_settings(_model_part(judge_cfg))
    constrain = judge_cfg.get("constrain")
    if constrain is not None and constrain not in CONSTRAINT_MODES:
        raise ConfigError(f"constrain must be one of {', '.join(CONSTRAINT_MODES)}",
                          field="constrain")
    logprobs = switch(judge_cfg.get("logprobs", False), "logprobs")
    reasks = judge_cfg.get("max_reasks", DEFAULT_MAX_REASKS)
    if (isinstance(reasks, bool) or not isinstance(reasks, int)
            or not 0 <= reasks <= REASKS_LIMIT):
        raise ConfigError(f"must be a whole number from 0 to {REASKS_LIMIT}, not {reasks!r}",
                          field="max_reasks")
    return dict(constrain=constrain, logprobs=logprobs, max_reasks=reasks)


def judge_spec(judge_cfg: Mapping[str, Any] | None, where: str = "judge_cfg",
               env: Mapping[str, str] | None = None) -> JudgeSpec:
    """Resolve ``judge_cfg`` (reading ``OC_JUDGE_*`` when it names no endpoint)."""
    env = os.environ if env is None else env
    with within(where):
        settings = judge_settings(judge_cfg)
    cfg = dict(judge_cfg or {})
    if not any(cfg.get(k) for k in ENDPOINT_KEYS):
        missing = [v for v in (ENV_JUDGE_MODEL, ENV_JUDGE_API_BASE) if not env.get(v)]
        if missing:
            raise ConfigError(f"judge_cfg names no endpoint and {', '.join(missing)} "
                              f"is not set; set {ENV_JUDGE_MODEL}, {ENV_JUDGE_API_BASE} (and "
                              f"{ENV_JUDGE_API_KEY}) or give a judge_cfg", field=where)
        cfg.setdefault("path", env[ENV_JUDGE_MODEL])
        cfg["openai_api_base"] = endpoint_url(env[ENV_JUDGE_API_BASE], f"${ENV_JUDGE_API_BASE}")
        if env.get(ENV_JUDGE_API_KEY):
            cfg.setdefault("key", env[ENV_JUDGE_API_KEY])
        cfg.setdefault("abbr", "judge")
    if not (cfg.get("path") or cfg.get("model")):
        raise ConfigError("judge model name missing (path or model)", field=f"{where}.path")
    if not any(cfg.get(k) for k in ("key", "api_key", "api_key_env")):
        # No key given for the judge: send none, rather than the evaluated model's key
        # from $HARNESS_API_KEY / $OPENAI_API_KEY to what may be another provider.
        env = {k: v for k, v in env.items() if k not in (ENV_API_KEY, ENV_OPENAI_API_KEY)}
    model = model_spec(_model_part(cfg), where, env=env)
    spec = JudgeSpec(model=model, concurrency=model.concurrency or JUDGE_CONCURRENCY, **settings)
    cap = spec.gen_params().get("max_tokens")
    if not spec.constrain and isinstance(cap, int) and cap < MIN_JUDGE_TOKENS:
        # Every reply would stop at the cap, and a reply cut there is no verdict (it may
        # be the first word of "A comparison shows … so B"): every sample unparsed.
        raise ConfigError(f"a judge capped at {cap} token{'s' * (cap != 1)} is cut off "
                          "before it can finish a verdict, and a cut reply is not read as "
                          f"one: give it {MIN_JUDGE_TOKENS} or more, or set constrain so "
                          "the server can write nothing but A or B",
                          field=f"{where}.max_out_len")
    return spec


#: The fewest tokens an unconstrained judge may be given: room for a verdict and its end.
MIN_JUDGE_TOKENS = 4


def _model_part(judge_cfg: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in judge_cfg.items() if k not in JUDGE_ONLY_KEYS}
