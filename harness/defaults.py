"""Every default setting and every environment variable harness reads, in one place.

Modules import these names rather than write the values again, so a default changes
here and only here (the README's tables quote them).
"""

from __future__ import annotations

# Run settings (``RunOptions``, the CLI's flags).

#: Model calls in flight at once (``-c``), unless a model's ``concurrency`` says fewer.
CONCURRENCY = 64

# Per endpoint (a model dict, a ``judge_cfg``; ``--timeout``/``--max-attempts``).

#: Seconds one attempt of a call may take.
TIMEOUT = 600.0
#: Attempts per call for failures other than 429s.
MAX_ATTEMPTS = 6
#: Seconds to open a connection (never more than ``TIMEOUT``): a black-holed host fails
#: in seconds rather than after the attempt timeout.
CONNECT_TIMEOUT = 10.0
#: Seconds a call keeps retrying 429s before it fails.
RATE_LIMIT_TIMEOUT = 300.0
#: Seconds per attempt against the embedded model (it answers slowly on a small CPU,
#: but a hung local server must not hold the run for ``TIMEOUT``).
EMBEDDED_TIMEOUT = 300.0

# Judges (``judge_cfg``).

#: Judge calls in flight at once per judge endpoint.
JUDGE_CONCURRENCY = 8
#: Re-asks with a format reminder after an unreadable verdict.
MAX_REASKS = 2
#: The most ``max_reasks`` may be: each re-ask is a paid request, and a judge that has
#: not answered A or B after ten reminders will not.
REASKS_LIMIT = 10

# Environment variables.

#: The endpoint of the model under evaluation, when no config or flag names one.
ENV_MODEL_BASE_URL = "HARNESS_MODEL_BASE_URL"
#: The model name sent to that endpoint.
ENV_MODEL = "HARNESS_MODEL"
#: The API key of an endpoint that names none of its own.
ENV_API_KEY = "HARNESS_API_KEY"
#: OpenCompass's API key variable (``key='ENV'``), read after ``ENV_API_KEY``.
ENV_OPENAI_API_KEY = "OPENAI_API_KEY"
#: The judge of a ``judge_cfg=dict()`` (OpenCompass's names): model, endpoint, key.
ENV_JUDGE_MODEL = "OC_JUDGE_MODEL"
ENV_JUDGE_API_BASE = "OC_JUDGE_API_BASE"
ENV_JUDGE_API_KEY = "OC_JUDGE_API_KEY"
#: Where the embedded model's file is assembled (default ``~/.cache/harness/models``).
ENV_CACHE_DIR = "HARNESS_CACHE_DIR"
#: Where judge template presets are read from (default: the shipped ``judges/``).
ENV_JUDGES_DIR = "HARNESS_JUDGES_DIR"
#: ``1`` runs model-written code without a sandbox (``harness.sandbox``): unsafe.
ENV_UNSAFE_EXECUTION = "HARNESS_UNSAFE_EXECUTION"
