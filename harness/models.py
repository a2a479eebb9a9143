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
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .config_keys import MAX_ATTEMPTS, MAX_CONCURRENCY, MAX_TIMEOUT, check_keys, positive, within
from .defaults import (
    CONNECT_TIMEOUT,
    ENV_API_KEY,
    ENV_MODEL,
    ENV_MODEL_BASE_URL,
    ENV_OPENAI_API_KEY,
    RATE_LIMIT_TIMEOUT,
    TIMEOUT,
)
from .defaults import MAX_ATTEMPTS as DEFAULT_MAX_ATTEMPTS
from .errors import ConfigError
from .gen_params import check_gen_params
from .records import ModelSpec
from .urls import endpoint_url

#: Model-dict (and ``GenInferencer``) keys sent as generation parameters.
GEN_KEYS = ("temperature", "top_p", "stop", "seed", "presence_penalty",
            "frequency_penalty", "top_k", "min_p", "repetition_penalty")

#: The names servers read as the reply's token limit (``max_out_len`` becomes the first).
TOKEN_LIMIT_KEYS = ("max_tokens", "max_completion_tokens")

#: Model-dict keys harness reads (besides ``GEN_KEYS``).
MODEL_KEYS = ("type", "abbr", "path", "model", "base_url", "openai_api_base", "api_base",
              "key", "api_key", "api_key_env", "timeout", "max_attempts", "retry",
              "connect_timeout", "rate_limit_timeout", "concurrency", "transport", "api", "rpm",
              "tpm", "query_per_second", "max_out_len", "generation_kwargs", "extra_body")

#: OpenCompass model keys accepted without effect: they configure a local model or
#: OpenCompass's own runner (batching, tokenizer, context length, chat template,
#: logging), and an HTTP endpoint does that itself. Ported configs keep them.
INERT_MODEL_KEYS = ("batch_size", "run_cfg", "tokenizer_path", "max_seq_len",
                    "meta_template", "verbose", "rpm_verbose")


@dataclass(frozen=True)
class ModelOverrides:
    """Endpoint settings from the command line (``None`` = not given).

    ``timeout`` and ``max_attempts`` must be positive (a ``ConfigError`` naming the flag
    otherwise); ``base_url`` is checked where the endpoint is resolved.
    """

    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    timeout: float | None = None
    max_attempts: int | None = None
    #: Where prompts go (``chat``, ``completions`` or ``auto``), for every model.
    api: str | None = None

    def __post_init__(self) -> None:
        # The CLI checks its flags already; a library caller passes values straight in.
        positive(self.timeout, "--timeout", float, MAX_TIMEOUT)
        positive(self.max_attempts, "--max-attempts", int, MAX_ATTEMPTS)
        if self.api is not None:
            with within("--model-api"):
                _api({"api": self.api})


def resolve_models(config_models: list[Mapping[str, Any]], overrides: ModelOverrides,
                   env: Mapping[str, str] | None = None) -> list[ModelSpec] | None:
    """The models to evaluate, or ``None`` to use the embedded local model.

    A spec whose ``model`` is ``''`` asks the caller to discover the name from the
    endpoint's ``/v1/models``.
    """
    env = os.environ if env is None else env
    if overrides.base_url or overrides.model:
        first = dict(config_models[0]) if config_models else {}
        base_url = (_from(overrides.base_url, "--model-base-url")
                    or _from(env.get(ENV_MODEL_BASE_URL), f"${ENV_MODEL_BASE_URL}")
                    or _base_url(first))
        if not base_url:
            raise ConfigError("--model was given but no endpoint: add --model-base-url or "
                              f"set {ENV_MODEL_BASE_URL}", field="model")
        first.update(base_url=base_url,
                     path=overrides.model or env.get(ENV_MODEL) or _name(first) or "")
        first.setdefault("abbr", None)
        return [model_spec(first, "--model", overrides, env)]
    if config_models:
        return [model_spec(m, f"models[{i}]", overrides, env)
                for i, m in enumerate(config_models)]
    if env.get(ENV_MODEL_BASE_URL):
        cfg = {"base_url": _from(env[ENV_MODEL_BASE_URL], f"${ENV_MODEL_BASE_URL}"),
               "path": env.get(ENV_MODEL, "")}
        return [model_spec(cfg, ENV_MODEL_BASE_URL, overrides, env)]
    return None


