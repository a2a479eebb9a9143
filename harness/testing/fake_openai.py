"""A scriptable fake of the OpenAI completions APIs, served by a real aiohttp server.

It answers ``POST /v1/chat/completions``, the legacy ``POST /v1/completions`` (a ``prompt``
string, as vLLM, llama.cpp and SGLang serve base models) and ``GET /v1/models``.

The official ``openai.AsyncOpenAI`` client talks to it over 127.0.0.1, so tests exercise
the real transport, timeouts and error classes::

    async with FakeOpenAI(faults=fail_first(1, "server_error")) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)

Benchmarks run it as its own process: ``python -m harness.testing.fake_openai --help``.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import itertools
import json
import math
import signal
import sys
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

from aiohttp import web

from harness.testing.logprobs import Scorer
from harness.testing.replies import (
    ERROR_KINDS,
    MALFORMED_JSON,
    ROUTES,
    Fault,
    FaultPolicy,
    Reply,
    Responder,
    Route,
    Stats,
    dumps,
    echo_last_user,
    error_body,
    fault_rate,
    loads,
    model_entry,
    request_key,
    retry_after_value,
)

_NO_CONTENT = Reply(None)


def _route_of(request: web.Request) -> Route:
    """The route a request came in on (``start`` names every route it adds)."""
    return ROUTES[cast(str, request.match_info.route.name)]


class FakeOpenAI:
    """An OpenAI-compatible completions server on 127.0.0.1, scriptable per request.

    Use as ``async with FakeOpenAI(...) as server`` (or ``await start()`` / ``await
    stop()``). Both routes (chat and legacy completions) share everything below: the
    responder gets either body, and faults, policies and limits apply to both alike.
    ``requests`` holds every completion body received (of either route) when ``record`` is
    true; ``stats`` holds the :class:`Stats`; ``errors`` holds exceptions the responder
    raised (each answered with a 500). ``latency`` is seconds, or ``body -> seconds``,
    waited before every 200 (error faults answer at once, as real rate limiters do).
    ``faults`` is a policy ``(body, attempt) -> Fault | None`` (see ``replies``).
    ``rpm_limit`` answers 429 once that many requests were accepted within ``window``
    seconds; rejected requests do not count towards the window. ``scorer`` gives
    ``/completions`` token log-probabilities (``echo``, ``logprobs``: see
    ``harness.testing.logprobs``); ``scorer=False`` makes a server without them.
    """

    def __init__(self, responder: Responder | None = None,
                 latency: float | Callable[[dict], float] = 0.0,
                 faults: FaultPolicy | None = None, models: Sequence[str] = ("fake-model",),
                 strict_models: bool = False, record: bool = True, *,
                 api_key: str | None = None, rpm_limit: int | None = None,
                 window: float = 60.0, host: str = "127.0.0.1", port: int = 0,
                 scorer: Scorer | bool | None = None) -> None:
        self.responder: Responder = responder or echo_last_user
        #: Token log-probabilities of ``/completions`` (``echo``, ``logprobs``); see
        #: ``harness.testing.logprobs``. ``None``: that route ignores both, as
        #: servers without them do.
        self.scorer: Scorer | None = (Scorer() if scorer is None or scorer is True
                                      else None if scorer is False else scorer)
        self.latency, self.faults = latency, faults
        self.models, self.strict_models, self.record = tuple(models), strict_models, record
        self.api_key, self.rpm_limit, self.window = api_key, rpm_limit, window
        self.host, self.port = host, port
        self.requests: list[dict] = []
        self.stats = Stats()
        self.errors: list[BaseException] = []
        self._attempts: dict[str, int] = {}
        self._accepted: deque[float] = deque()
        self._pauses: set[asyncio.Future[bool]] = set()
        self._idle = asyncio.Event()  # set while no request is being handled
        self._idle.set()
        self._ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None
        self._closing = False

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, the ``base_url`` to give the OpenAI client."""
        if self._runner is None:
            raise RuntimeError("FakeOpenAI is not running; use `async with server:`")
        return f"http://{self.host}:{self.port}/v1"

    def attempts(self, body: dict) -> int:
        """How often a request like ``body`` was seen (counted only when ``faults`` is set)."""
        return self._attempts.get(request_key(body), 0)

    def reset(self) -> None:
        """Forget recorded requests, attempt counts, the rpm window and the counters."""
        self.requests.clear()
        self._attempts.clear()
        self._accepted.clear()
        in_flight, self.stats = self.stats.in_flight, Stats()
        self.stats.in_flight = in_flight

    async def wait_idle(self) -> None:
        """Return once no request is being handled, e.g. after a killed client's
        connections were noticed and their handlers ended."""
        await self._idle.wait()

    async def start(self) -> None:
        """Bind the port (``port=0``: a free one) and start serving."""
        app = web.Application(client_max_size=64 * 1024 * 1024)
        for route in ROUTES.values():
            app.router.add_post(route.path, self._handle, name=route.name)
        app.router.add_get("/v1/models", self._list_models)
        # A short grace: anything still running after stalls were released is cancelled.
        runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=0.5)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()  # e.g. the port is taken: leave nothing open behind
            raise
        self._runner, self._site, self._closing = runner, site, False
        self.port = runner.addresses[0][1]

    async def stop(self) -> None:
        """Stop serving; stalled and sleeping requests are cut off, connections closed."""
        if self._runner is None or self._site is None:
            return
        self._closing = True
        await self._site.stop()  # stop accepting before releasing, so nothing new stalls
        for waiter in list(self._pauses):
            _resolve(waiter, False)
        await self._runner.cleanup()
        self._runner = self._site = None

    async def __aenter__(self) -> FakeOpenAI:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    # -- request handling -------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        stats = self.stats
        stats.total += 1
        stats.by_route[_route_of(request).name] += 1
        stats.in_flight += 1
        stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
        self._idle.clear()
        try:
            return await self._answer(request)
        finally:
            self.stats.in_flight -= 1
            if self.stats.in_flight == 0:
                self._idle.set()

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        # The route comes from the request, so subclasses that wrap _answer(request) still work.
        route = _route_of(request)
        if not self._authorized(request):
            return self._error("unauthorized")
        body = await _read_json(request)
        if not isinstance(body, dict) or not isinstance(body.get(route.field), route.field_type):
            return self._error("bad_request", message=route.bad_body)
        if body.get("stream"):
            return self._error("bad_request", message="FakeOpenAI does not implement `stream`.")
        if self.record:
            self.requests.append(body)
        attempt = self._count_attempt(body) if self.faults is not None else 0
        if self.rpm_limit is not None and (wait := self._rpm_wait()) is not None:
            self.stats.rpm_limited += 1
            return self._error("rate_limit", retry_after=wait)
        if self.strict_models and body.get("model") not in self.models:
            return self._error("not_found", model=body.get("model"))
        fault = self.faults(body, attempt) if self.faults is not None else None
        if fault is None:
            return await self._complete(request, route, body)
        self.stats.faults[fault.kind] += 1
        return await self._inject(request, route, body, fault)

    def _authorized(self, request: web.Request) -> bool:
        expected = f"Bearer {self.api_key}"
        return self.api_key is None or request.headers.get("Authorization") == expected

    def _count_attempt(self, body: dict) -> int:
        key = request_key(body)
        attempt = self._attempts.get(key, 0)
        self._attempts[key] = attempt + 1
        return attempt

    def _rpm_wait(self) -> float | None:
        """Seconds until the sliding window has room, or None after admitting this request."""
        now = asyncio.get_running_loop().time()
        accepted = self._accepted
        while accepted and accepted[0] <= now - self.window:
            accepted.popleft()
        if len(accepted) >= self.rpm_limit:  # type: ignore[operator]
            return accepted[0] + self.window - now
        accepted.append(now)
        return None

    async def _inject(self, request: web.Request, route: Route, body: dict,
                      fault: Fault) -> web.StreamResponse:
        if fault.kind in ERROR_KINDS:
            return self._error(fault.kind, fault.status, body.get("model"),
                               message=fault.message, retry_after=fault.retry_after)
        if fault.kind == "drop":
            return _drop(request)
        if fault.kind == "stall":
            return await self._stall(request, fault.send_headers)
        return await self._complete(request, route, body, fault)

    async def _complete(self, request: web.Request, route: Route, body: dict,
                        fault: Fault | None = None) -> web.StreamResponse:
        """Answer normally, or shaped by one of the faults that still send a 200."""
        delay = self.latency(body) if callable(self.latency) else self.latency
        kind = fault.kind if fault is not None else None
        if fault is not None and kind == "slow":
            delay += fault.seconds
        if delay > 0 and not await self._pause(delay):
            return _drop(request)
        if kind == "malformed_json":
            return self._send(200, MALFORMED_JSON)
        if kind == "error_200":
            message = fault.message if fault is not None else None
            return self._send(200, dumps(error_body("server_error", message=message)[1]))
        try:
            reply, billed = await self._shaped_reply(body, fault)
        except Exception as exc:  # noqa: BLE001 - a broken responder is a test bug to show
            self.errors.append(exc)
            return self._error("server_error", message=f"FakeOpenAI responder raised {exc!r}")
        payload = route.answer(body, reply, next(self._ids), billed)
        if route.name == "completions" and self.scorer and body.get("logprobs") is not None:
            for choice in payload["choices"]:
                self.scorer.attach(body, choice)
        if kind == "empty_choices":
            payload["choices"] = []
        return self._send(200, dumps(payload))

    async def _shaped_reply(self, body: dict, fault: Fault | None) -> tuple[Reply, Reply]:
        """The reply to send and the one usage counts (they differ under ``empty_content``)."""
        if fault is None:
            reply = await self._reply(body)
            return reply, reply
        if fault.kind in ("empty_choices", "null_content"):
            return _NO_CONTENT, _NO_CONTENT
        reply = await self._reply(body)
        if fault.kind == "length":
            reply = reply.truncated(fault.keep)
        elif fault.kind == "empty_content":
            return reply.emptied(), reply
        return reply, reply

    async def _reply(self, body: dict) -> Reply:
        result = self.responder(body)
        if inspect.isawaitable(result):
            result = await result
        return Reply(result) if isinstance(result, str) else result

    async def _stall(self, request: web.Request, send_headers: bool) -> web.StreamResponse:
        if send_headers:
            # A Content-Length that never arrives keeps the client reading the body.
            response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
            response.content_length = 1024
            await response.prepare(request)
        await self._pause(math.inf)
        return _drop(request)

    async def _pause(self, seconds: float) -> bool:
        """Wait ``seconds``; return False early if the server is shutting down."""
        if self._closing:
            return False
        loop = asyncio.get_running_loop()
        # A bare future with call_later is what asyncio.sleep does, and stop() can resolve it.
        waiter: asyncio.Future[bool] = loop.create_future()
        timer = None if math.isinf(seconds) else loop.call_later(seconds, _resolve, waiter, True)
        self._pauses.add(waiter)
        try:
            return await waiter
        finally:
            self._pauses.discard(waiter)
            if timer is not None:
                timer.cancel()

    async def _list_models(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            status, payload = error_body("unauthorized")
        else:
            status, payload = 200, {"object": "list", "data": [model_entry(m) for m in self.models]}
        return web.Response(status=status, body=dumps(payload), content_type="application/json")

    def _send(self, status: int, payload: bytes,
              headers: dict[str, str] | None = None) -> web.Response:
        self.stats.by_status[status] += 1
        return web.Response(status=status, body=payload, headers=headers,
                            content_type="application/json")

    def _error(self, kind: str, status: int | None = None, model: object = None, *,
               message: str | None = None, retry_after: float | None = None) -> web.Response:
        default_status, payload = error_body(kind, model, message)
        headers = None if retry_after is None else {"Retry-After": retry_after_value(retry_after)}
        return self._send(status or default_status, dumps(payload), headers)


async def _read_json(request: web.Request) -> Any:
    try:
        return loads(await request.read())
    except ValueError:
        return None


def _drop(request: web.Request) -> web.Response:
    """Cut the connection; aiohttp then fails to write the returned response and lets go."""
    if request.transport is not None:
        request.transport.abort()
    return web.Response()


def _resolve(waiter: asyncio.Future[bool], value: bool) -> None:
    if not waiter.done():
        waiter.set_result(value)


# -- standalone server for benchmarks -----------------------------------------------------

def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m harness.testing.fake_openai",
        description="Serve the fake OpenAI API until SIGINT/SIGTERM, then print stats as JSON.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0: any free port")
    parser.add_argument("--url-file", default=None,
                        help="write the base URL here once listening (for --port 0)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per answer")
    parser.add_argument("--fault-rate", type=float, default=0.0,
                        help="probability of a transient fault per attempt")
    parser.add_argument("--fault-kinds", default="rate_limit,server_error",
                        help="comma-separated fault kinds drawn from")
    parser.add_argument("--max-consecutive", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reply", default=None, help="fixed answer (default: echo the prompt)")
    parser.add_argument("--model", action="append", dest="models", help="served model (repeatable)")
    parser.add_argument("--strict-models", action="store_true")
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--rpm-limit", type=int, default=None)
    parser.add_argument("--window", type=float, default=60.0)
    return parser.parse_args(argv)


def server_from_args(args: argparse.Namespace) -> FakeOpenAI:
    """Build the benchmark server the command line describes (never records bodies)."""
    faults = None
    if args.fault_rate > 0:
        faults = fault_rate(args.fault_rate, args.fault_kinds.split(","), seed=args.seed,
                            max_consecutive=args.max_consecutive)
    responder = None if args.reply is None else (lambda body, text=args.reply: text)
    return FakeOpenAI(responder, args.latency, faults, args.models or ("fake-model",),
                      args.strict_models, record=False, api_key=args.api_key,
                      rpm_limit=args.rpm_limit, window=args.window, host=args.host, port=args.port)


async def serve(server: FakeOpenAI, url_file: str | None = None) -> None:
    """Run ``server`` until SIGINT or SIGTERM, then print its stats as one JSON line.

    ``url_file`` receives the base URL once the port is bound; it appears whole (written
    aside, then renamed), so a script can wait for the file and read it at once.
    """
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with server:
        print(f"fake-openai listening on {server.base_url}", file=sys.stderr, flush=True)
        if url_file is not None:
            await asyncio.to_thread(_write_whole, Path(url_file), server.base_url + "\n")
        await stop.wait()
    print(json.dumps(server.stats.as_dict()), flush=True)


def _write_whole(path: Path, text: str) -> None:
    part = path.with_name(path.name + ".part")
    part.write_text(text, encoding="utf-8")
    part.replace(path)


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    args = _parse_args(argv)
    asyncio.run(serve(server_from_args(args), args.url_file))


if __name__ == "__main__":
    main()
