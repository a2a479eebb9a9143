"""Model calls: classified retries against the fake server."""

from __future__ import annotations

import datetime
import email.utils

import pytest

from harness.client import ModelClient
from harness.errors import (
    EndpointDownError,
    HTTPStatusError,
    ModelCallError,
    PermanentModelError,
    TransportTimeout,
)
from harness.records import ModelSpec
from harness.retry import MAX_RETRY_AFTER, RetryPolicy, classify
from harness.testing import FakeOpenAI, Fault, fail_first, fail_for
from harness.transport import make_transport

MESSAGES = [{"role": "user", "content": "hello"}]
FAST = RetryPolicy(max_attempts=3, initial=0.01, maximum=0.05)


@pytest.fixture(params=["aiohttp", "openai"])
def transport(request) -> str:
    """Every client test against the fake server runs on both transports."""
    return request.param


def spec(server, transport: str, **kw) -> ModelSpec:
    return ModelSpec(abbr="m", model="fake-model", base_url=server.base_url,
                     api_key="sk-secret-1234", transport=transport, **kw)


async def call(server, transport: str, policy=FAST, **kw):
    client = ModelClient(spec(server, transport, **kw), concurrency=4, policy=policy)
    try:
        return await client.complete(MESSAGES, {"max_tokens": 8}), client
    finally:
        await client.aclose()


async def test_plain_completion(transport):
    async with FakeOpenAI() as server:
        result, client = await call(server, transport)
    assert result.text == "hello" and result.finish_reason == "stop"
    assert result.attempts == 1 and client.stats.requests == 1


@pytest.mark.parametrize("fault", [
    Fault("rate_limit", retry_after=0), Fault("rate_limit"), Fault("server_error", status=502),
    Fault("server_error", status=503), Fault("drop"), Fault("malformed_json"),
    Fault("empty_choices"), Fault("null_content"),
], ids=lambda f: f"{f.kind}-{f.status or f.retry_after}")
async def test_transient_faults_are_retried(fault, transport):
    async with FakeOpenAI(faults=fail_first(2, fault)) as server:
        result, client = await call(server, transport)
    assert result.text == "hello" and result.attempts == 3
    assert client.stats.retries == 2


async def test_slow_reply_is_cut_by_the_timeout_and_retried(transport):
    async with FakeOpenAI(faults=fail_first(1, Fault("slow", seconds=30))) as server:
        result, client = await call(server, transport, timeout=0.5)
    assert result.attempts == 2 and client.stats.by_kind == {"timeout": 1}


async def test_stalled_socket_is_cut_by_the_timeout(transport):
    async with FakeOpenAI(faults=fail_first(1, Fault("stall", send_headers=True))) as server:
        result, _ = await call(server, transport, timeout=0.5)
    assert result.attempts == 2


@pytest.mark.parametrize("kind,status", [("bad_request", 400)])
async def test_client_errors_are_not_retried(kind, status, transport):
    async with FakeOpenAI(faults=fail_first(5, kind)) as server:
        with pytest.raises(ModelCallError, match=rf"HTTP {status}\) after 1 attempt") as info:
            await call(server, transport)
    assert not isinstance(info.value, PermanentModelError)
    assert server.stats.total == 1


@pytest.mark.parametrize("kind,status", [("unauthorized", 401), ("not_found", 404)])
async def test_auth_and_not_found_are_permanent(kind, status, transport):
    async with FakeOpenAI(faults=fail_first(5, kind)) as server:
        with pytest.raises(PermanentModelError, match=f"HTTP {status}"):
            await call(server, transport)
    assert server.stats.total == 1


async def test_attempts_are_bounded(transport):
    async with FakeOpenAI(faults=fail_first(10, "server_error")) as server:
        with pytest.raises(ModelCallError, match="after 3 attempts"):
            await call(server, transport)
    assert server.stats.total == 3


