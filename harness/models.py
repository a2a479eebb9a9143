"""Which model endpoints a run evaluates, and with which key.

Precedence, highest first:

1. Command-line flags ``--model-base-url`` / ``--model`` / ``--api-key-env`` (one model;
   missing parts come from the environment, then from the config's first model);
2. the config's ``models = [...]``;
3. environment variables ``HARNESS_MODEL_BASE_URL`` and ``HARNESS_MODEL``;
4. nothing configured at all: the embedded local model (``harness.local_model``).

The API key: the environment variable named by ``--api-key-env`` (or a model's
``api_key_env``), else a model's ``key``/``api_key`` (``'ENV'`` means
``$OPENAI_API_KEY``, as in OpenCompass), else ``$HARNESS_API_KEY``, else
``$OPENAI_API_KEY``. Keys live only in memory.

Pacing: ``rpm``/``tpm`` (or OpenCompass's ``query_per_second``) and ``concurrency`` limit
a model's calls exactly as they limit a judge's: the same ``RateLimiter`` in the same
``ModelClient``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping

from .errors import ConfigError
from .records import ModelSpec

#: Model-dict keys sent as generation parameters.
_GEN_KEYS = ("temperature", "top_p", "stop", "seed", "presence_penalty",
             "frequency_penalty", "top_k", "min_p", "repetition_penalty")


@dataclass(frozen=True)
class ModelOverrides:
    """Endpoint settings from the command line (``None`` = not given)."""

    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    timeout: float | None = None
    max_attempts: int | None = None


def resolve_models(config_models: list[Mapping[str, Any]], overrides: ModelOverrides,
                   env: Mapping[str, str] | None = None) -> list[ModelSpec] | None:
    """The models to evaluate, or ``None`` to use the embedded local model.

    A spec whose ``model`` is ``''`` asks the caller to discover the name from the
    endpoint's ``/v1/models``.
    """
    env = os.environ if env is None else env
    if overrides.base_url or overrides.model:
        first = dict(config_models[0]) if config_models else {}
        base_url = (overrides.base_url or env.get("HARNESS_MODEL_BASE_URL")
                    or _base_url(first))
        if not base_url:
            raise ConfigError("--model was given but no endpoint: add --model-base-url or "
                              "set HARNESS_MODEL_BASE_URL", field="model")
        first.update(base_url=base_url,
                     path=overrides.model or env.get("HARNESS_MODEL") or _name(first) or "")
        first.setdefault("abbr", None)
        return [model_spec(first, "--model", overrides, env)]
    if config_models:
        return [model_spec(m, f"models[{i}]", overrides, env)
                for i, m in enumerate(config_models)]
    if env.get("HARNESS_MODEL_BASE_URL"):
        cfg = {"base_url": env["HARNESS_MODEL_BASE_URL"], "path": env.get("HARNESS_MODEL", "")}
        return [model_spec(cfg, "HARNESS_MODEL_BASE_URL", overrides, env)]
    return None


def model_spec(cfg: Mapping[str, Any], where: str, overrides: ModelOverrides = ModelOverrides(),
               env: Mapping[str, str] | None = None) -> ModelSpec:
    """A ``ModelSpec`` from an OpenCompass-style or harness-style model dict."""
    env = os.environ if env is None else env
    if not isinstance(cfg, Mapping):
        raise ConfigError("a model must be a dict", field=where)
    base_url = _base_url(cfg)
    if not base_url:
        raise ConfigError("missing the endpoint (openai_api_base or base_url)",
                          field=f"{where}.openai_api_base")
    name = _name(cfg)
    gen = {k: cfg[k] for k in _GEN_KEYS if cfg.get(k) is not None}
    gen.update(cfg.get("generation_kwargs") or {})
    if cfg.get("max_out_len"):
        gen.setdefault("max_tokens", int(cfg["max_out_len"]))
    return ModelSpec(
        abbr=str(cfg.get("abbr") or name or "model"),
        model=name,
        base_url=str(base_url).rstrip("/"),
        api_key=_api_key(cfg, where, overrides, env),
        gen_params=gen,
        timeout=float(overrides.timeout or cfg.get("timeout") or 600.0),
        max_attempts=int(overrides.max_attempts or cfg.get("max_attempts")
                         or cfg.get("retry") or 6),
        concurrency=cfg.get("concurrency"),
        transport=_transport(cfg, where),
        api=_api(cfg, where),
        rpm=_rate(cfg, "rpm", where),
        tpm=_rate(cfg, "tpm", where),
    )


def _api(cfg: Mapping[str, Any], where: str) -> Any:
    api = cfg.get("api", "chat")
    if api not in ("chat", "completions", "auto"):
        raise ConfigError("api must be 'chat', 'completions' or 'auto'", field=f"{where}.api")
    return api


def _rate(cfg: Mapping[str, Any], name: str, where: str) -> float | None:
    """``rpm``/``tpm`` as a positive number; OpenCompass's ``query_per_second`` is
    read as ``rpm = 60 × qps``."""
    value, field = cfg.get(name), name
    if value is None and name == "rpm" and cfg.get("query_per_second") is not None:
        value, field = 60.0 * _number(cfg["query_per_second"], f"{where}.query_per_second"), \
            "query_per_second"
    if value is None:
        return None
    value = _number(value, f"{where}.{field}")
    if value <= 0:
        raise ConfigError("must be a positive number", field=f"{where}.{field}")
    return value


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"must be a number, not {value!r}", field=where)
    return float(value)


def _transport(cfg: Mapping[str, Any], where: str) -> str:
    from .transport import TRANSPORTS

    name = str(cfg.get("transport") or "aiohttp")
    if name not in TRANSPORTS:
        raise ConfigError(f"transport must be one of {', '.join(TRANSPORTS)}",
                          field=f"{where}.transport")
    return name


def _base_url(cfg: Mapping[str, Any]) -> str | None:
    url = cfg.get("base_url") or cfg.get("openai_api_base") or cfg.get("api_base")
    if isinstance(url, (list, tuple)):
        url = url[0] if url else None
    if url and str(url).rstrip("/").endswith("/chat/completions"):
        url = str(url).rstrip("/")[: -len("/chat/completions")]
    return str(url) if url else None


def _name(cfg: Mapping[str, Any]) -> str:
    return str(cfg.get("model") or cfg.get("path") or "")


def _api_key(cfg: Mapping[str, Any], where: str, overrides: ModelOverrides,
             env: Mapping[str, str]) -> str:
    var = overrides.api_key_env or cfg.get("api_key_env")
    if var:
        if var not in env:
            raise ConfigError(f"environment variable {var} (named as the API key "
                              "variable) is not set", field=f"{where}.api_key_env")
        return env[var]
    key = cfg.get("api_key", cfg.get("key"))
    if isinstance(key, (list, tuple)):
        key = key[0] if key else None
    if key == "ENV":
        key = env.get("OPENAI_API_KEY")
    return str(key or env.get("HARNESS_API_KEY") or env.get("OPENAI_API_KEY") or "")