def model_spec(cfg: Mapping[str, Any], where: str, overrides: ModelOverrides = ModelOverrides(),
               env: Mapping[str, str] | None = None) -> ModelSpec:
    """A ``ModelSpec`` from an OpenCompass-style or harness-style model dict."""
    env = os.environ if env is None else env
    with within(where):
        settings = model_settings(cfg)
        base_url = _base_url(cfg)
        if not base_url:
            raise ConfigError("missing the endpoint (openai_api_base or base_url)",
                              field="openai_api_base")
        name = _name(cfg)
        return ModelSpec(
            abbr=str(cfg.get("abbr") or name or "model"),
            model=name,
            base_url=str(base_url).rstrip("/"),
            api_key=_api_key(cfg, overrides, env),
            **{**settings, "timeout": _given(overrides.timeout, settings["timeout"]),
               "max_attempts": _given(overrides.max_attempts, settings["max_attempts"]),
               "api": overrides.api or settings["api"]},
        )


def model_settings(cfg: Any) -> dict[str, Any]:
    """Check a model dict and read what it says beyond its endpoint, name and key:
    generation params, timeout, attempts, concurrency, transport, api and pacing.

    Every key must be one harness reads or knows to be inert (``INERT_MODEL_KEYS``).
    A ``ConfigError``'s field is relative to the dict (see ``config_keys.within``), so
    a config is checked when it is loaded, before the endpoint is resolved.
    """
    if not isinstance(cfg, Mapping):
        raise ConfigError(f"a model must be a dict, not {cfg!r}")
    check_keys(cfg, (*MODEL_KEYS, *GEN_KEYS, *INERT_MODEL_KEYS), "model")
    _check_type(cfg.get("type"))
    _check_endpoint(cfg)
    attempts = "max_attempts" if cfg.get("max_attempts") is not None else "retry"
    return dict(
        gen_params=_gen_params(cfg),
        timeout=positive(cfg.get("timeout"), "timeout", float, MAX_TIMEOUT) or TIMEOUT,
        max_attempts=(positive(cfg.get(attempts), attempts, int, MAX_ATTEMPTS)
                      or DEFAULT_MAX_ATTEMPTS),
        connect_timeout=positive(cfg.get("connect_timeout"), "connect_timeout", float,
                                 MAX_TIMEOUT) or CONNECT_TIMEOUT,
        rate_limit_timeout=positive(cfg.get("rate_limit_timeout"), "rate_limit_timeout", float,
                                    MAX_TIMEOUT) or RATE_LIMIT_TIMEOUT,
        concurrency=positive(cfg.get("concurrency"), "concurrency", int, MAX_CONCURRENCY),
        transport=_transport(cfg),
        api=_api(cfg),
        rpm=_rate(cfg, "rpm"),
        tpm=_rate(cfg, "tpm"),
    )


#: Model ``type`` names that mean an OpenAI-compatible endpoint (OpenCompass's API types).
API_MODEL_TYPES = ("OpenAISDK", "OpenAI")


def _check_type(kind: Any) -> None:
    """A model ``type`` must name an OpenAI-compatible endpoint: a config written for a
    local OpenCompass model (``HuggingFaceCausalLM``, ``VLLM``…) would otherwise be sent
    over HTTP to whatever its URL says."""
    name = kind if isinstance(kind, str) else getattr(kind, "__name__", None)
    if kind is None or name in API_MODEL_TYPES:
        return
    raise ConfigError(f"harness evaluates OpenAI-compatible endpoints; type {name or kind!r} "
                      "is not one. Serve the model (vLLM, SGLang, llama.cpp) and use "
                      "type=OpenAISDK with openai_api_base", field="type")