async def test_api_key_never_appears_in_errors(transport):
    async with FakeOpenAI(faults=fail_first(10, "bad_request")) as server:
        with pytest.raises(ModelCallError) as info:
            await call(server, transport)
    assert "sk-secret-1234" not in str(info.value)


async def test_retry_after_is_a_floor_for_the_wait(transport):
    """The transport hands the 429's Retry-After to the policy, which waits at least that."""
    async with FakeOpenAI(faults=fail_first(1, Fault("rate_limit", retry_after=7))) as server:
        sender = make_transport(spec(server, transport), 1)
        try:
            with pytest.raises(HTTPStatusError) as info:
                await sender.post("/chat/completions", {"model": "fake-model",
                                                        "messages": MESSAGES})
        finally:
            await sender.aclose()
    exc = info.value
    assert classify(exc).retry_after == 7
    policy = RetryPolicy(initial=0.5, maximum=30)
    waits = [policy.delay(exc, 1) for _ in range(20)]
    assert all(7 <= w <= 7.5 for w in waits)


@pytest.mark.timeout(60)  # before the fix, the paced call waited the hour
@pytest.mark.parametrize("retry_after", [3600, 10**9])
async def test_a_retry_after_beyond_the_calls_time_is_not_waited(transport, retry_after):
    """A 429 asking for an hour on an endpoint paced by ``rpm``: the call gives up at
    once (pending; the next run asks again), instead of holding the endpoint that long."""
    faults = fail_first(1, Fault("rate_limit", retry_after=retry_after))
    async with FakeOpenAI(faults=faults) as server:
        policy = RetryPolicy(max_attempts=3, initial=0.01, maximum=0.05, rate_limit_timeout=5)
        client = ModelClient(spec(server, transport, rpm=600), concurrency=4, policy=policy)
        try:
            with pytest.raises(ModelCallError) as info:
                await client.complete(MESSAGES, {"max_tokens": 8})
        finally:
            await client.aclose()
    assert info.value.kind == "rate_limit" and info.value.attempts == 1
    assert server.stats.total == 1


@pytest.mark.parametrize(("header", "seconds"), [
    ("7", 7.0), ("0", 0.0), ("-3", 0.0), ("3600", MAX_RETRY_AFTER), ("inf", MAX_RETRY_AFTER),
    ("nan", None), ("soon", None),
    ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),  # a date in the past: now
])
def test_retry_after_is_read_in_seconds_or_as_a_date_and_capped(header, seconds):
    exc = HTTPStatusError(429, {"retry-after": header}, b"")
    assert classify(exc).retry_after == seconds


def test_retry_after_as_an_http_date_in_the_future_is_waited_for():
    when = email.utils.format_datetime(
        datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=30), usegmt=True)
    wait = classify(HTTPStatusError(429, {"retry-after": when}, b"")).retry_after
    assert wait is not None and 20 < wait <= 30


def test_backoff_grows_and_is_capped():
    policy = RetryPolicy(initial=1.0, maximum=4.0)
    exc = TransportTimeout()
    assert all(0 <= policy.delay(exc, 1) <= 1.0 for _ in range(50))
    assert all(0 <= policy.delay(exc, 10) <= 4.0 for _ in range(50))
    assert 0 <= policy.delay(exc, 5000) <= 4.0  # many 429s: no overflow
    assert max(policy.delay(exc, 10) for _ in range(200)) > 1.0


@pytest.mark.parametrize("data", [
    {"choices": [{"message": {"content": "x"}}], "usage": "not a dict"},
    {"choices": [{"message": {"content": "x"}, "logprobs": {"content": [{"token": "x"}]}}]},
    {"choices": [{"message": {"content": None}}]},
    {"choices": []},
    ["not", "an", "object"],
], ids=["usage", "logprobs", "null-content", "no-choices", "list"])
def test_malformed_replies_are_bad_responses_to_retry(data):
    from harness.client import _read
    from harness.retry import BadResponse

    with pytest.raises(BadResponse):
        _read(data, None)


