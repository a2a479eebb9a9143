"""The transport seam: real transports raise only harness's errors; MockTransport drives a
client like a server would; a 429 pauses the endpoint's pacing through the retry policy."""

from __future__ import annotations

import socket

import pytest

from harness.client import ModelClient
from harness.errors import (
    ConfigError,
    ConnectError,
    DecodingError,
    HTTPStatusError,
    ModelCallError,
    NetworkError,
    TransportError,
    TransportTimeout,
)
from harness.models import model_spec
from harness.records import ModelSpec
from harness.retry import RetryPolicy
from harness.testing import FakeOpenAI, Fault, MockRequest, MockResponse, MockTransport, fail_first
from harness.transport import make_transport

BODY = {"model": "fake-model", "messages": [{"role": "user", "content": "hello"}],
        "max_tokens": 8}
FAST = RetryPolicy(max_attempts=3, initial=0.01, maximum=0.05)
REPLY = {"choices": [{"message": {"content": "42"}, "finish_reason": "stop"}],
         "usage": {"prompt_tokens": 3, "completion_tokens": 1}}


@pytest.fixture(params=["aiohttp", "openai"])
def transport(request) -> str:
    return request.param


async def post_once(base_url: str, transport: str, deadline: float = 5.0) -> BaseException:
    """The exception one POST through the named real transport raises."""
    spec = ModelSpec(abbr="m", model="fake-model", base_url=base_url, transport=transport,
                     timeout=deadline)
    sender = make_transport(spec, 1)
    try:
        with pytest.raises(TransportError) as caught:
            await sender.post("/chat/completions", BODY)
    finally:
        await sender.aclose()
    return caught.value


@pytest.mark.parametrize("fault,error", [
    (Fault("server_error", status=503), HTTPStatusError),
    (Fault("malformed_json"), DecodingError),
    (Fault("slow", seconds=30), TransportTimeout),
], ids=["status", "not-json", "timeout"])
async def test_library_errors_become_harness_errors_at_the_boundary(transport, fault, error):
    """A library exception leaking past a transport would be classified 'unexpected' and
    never retried; each is translated, with the library's own kept as the cause."""
    async with FakeOpenAI(faults=fail_first(1, fault)) as server:
        exc = await post_once(server.base_url, transport, deadline=0.5)
    assert isinstance(exc, error)
    assert isinstance(exc, HTTPStatusError) or exc.__cause__ is not None
    if isinstance(exc, HTTPStatusError):
        assert exc.status == 503 and str(exc).startswith("HTTP 503: ")


async def test_a_dropped_connection_is_a_retryable_harness_error(transport):
    async with FakeOpenAI(faults=fail_first(1, "drop")) as server:
        exc = await post_once(server.base_url, transport)
    # aiohttp sees the server disconnect; the SDK's aiohttp client reports a timeout.
    assert isinstance(exc, NetworkError if transport == "aiohttp" else TransportTimeout)


@pytest.mark.parametrize("transport", ["aiohttp", "openai"])
async def test_a_refused_connection_says_so(transport):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    exc = await post_once(f"http://127.0.0.1:{port}/v1", transport)
    assert isinstance(exc, ConnectError) and exc.cause == "connection refused"


def client(handler, **kw) -> tuple[ModelClient, MockTransport]:
    mock = MockTransport(handler)
    spec = ModelSpec(abbr="m", model="fake-model", base_url="http://mock.invalid/v1", **kw)
    return ModelClient(spec, concurrency=4, policy=FAST, transport=mock), mock


async def test_a_mock_transport_serves_the_client_without_a_server():
    model, mock = client(lambda request: REPLY)
    result = await model.complete(BODY["messages"], {"max_tokens": 8})
    await model.aclose()
    assert result.text == "42" and result.prompt_tokens == 3
    assert mock.requests == [MockRequest("POST", "/chat/completions", {**BODY})]
    assert mock.closed


async def test_a_mock_handler_raising_a_transport_error_is_retried_like_a_real_one():
    failures = iter([ConnectError("refused", cause="connection refused")] * 2)

    async def handler(request: MockRequest):
        if (error := next(failures, None)) is not None:
            raise error
        return REPLY

    model, mock = client(handler)
    result = await model.complete(BODY["messages"], {})
    assert result.attempts == 3 and model.stats.by_kind == {"connection": 2}
    assert len(mock.requests) == 3


@pytest.mark.parametrize("response,kind,cause", [
    (MockResponse(503, {"error": {"message": "overloaded"}}), "server_error",
     "HTTP 503: overloaded"),
    (MockResponse(content=b"<html>bad gateway</html>"), "bad_response", "malformed JSON reply"),
], ids=["status", "not-json"])
async def test_a_mock_response_fails_as_the_same_reply_over_http_would(response, kind, cause):
    model, mock = client(lambda request: response)
    with pytest.raises(ModelCallError) as caught:
        await model.complete(BODY["messages"], {})
    assert (caught.value.kind, caught.value.cause, caught.value.attempts) == (kind, cause, 3)


async def test_a_429_pauses_the_endpoints_pacing_for_every_caller():
    """The pause is the retry policy's: one 429 holds back the shared limiter."""
    replies = iter([MockResponse(429, {"error": {"message": "slow down"}},
                                 headers={"Retry-After": "0.05"})])
    model, _ = client(lambda request: next(replies, REPLY), rpm=60_000)
    result = await model.complete(BODY["messages"], {})
    assert result.attempts == 2 and model.stats.rate_limited == 1
    assert model.limiter is not None and model.limiter.stats.pauses == 1


async def test_a_server_error_does_not_pause_the_pacing():
    replies = iter([MockResponse(500)])
    model, _ = client(lambda request: next(replies, REPLY), rpm=60_000)
    await model.complete(BODY["messages"], {})
    assert model.limiter is not None and model.limiter.stats.pauses == 0


def test_an_unknown_transport_name_is_a_config_error_listing_the_known_ones():
    with pytest.raises(ConfigError, match="transport must be one of aiohttp, openai"):
        model_spec({"path": "m", "openai_api_base": "http://x/v1", "transport": "carrier"},
                   "models[0]")


_BODIES = [
    b'{"choices": [{"message": {"content": "42"}}]}', b'{"a": 1}\n', b' {"a": 1}', b'{}',
    b'{"a": 1} {"b": 2}', b'{"a": 1', b'{"a": NaN, "b": -Infinity}', b'{"s": "\\ud800 \\u00e9"}',
    '{"s": "é 答"}'.encode(), b'{"s": "\xed\xa0\x80"}', b'{"s": "\xff"}', b'{\x00"a": 1}',
    '\ufeff{"a": 1}'.encode(), '{"a": 1}'.encode("utf-16"), '{"a": 1}'.encode("utf-16-le"),
    '{"a": 1}'.encode("utf-32"), b'[1, 2]', b'"text"', b'', b'{', b'<html>502</html>',
    b'{"a": [1, 2.5, true, null, {"b": "c"}]}\r\n\t ', b'{"a": 1}x', b'{"a" 1}', b"{'a': 1}",
]


@pytest.mark.parametrize("body", _BODIES)
def test_a_reply_body_decodes_as_json_loads_decodes_it(body):
    import json

    from harness.errors import DecodingError
    from harness.transport.base import decoded

    try:
        expected: object = json.loads(body)
    except ValueError as exc:
        with pytest.raises(DecodingError) as raised:
            decoded(body)
        assert str(raised.value) == str(DecodingError(str(exc)))
    else:
        assert repr(decoded(body)) == repr(expected)