def _gen_params(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The generation keys, then ``generation_kwargs``, then ``extra_body`` (both sent
    as they are: the server decides what they mean), then ``max_out_len``."""
    gen = {k: cfg[k] for k in GEN_KEYS if cfg.get(k) is not None}
    check_gen_params(gen)
    for name in ("generation_kwargs", "extra_body"):
        extra = cfg.get(name)
        if extra is not None and not isinstance(extra, Mapping):
            raise ConfigError(f"must be a dict, not {extra!r}", field=name)
        check_gen_params(extra or {}, name)
        gen.update(extra or {})
    max_out_len = positive(cfg.get("max_out_len"), "max_out_len", int)
    if max_out_len:
        gen.setdefault(TOKEN_LIMIT_KEYS[0], max_out_len)
    return gen


def _api(cfg: Mapping[str, Any]) -> Any:
    api = cfg.get("api", "chat")
    if api not in ("chat", "completions", "auto"):
        raise ConfigError("api must be 'chat', 'completions' or 'auto'", field="api")
    return api


#: The slowest pacing accepted, per minute: one request an hour (``query_per_second``
#: 1/3600), one token a second. Slower is a typo (``rpm=1e-12`` waits forever); no
#: limit at all is said by leaving the key out.
MIN_RATE = {"rpm": (1 / 60, "one request an hour"), "tpm": (60.0, "one token a second")}
#: The largest ``rpm``, ``tpm`` or ``query_per_second``: more than any server serves
#: (and ``60 × 1e308`` qps would be no number at all).
MAX_RATE = 1e9


def _rate(cfg: Mapping[str, Any], name: str) -> float | None:
    """``rpm``/``tpm`` as a number from ``MIN_RATE`` to ``MAX_RATE``; OpenCompass's
    ``query_per_second`` is read as ``rpm = 60 × qps``."""
    key, scale = name, 1.0
    if name == "rpm" and cfg.get(name) is None and cfg.get("query_per_second") is not None:
        key, scale = "query_per_second", 60.0
    rate = positive(cfg.get(key), key, float, MAX_RATE)
    slowest, meaning = MIN_RATE[name]
    if rate is not None and rate * scale < slowest:
        raise ConfigError(f"must be at least {slowest / scale:.3g} ({meaning}), not "
                          f"{rate!r}; leave it out for no limit", field=key)
    return None if rate is None else rate * scale


def _transport(cfg: Mapping[str, Any]) -> str:
    from .transport import TRANSPORTS

    name = str(cfg.get("transport") or "aiohttp")
    if name not in TRANSPORTS:
        raise ConfigError(f"transport must be one of {', '.join(TRANSPORTS.names())}",
                          field="transport")
    return name


#: The keys a model dict may give its endpoint under; the first one given wins.
ENDPOINT_KEYS = ("base_url", "openai_api_base", "api_base")


def _endpoint(cfg: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(key, url)`` of the endpoint a model dict gives, if any: the first of a list
    (OpenCompass allows several), without a trailing ``/chat/completions``."""
    key = next((k for k in ENDPOINT_KEYS if cfg.get(k)), None)
    if key is None:
        return None
    url = cfg[key]
    if isinstance(url, (list, tuple)):
        url = url[0] if url else None
    if url and str(url).rstrip("/").endswith("/chat/completions"):
        url = str(url).rstrip("/")[: -len("/chat/completions")]
    return (key, str(url)) if url else None


def _base_url(cfg: Mapping[str, Any]) -> str | None:
    endpoint = _endpoint(cfg)
    return endpoint[1] if endpoint else None


def _from(url: str | None, source: str) -> str | None:
    """``url`` from a flag or environment variable ``source``, checked (``None`` stays)."""
    return endpoint_url(url, source) if url else None


def _check_endpoint(cfg: Mapping[str, Any]) -> None:
    """A model dict's endpoint, when it gives one, must be a URL (checked with the rest
    of the config, before any request)."""
    endpoint = _endpoint(cfg)
    if endpoint:
        endpoint_url(endpoint[1], endpoint[0])


def _given(value: Any, default: Any) -> Any:
    """``value`` unless it is ``None`` (not ``or``: a bad 0 must not turn into a default)."""
    return default if value is None else value


def _name(cfg: Mapping[str, Any]) -> str:
    return str(cfg.get("model") or cfg.get("path") or "")


def _api_key(cfg: Mapping[str, Any], overrides: ModelOverrides,
             env: Mapping[str, str]) -> str:
    var = overrides.api_key_env or cfg.get("api_key_env")
    if var:
        if var not in env:
            raise ConfigError(f"environment variable {var} (named as the API key "
                              "variable) is not set", field="api_key_env")
        return env[var]
    key = cfg.get("api_key", cfg.get("key"))
    if isinstance(key, (list, tuple)):
        key = key[0] if key else None
    if key == "ENV":
        key = env.get(ENV_OPENAI_API_KEY)
    return str(key or env.get(ENV_API_KEY) or env.get(ENV_OPENAI_API_KEY) or "")