def test_half_a_character_in_any_text_of_a_reply_reads_as_a_replacement_character():
    from harness.client import _read

    data = {"choices": [{"message": {"content": "4 \ud83d", "reasoning_content": "\ude00 ok 😀"},
                         "finish_reason": "stop\udfff"}]}
    result = _read(data, None)
    assert (result.text, result.reasoning, result.finish_reason) == \
        ("4 \ufffd", "\ufffd ok 😀", "stop\ufffd")
    for text in (result.text, result.reasoning, result.finish_reason):
        text.encode("utf-8")  # a UTF-8 file or an SQLite row can hold it
    plain = {"choices": [{"message": {"content": "x"}, "finish_reason": "stop"}]}
    assert _read(plain, None).text == "x"


@pytest.mark.parametrize("kind", ["bad_request", "error_200"])
async def test_half_a_character_in_an_error_message_reads_as_a_replacement_character(
        kind, transport):
    # What the sample records (its error and cause) must fit a UTF-8 file and SQLite.
    async with FakeOpenAI(faults=lambda body, attempt: Fault(kind, message="bad \ud83d input")
                          ) as server:
        with pytest.raises(ModelCallError) as raised:
            await call(server, transport)
    assert "bad \ufffd input" in str(raised.value)
    str(raised.value).encode("utf-8")
    raised.value.cause.encode("utf-8")


async def test_a_429_storm_is_waited_out_however_many_attempts_it_takes(transport):
    """429s are bounded in time, not attempts: a storm outlasting max_attempts' worth of
    backoff is ridden out."""
    async with FakeOpenAI(faults=fail_for(0.5, "rate_limit")) as server:
        result, client = await call(server, transport, RetryPolicy(max_attempts=2, initial=0.01,
                                                        maximum=0.05))
    assert result.text == "hello" and result.attempts > 2
    assert client.stats.rate_limited == result.attempts - 1


async def test_429s_are_retried_until_their_time_budget_runs_out(transport):
    policy = RetryPolicy(max_attempts=2, initial=0.01, maximum=0.05, rate_limit_timeout=0.3)
    async with FakeOpenAI(faults=fail_first(10_000, "rate_limit")) as server:
        with pytest.raises(ModelCallError) as info:
            await call(server, transport, policy)
    assert info.value.kind == "rate_limit" and info.value.attempts > 2
    assert info.value.outcome.endswith("(still rate limited at the end of its "
                                       "rate_limit_timeout)")


async def test_a_quota_429_is_not_retried_and_opens_the_breaker(transport):
    async with FakeOpenAI(faults=fail_first(5, "quota")) as server:
        with pytest.raises(EndpointDownError) as info:
            await call(server, transport)
    assert server.stats.total == 1
    assert "HTTP 429: " in info.value.cause and "exceeded your current quota" in info.value.cause


@pytest.mark.timeout(30)
async def test_a_host_that_never_answers_fails_at_the_connect_timeout(transport):
    """A black-holed address (SYNs dropped) fails after connect_timeout, not after the
    whole per-attempt timeout."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(8):  # fill the accept queue: later connects get no answer at all
        filler = socket.socket()
        filler.setblocking(False)
        try:
            filler.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        fillers.append(filler)
    black_hole = ModelSpec(abbr="m", model="m", base_url=f"http://127.0.0.1:{port}/v1",
                           transport=transport, timeout=600, connect_timeout=0.3)
    client = ModelClient(black_hole, policy=RetryPolicy(max_attempts=2, initial=0.01))
    try:
        with pytest.raises(ModelCallError) as info:
            await client.complete(MESSAGES, {"max_tokens": 8})
    finally:
        await client.aclose()
        for sock in (*fillers, listener):
            sock.close()
    assert info.value.kind == "timeout"
    assert info.value.cause == "connection timed out (the host never answered)"
