"""The embedded model as a run's endpoint: known before it runs, started when first needed.

With no endpoint configured, a run evaluates Gemma 3 270M on llama.cpp
(``harness.local_model``). Its spec, and so every prediction key, is known without the
server, so a run whose predictions are all stored (a rerun, ``--mode eval``) never
starts it. The server starts on the first sample that needs a model call, with each
slot's context sized to hold the run's longest prompt plus its largest ``max_out_len``:
a slot that is too small stops replies early for length, which no retry can fix.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import replace

import anyio

from .config import DatasetSpec
from .defaults import EMBEDDED_TIMEOUT
from .local_model import (
    DEFAULT_MODEL_ALIAS,
    EMBEDDED_ENDPOINT_ID,
    MAX_CTX_PER_SLOT,
    LocalModelServer,
)
from .prompt import as_text
from .records import ModelSpec
from .validate import selected_rows

log = logging.getLogger("harness")

#: Requests the embedded server decodes at once (its slots).
SLOTS = 4

#: Context per slot when nothing asks for more.
MIN_CTX_PER_SLOT = 2048

#: Context per slot for a dataset without ``max_out_len`` (the server then decodes until
#: the model stops or the slot is full).
DEFAULT_OUT_TOKENS = 1024

# Tokens per message for the turn markup (``<start_of_turn>user\n`` … ``<end_of_turn>\n``).
_TURN_TOKENS = 8


def embedded_spec() -> ModelSpec:
    """The embedded model's spec: greedy decoding, ``api='auto'`` (a text template goes
    to the completions endpoint, where a base model reads it best)."""
    return ModelSpec(abbr=DEFAULT_MODEL_ALIAS, model=DEFAULT_MODEL_ALIAS,
                     base_url="http://127.0.0.1:0/v1", api_key="none",
                     endpoint_id=EMBEDDED_ENDPOINT_ID, timeout=EMBEDDED_TIMEOUT,
                     gen_params={"temperature": 0.0}, concurrency=SLOTS, api="auto")


def is_embedded(spec: ModelSpec) -> bool:
    """Whether ``spec`` is the embedded model (whose server harness starts itself)."""
    return spec.endpoint_id == EMBEDDED_ENDPOINT_ID


def context_per_slot(datasets: Iterable[DatasetSpec], limit: int | None) -> int:
    """Tokens of context each slot needs for these datasets, at most the model's own.

    A prompt's tokens are bounded by its UTF-8 bytes (the tokenizer falls back to
    bytes), plus the turn markup: an over-estimate that costs KV-cache memory (about
    18 KiB a token), never a reply cut short.
    """
    need = MIN_CTX_PER_SLOT
    for dataset in datasets:
        out = int(dataset.gen_params.get("max_tokens")
                  or dataset.gen_params.get("max_completion_tokens") or DEFAULT_OUT_TOKENS)
        need = max(need, _longest_prompt(dataset, limit) + out + 16)
    if need > MAX_CTX_PER_SLOT:
        log.warning("the embedded model's context holds %d tokens; prompts plus max_out_len "
                    "need up to %d, so the longest replies will stop early (finish_reason "
                    "'length')", MAX_CTX_PER_SLOT, need)
    return min(-(-need // 256) * 256, MAX_CTX_PER_SLOT)


def _longest_prompt(dataset: DatasetSpec, limit: int | None) -> int:
    longest = 0
    for _, _, row in selected_rows(dataset, limit):
        messages = dataset.template.render({c: row.get(c) for c in dataset.input_columns})
        size = len(as_text(messages).encode()) + _TURN_TOKENS * len(messages)
        longest = max(longest, size)
    return longest


class EmbeddedServer:
    """Starts the embedded server once, on the first call of :meth:`start`; its lifetime
    is ``stack``'s (the run's). ``notify`` is told what start-up is doing (assembling
    the model file on a first run, starting the server), which takes seconds."""

    def __init__(self, stack: contextlib.AsyncExitStack, ctx_per_slot: int,
                 notify: Callable[[str], None] | None = None) -> None:
        self._stack = stack
        self._ctx_per_slot = ctx_per_slot
        self._notify = notify or (lambda _: None)
        self._lock = anyio.Lock()
        self._spec: ModelSpec | None = None

    async def start(self, spec: ModelSpec) -> ModelSpec:
        """``spec`` pointed at the running server (started now if it is not yet)."""
        async with self._lock:
            if self._spec is None:
                server = LocalModelServer(n_parallel=SLOTS, ctx_size=SLOTS * self._ctx_per_slot,
                                          notify=self._notify)
                self._notify(f"starting the embedded model {spec.abbr} (llama.cpp)...")
                started = time.monotonic()
                await self._stack.enter_async_context(server)
                self._notify(f"embedded model {spec.abbr} ready "
                             f"({time.monotonic() - started:.1f}s to start)")
                self._spec = replace(spec, base_url=server.base_url, model=server.model)
        return self._spec
