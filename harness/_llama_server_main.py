"""Child-process entry point of the embedded llama.cpp server (see ``harness.local_model``).

Run as ``python -m harness._llama_server_main --model PATH --parent-pid PID ...``. The
process loads the GGUF into xllamacpp's in-process llama.cpp HTTP server, writes one JSON
line ``{"listening": "http://127.0.0.1:PORT"}`` to stdout once the model is loaded, then
blocks until stdin reaches end-of-file and exits.

It lives in its own process so the parent can always kill it and never shares a GIL with
it. It must not outlive the parent, which is guarded twice:

* on Linux, ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` makes the kernel kill it when the parent
  dies, even by SIGKILL, and even if other processes still hold our stdin pipe open;
* everywhere, the parent holds the write end of our stdin, so its death (or a plain
  close) gives us end-of-file and we exit.

Protocol: nothing but the ready line is ever written to the original stdout (llama.cpp's
own prints are redirected to stderr); errors and logs go to stderr; exit status 1 means
start-up failed.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import sys
from typing import Any

_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent_pid: int) -> None:
    """Arrange to be killed when the parent dies; exit now if it is already gone."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass  # the stdin end-of-file watch below still covers us
    # The parent may have died between fork and prctl; the kernel would then never
    # deliver the signal, so check who our parent is now.
    if os.getppid() != parent_pid:
        os._exit(1)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m harness._llama_server_main")
    parser.add_argument("--model", required=True, help="path of the GGUF file")
    parser.add_argument("--parent-pid", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 lets the OS pick a free port")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--ctx-size", type=int, required=True)
    parser.add_argument("--parallel", type=int, required=True)
    parser.add_argument("--alias", default="")
    parser.add_argument("--chat-template", required=True, help="Jinja chat template source")
    parser.add_argument("--verbosity", type=int, default=1, help="1: errors only, 3: info")
    return parser.parse_args(argv)


def _start_server(args: argparse.Namespace) -> Any:
    """Load the model and start llama.cpp's HTTP server; returns once the model is loaded."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.hostnames = [args.host]
    params.port = args.port
    params.n_parallel = args.parallel
    # llama.cpp splits n_ctx evenly between the slots (kv_unified is off).
    params.n_ctx = args.ctx_size
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.verbosity = args.verbosity
    if args.alias:
        params.model_alias = {args.alias}
    # The GGUF ships no chat template, and llama.cpp's fallback (ChatML) uses tokens
    # Gemma never saw. With Jinja on, ``chat_template`` is the template's source text
    # (a builtin name such as "gemma" would be rendered as that literal word).
    params.use_jinja = True
    params.chat_template = args.chat_template
    return xllamacpp.Server(params)


def main(argv: list[str] | None = None) -> None:
    """Serve until stdin closes; see the module docstring for the protocol."""
    args = _parse_args(argv)
    _die_with_parent(args.parent_pid)
    # Ctrl-C in a terminal is the parent's to handle; it stops us through stdin/SIGTERM.
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    # Keep the ready line the only thing on our stdout pipe: llama.cpp prints there too.
    ready_fd = os.dup(1)
    os.dup2(2, 1)

    server = _start_server(args)
    # llama.cpp installed SIGINT/SIGTERM handlers that only stop its loop thread and would
    # leave this process blocked on stdin; put back plain termination.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    line = json.dumps({"listening": server.listening_address}) + "\n"
    os.write(ready_fd, line.encode())
    os.close(ready_fd)

    try:
        while os.read(0, 65536):
            pass  # the parent never writes; only end-of-file matters
    except OSError:
        pass  # stdin unusable: treat like end-of-file rather than serve unsupervised
    # No graceful llama.cpp teardown: it can block on in-flight requests, and the kernel
    # frees the model, the KV cache and the listening socket anyway.
    os._exit(0)


if __name__ == "__main__":
    main()
