"""The fake OpenAI server, driven by the official SDK and, where the SDK hides things, aiohttp."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp
import anyio
import openai
import pytest

from harness.testing import (
    FAULT_KINDS,
    FakeOpenAI,
    Fault,
    Reply,
    fail_first,
    fault_rate,
    request_key,
)

USER = [{"role": "user", "content": "What is six times seven?"}]
PROMPT = USER[0]["content"]
TEXT_BODY = {"model": "fake-model", "prompt": PROMPT}


@asynccontextmanager
async def sdk(server: FakeOpenAI, **options: object) -> AsyncIterator[openai.AsyncOpenAI]:
    """An SDK client on the aiohttp transport, with the SDK's own retries off."""
    options.setdefault("api_key", "test")
    client = openai.AsyncOpenAI(base_url=server.base_url, max_retries=0,
                                http_client=openai.DefaultAioHttpClient(), **options)
    try:
        yield client
    finally:
        await client.close()


async def complete(client: openai.AsyncOpenAI, messages: list[dict] = USER, **kwargs: object):
    """One chat completion for the default model."""
    return await client.chat.completions.create(model="fake-model", messages=messages, **kwargs)


async def complete_text(client: openai.AsyncOpenAI, prompt: str = PROMPT, **kwargs: object):
    """One legacy text completion for the default model."""
    return await client.completions.create(model="fake-model", prompt=prompt, **kwargs)


async def post(server: FakeOpenAI, body: dict | None = None, headers: dict | None = None,
               path: str = "chat/completions") -> tuple[int, dict[str, str], bytes]:
    """POST a completion with plain aiohttp: status, headers and raw body."""
    body = body if body is not None else {"model": "fake-model", "messages": USER}
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{server.base_url}/{path}", json=body,
                                headers=headers) as response:
            return response.status, dict(response.headers), await response.read()


def one_fault(fault: Fault | str) -> FakeOpenAI:
    """A server whose every first attempt fails with ``fault``."""
    return FakeOpenAI(faults=fail_first(1, fault))


# -- normal answers ---------------------------------------------------------------------------

async def test_completion_echoes_last_user_message() -> None:
    async with FakeOpenAI() as server, sdk(server) as client:
        result = await complete(client)
    choice = result.choices[0]
    assert (choice.message.content, choice.finish_reason) == ("What is six times seven?", "stop")
    assert result.model == "fake-model" and result.object == "chat.completion"
    assert (result.usage.prompt_tokens, result.usage.completion_tokens,
            result.usage.total_tokens) == (5, 5, 10)
    assert server.requests == [{"model": "fake-model", "messages": USER}]


async def test_base_url_is_loopback_with_a_free_port() -> None:
    async with FakeOpenAI() as server:
        assert server.base_url == f"http://127.0.0.1:{server.port}/v1" and server.port > 0


async def test_models_endpoint_lists_models() -> None:
    async with FakeOpenAI(models=("a", "b")) as server, sdk(server) as client:
        page = await client.models.list()
    assert [model.id for model in page.data] == ["a", "b"]


async def test_async_responder_sees_extra_fields() -> None:
    async def judge(body: dict) -> Reply:
        return Reply(body["guided_choice"][1], finish_reason="stop")

    async with FakeOpenAI(responder=judge) as server, sdk(server) as client:
        result = await complete(client, extra_body={"guided_choice": ["A", "B"], "grammar": "g"})
    assert result.choices[0].message.content == "B"
    assert server.requests[0]["grammar"] == "g"


async def test_record_false_keeps_no_bodies() -> None:
    async with FakeOpenAI(record=False) as server, sdk(server) as client:
        await complete(client)
    assert server.requests == [] and server.stats.total == 1


async def test_latency_callable_delays_answer() -> None:
    async with FakeOpenAI(latency=lambda body: 30.0) as server, sdk(server, timeout=0.2) as client:
        with pytest.raises(openai.APITimeoutError):
            await complete(client)


async def test_responder_exception_is_a_500_and_kept() -> None:
    def broken(body: dict) -> str:
        raise KeyError("oops")

    async with FakeOpenAI(responder=broken) as server, sdk(server) as client:
        with pytest.raises(openai.InternalServerError):
            await complete(client)
    assert isinstance(server.errors[0], KeyError)


async def test_reply_reasoning_is_sent_as_reasoning_content_only_when_given() -> None:
    def think(body: dict) -> Reply:
        text = body["messages"][-1]["content"]
        return Reply("42", reasoning="six sevens") if text == PROMPT else Reply(text)

    async with FakeOpenAI(responder=think) as server, sdk(server) as client:
        thought = (await complete(client)).choices[0].message
        _, _, raw = await post(server, {"model": "fake-model",
                                        "messages": [{"role": "user", "content": "hi"}]})
    assert (thought.content, thought.reasoning_content) == ("42", "six sevens")
    assert "reasoning_content" not in json.loads(raw)["choices"][0]["message"]


async def test_reasoning_counts_towards_completion_tokens() -> None:
    reply = Reply("42", reasoning="six sevens make")
    async with FakeOpenAI(responder=lambda body: reply) as server, sdk(server) as client:
        assert (await complete(client)).usage.completion_tokens == 4


# -- the legacy text completions route --------------------------------------------------------

async def test_text_completion_echoes_prompt() -> None:
    async with FakeOpenAI() as server, sdk(server) as client:
        result = await complete_text(client, max_tokens=16, temperature=0.0)
    choice = result.choices[0]
    assert (choice.index, choice.text, choice.finish_reason, choice.logprobs) == \
        (0, PROMPT, "stop", None)
    assert result.object == "text_completion" and result.model == "fake-model"
    assert (result.usage.prompt_tokens, result.usage.completion_tokens,
            result.usage.total_tokens) == (5, 5, 10)
    assert server.requests == [{**TEXT_BODY, "max_tokens": 16, "temperature": 0.0}]


@pytest.mark.parametrize("body", [{"model": "fake-model"}, {**TEXT_BODY, "prompt": ["a", "b"]},
                                  {**TEXT_BODY, "prompt": 7}, {**TEXT_BODY, "prompt": None}])
async def test_text_completion_needs_a_string_prompt(body: dict) -> None:
    async with FakeOpenAI() as server:
        status, _, raw = await post(server, body, path="completions")
    assert status == 400 and "`prompt`" in json.loads(raw)["error"]["message"]
    assert server.requests == []


async def test_text_completion_n_copies_count_in_usage() -> None:
    async with FakeOpenAI() as server, sdk(server) as client:
        result = await complete_text(client, n=3)
    assert [(c.index, c.text) for c in result.choices] == [(0, PROMPT), (1, PROMPT), (2, PROMPT)]
    assert result.usage.completion_tokens == 15


async def test_responder_gets_the_completions_body() -> None:
    async with FakeOpenAI(responder=lambda body: f"{body['model']}:{body['prompt']}") as server, \
            sdk(server) as client:
        assert (await complete_text(client, "hello")).choices[0].text == "fake-model:hello"


async def test_text_completion_drops_reasoning() -> None:
    reply = Reply("42", reasoning="six sevens")
    async with FakeOpenAI(responder=lambda body: reply) as server:
        _, _, raw = await post(server, TEXT_BODY, path="completions")
    answer = json.loads(raw)
    assert answer["choices"][0]["text"] == "42" and answer["usage"]["completion_tokens"] == 1
    assert "reasoning_content" not in answer["choices"][0]


# -- fault kinds ------------------------------------------------------------------------------

# What each fault kind looks like through the SDK, the same on both routes: an HTTP status,
# a kind of failure, or (answer, finish_reason, usage.completion_tokens).
FAULT_OUTCOMES: dict[str, object] = {
    "rate_limit": 429, "server_error": 500, "unauthorized": 401, "not_found": 404,
    "bad_request": 400, "quota": 429, "drop": "no response", "stall": "no response",
    "error_200": "no choices",
    "malformed_json": "not JSON", "empty_choices": "no choices",
    "slow": (PROMPT, "stop", 5), "length": ("What is six ", "length", 3),
    "null_content": (None, "stop", 0), "empty_content": ("", "stop", 5),
}


async def outcome(client: openai.AsyncOpenAI, route: str) -> object:
    """What one request on ``route`` came to, in the terms of ``FAULT_OUTCOMES``."""
    try:
        result = await (complete(client) if route == "chat" else complete_text(client))
    except openai.APIStatusError as exc:
        return exc.status_code
    except openai.APIConnectionError:
        return "no response"
    except ValueError:
        return "not JSON"
    if not result.choices:
        return "no choices"
    choice = result.choices[0]
    answer = choice.message.content if route == "chat" else choice.text
    return answer, choice.finish_reason, result.usage.completion_tokens


@pytest.mark.parametrize("kind", sorted(FAULT_KINDS))
async def test_every_fault_kind_looks_the_same_on_both_routes(kind: str) -> None:
    fault = Fault("slow", seconds=0.01) if kind == "slow" else Fault(kind)  # type: ignore[arg-type]
    async with one_fault(fault) as server, sdk(server, timeout=0.5) as client:
        outcomes = [await outcome(client, route) for route in ("chat", "completions")]
    assert outcomes == [FAULT_OUTCOMES[kind]] * 2
    assert server.stats.faults == {kind: 2}


async def test_empty_content_keeps_reasoning() -> None:
    reply = Reply("42", reasoning="six sevens")
    async with FakeOpenAI(responder=lambda body: reply,
                          faults=fail_first(1, "empty_content")) as server, \
            sdk(server) as client:
        message = (await complete(client)).choices[0].message
    assert (message.content, message.reasoning_content) == ("", "six sevens")


async def test_rate_limit_sends_retry_after_when_given() -> None:
    async with one_fault(Fault("rate_limit", retry_after=1.5)) as server:
        status, headers, body = await post(server)
    assert status == 429 and headers["Retry-After"] == "1.5"
    assert json.loads(body)["error"]["code"] == "rate_limit_exceeded"


async def test_rate_limit_without_retry_after_has_no_header() -> None:
    async with one_fault("rate_limit") as server, sdk(server) as client:
        with pytest.raises(openai.RateLimitError) as caught:
            await complete(client)
    assert "retry-after" not in caught.value.response.headers


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_server_error_uses_its_status(status: int) -> None:
    async with one_fault(Fault("server_error", status=status)) as server, sdk(server) as client:
        with pytest.raises(openai.InternalServerError) as caught:
            await complete(client)
    assert caught.value.status_code == status


@pytest.mark.parametrize(("kind", "error", "status"), [
    ("unauthorized", openai.AuthenticationError, 401),
    ("not_found", openai.NotFoundError, 404),
    ("bad_request", openai.BadRequestError, 400),
])
async def test_client_error_faults(kind: str, error: type, status: int) -> None:
    async with one_fault(kind) as server, sdk(server) as client:
        with pytest.raises(error) as caught:
            await complete(client)
    assert caught.value.status_code == status and caught.value.body["type"]


async def test_malformed_json_fails_to_parse_in_sdk() -> None:
    async with one_fault("malformed_json") as server, sdk(server) as client:
        with pytest.raises(ValueError):
            await complete(client)
    assert server.stats.by_status[200] == 1


async def test_empty_choices() -> None:
    async with one_fault("empty_choices") as server, sdk(server) as client:
        assert (await complete(client)).choices == []


async def test_length_truncates_content() -> None:
    async with one_fault("length") as server, sdk(server) as client:
        choice = (await complete(client)).choices[0]
    assert choice.finish_reason == "length"
    assert choice.message.content == "What is six "


async def test_null_content() -> None:
    async with one_fault("null_content") as server, sdk(server) as client:
        assert (await complete(client)).choices[0].message.content is None


async def test_drop_is_a_connection_error_in_sdk() -> None:
    # The SDK's aiohttp transport reports a dropped connection as APITimeoutError, a subclass
    # of APIConnectionError; the cause chain still shows the disconnect.
    async with one_fault("drop") as server, sdk(server) as client:
        with pytest.raises(openai.APIConnectionError) as caught:
            await complete(client)
    assert isinstance(caught.value.__cause__.__cause__, aiohttp.ServerDisconnectedError)


async def test_drop_closes_connection_without_response() -> None:
    async with one_fault("drop") as server:
        with pytest.raises(aiohttp.ServerDisconnectedError):
            await post(server)
    assert server.stats.faults["drop"] == 1 and not server.stats.by_status


async def test_slow_exceeds_client_timeout() -> None:
    async with one_fault(Fault("slow", seconds=30)) as server, sdk(server, timeout=0.2) as client:
        with pytest.raises(openai.APITimeoutError):
            await complete(client)


async def test_slow_still_answers() -> None:
    async with one_fault(Fault("slow", seconds=0.01)) as server, sdk(server) as client:
        assert (await complete(client)).choices[0].finish_reason == "stop"


@pytest.mark.parametrize("send_headers", [False, True])
async def test_stall_exceeds_client_timeout(send_headers: bool) -> None:
    fault = Fault("stall", send_headers=send_headers)
    async with one_fault(fault) as server, sdk(server, timeout=0.2) as client:
        with pytest.raises(openai.APITimeoutError):
            await complete(client)


def test_fault_rejects_unknown_kind_and_stray_status() -> None:
    with pytest.raises(ValueError):
        Fault("explode")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Fault("rate_limit", status=500)


# -- fault policies ---------------------------------------------------------------------------

async def test_fail_first_counts_attempts_per_request() -> None:
    other = [{"role": "user", "content": "another question"}]
    async with FakeOpenAI(faults=fail_first(2, Fault("server_error", status=503))) as server, \
            sdk(server) as client:
        for _ in range(2):
            with pytest.raises(openai.InternalServerError):
                await complete(client)
        assert (await complete(client)).choices[0].message.content == USER[0]["content"]
        with pytest.raises(openai.InternalServerError):
            await complete(client, other)  # a different request starts at attempt 0
    assert server.attempts({"model": "fake-model", "messages": USER}) == 3


def test_request_key_depends_on_model_and_messages_only() -> None:
    base = {"model": "m", "messages": USER}
    assert request_key(base) == request_key({**base, "temperature": 0.7})
    assert request_key(base) != request_key({**base, "model": "other"})


def test_request_key_of_a_completions_body_depends_on_its_prompt() -> None:
    assert request_key(TEXT_BODY) == request_key({**TEXT_BODY, "max_tokens": 5})
    assert request_key(TEXT_BODY) != request_key({**TEXT_BODY, "prompt": "other"})


async def test_fail_first_counts_completions_attempts() -> None:
    async with FakeOpenAI(faults=fail_first(1)) as server, sdk(server) as client:
        with pytest.raises(openai.InternalServerError):
            await complete_text(client)
        assert (await complete_text(client)).choices[0].text == PROMPT
    assert server.attempts(TEXT_BODY) == 2


def test_fault_rate_draws_empty_content() -> None:
    policy = fault_rate(1.0, kinds=["empty_content"])
    assert policy(TEXT_BODY, 0) == Fault("empty_content")


def test_fault_rate_is_deterministic() -> None:
    bodies = [{"model": "m", "messages": [{"role": "user", "content": str(i)}]}
              for i in range(400)]

    def draws(seed: int) -> list[str | None]:
        policy = fault_rate(0.3, seed=seed)
        return [f.kind if (f := policy(body, 0)) else None for body in bodies]

    first = draws(seed=1)
    assert first == draws(seed=1) and first != draws(seed=2)
    assert 0.2 < sum(kind is not None for kind in first) / len(first) < 0.4
    assert {"rate_limit", "server_error"} <= set(first)


def test_fault_rate_never_exceeds_max_consecutive() -> None:
    policy = fault_rate(1.0, kinds=["server_error"], max_consecutive=2)
    body = {"model": "m", "messages": USER}
    assert [policy(body, attempt) is not None for attempt in range(4)] == [True, True, False, False]


# -- models, keys, logprobs, rate limits ------------------------------------------------------

async def test_completions_route_requires_api_key() -> None:
    async with FakeOpenAI(api_key="secret") as server, sdk(server, api_key="wrong") as client:
        with pytest.raises(openai.AuthenticationError):
            await complete_text(client)


async def test_completions_route_rejects_unknown_model_when_strict() -> None:
    async with FakeOpenAI(strict_models=True) as server, sdk(server) as client:
        with pytest.raises(openai.NotFoundError) as caught:
            await client.completions.create(model="gpt-x", prompt=PROMPT)
    assert caught.value.body["code"] == "model_not_found"


async def test_rpm_limit_window_is_shared_by_both_routes() -> None:
    async with FakeOpenAI(rpm_limit=2) as server, sdk(server) as client:
        await complete(client)
        await complete_text(client)
        with pytest.raises(openai.RateLimitError):
            await complete(client)
    assert server.stats.rpm_limited == 1


async def test_strict_models_rejects_unknown_model() -> None:
    async with FakeOpenAI(strict_models=True) as server, sdk(server) as client:
        with pytest.raises(openai.NotFoundError) as caught:
            await client.chat.completions.create(model="gpt-x", messages=USER)
        assert (await complete(client)).choices
    assert caught.value.body == {"message": "The model `gpt-x` does not exist",
                                 "type": "invalid_request_error", "param": None,
                                 "code": "model_not_found"}


@pytest.mark.parametrize("key", ["wrong", None])
async def test_api_key_required(key: str | None) -> None:
    async with FakeOpenAI(api_key="secret") as server:
        headers = {"Authorization": f"Bearer {key}"} if key else None
        status, _, body = await post(server, headers=headers)
        async with sdk(server, api_key="secret") as client:
            assert (await complete(client)).choices
    assert status == 401 and json.loads(body)["error"]["code"] == "invalid_api_key"


async def test_logprobs_default_shape() -> None:
    async with FakeOpenAI() as server, sdk(server) as client:
        result = await complete(client, logprobs=True, top_logprobs=2)
    entries = result.choices[0].logprobs.content
    assert [e.token for e in entries] == ["What", "is", "six", "times", "seven?"]
    assert all(e.logprob == 0.0 and [t.token for t in e.top_logprobs] == [e.token]
               for e in entries)


async def test_logprobs_from_reply_with_alternatives() -> None:
    reply = Reply("A", logprobs=[("A", -0.1, [("A", -0.1), ("B", -2.3), ("C", -5.0)])])
    async with FakeOpenAI(responder=lambda body: reply) as server, sdk(server) as client:
        result = await complete(client, logprobs=True, top_logprobs=2)
        plain = await complete(client)
    entry = result.choices[0].logprobs.content[0]
    assert (entry.token, entry.logprob) == ("A", -0.1)
    assert [(t.token, t.logprob) for t in entry.top_logprobs] == [("A", -0.1), ("B", -2.3)]
    assert plain.choices[0].logprobs is None


async def test_rpm_limit_answers_429_with_retry_after() -> None:
    async with FakeOpenAI(rpm_limit=2, window=0.2) as server:
        statuses = [(await post(server))[0] for _ in range(3)]
        status, headers, _ = await post(server)
        assert statuses == [200, 200, 429] and status == 429
        # Retry-After is honest: waiting that long makes room in the window again.
        await asyncio.sleep(float(headers["Retry-After"]))
        assert (await post(server))[0] == 200
    assert server.stats.rpm_limited == 2 and server.stats.by_status == {200: 3, 429: 2}


# -- stats and lifecycle ------------------------------------------------------------------------

async def test_stats_count_both_routes_in_total_and_by_route() -> None:
    async with FakeOpenAI() as server, sdk(server) as client:
        await complete(client)
        await complete_text(client)
        await complete_text(client)
    stats = server.stats
    assert stats.total == 3 and stats.by_route == {"chat": 1, "completions": 2}
    assert stats.as_dict()["by_route"] == {"chat": 1, "completions": 2}


async def test_stats_count_in_flight_statuses_and_faults() -> None:
    arrived, release = asyncio.Event(), asyncio.Event()
    waiting = 0

    async def gate(body: dict) -> str:
        nonlocal waiting
        waiting += 1
        if waiting == 3:
            arrived.set()
        await release.wait()
        return "ok"

    async with FakeOpenAI(responder=gate, faults=fail_first(1, "rate_limit")) as server, \
            sdk(server) as client:
        with pytest.raises(openai.RateLimitError):
            await complete(client)
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(complete, client)
            await arrived.wait()
            assert server.stats.in_flight == 3
            release.set()
    stats = server.stats
    assert (stats.total, stats.in_flight, stats.max_in_flight) == (4, 0, 3)
    assert stats.by_status == {429: 1, 200: 3} and stats.faults == {"rate_limit": 1}
    assert json.loads(json.dumps(stats.as_dict()))["by_status"] == {"200": 3, "429": 1}


async def test_wait_idle_returns_only_once_the_last_request_ended() -> None:
    arrived, release = asyncio.Event(), asyncio.Event()

    async def gate(body: dict) -> str:
        arrived.set()
        await release.wait()
        return "ok"

    async with FakeOpenAI(responder=gate) as server, sdk(server) as client:
        await server.wait_idle()  # nothing sent yet: idle at once
        async with anyio.create_task_group() as tg:
            tg.start_soon(complete, client)
            await arrived.wait()
            idle = asyncio.create_task(server.wait_idle())
            for _ in range(10):  # let the waiter run: it must still be waiting
                await asyncio.sleep(0)
            assert not idle.done()
            release.set()
            with anyio.fail_after(5):
                await idle
            assert server.stats.in_flight == 0


async def test_shutdown_cuts_off_stalled_request() -> None:
    seen = asyncio.Event()

    def stall_and_signal(body: dict, attempt: int) -> Fault:
        seen.set()
        return Fault("stall")

    with anyio.fail_after(5):
        async with FakeOpenAI(faults=stall_and_signal) as server, sdk(server, timeout=60) as client:
            task = asyncio.create_task(complete(client))
            await seen.wait()
            await server.stop()
            with pytest.raises(openai.APIConnectionError):
                await task
    assert server.stats.in_flight == 0


async def test_cli_serves_until_sigterm_and_prints_stats() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "harness.testing.fake_openai", "--port", "0", "--reply", "42",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        with anyio.fail_after(8):
            banner = (await process.stderr.readline()).decode()
            server_url = banner.split()[-1]
            async with aiohttp.ClientSession() as session:
                async with session.post(f"{server_url}/chat/completions",
                                        json={"model": "fake-model", "messages": USER}) as resp:
                    answer = await resp.json()
                async with session.post(f"{server_url}/completions", json=TEXT_BODY) as resp:
                    text_answer = await resp.json()
            process.terminate()
            stdout, _ = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert answer["choices"][0]["message"]["content"] == "42"
    assert text_answer["choices"][0]["text"] == "42"
    assert json.loads(stdout)["by_status"] == {"200": 2}


async def test_scorer_true_means_the_default_scorer_and_false_none() -> None:
    body = {"model": "fake-model", "prompt": "The capital of France is Paris", "echo": True,
            "logprobs": 1, "max_tokens": 1}
    replies = {}
    for scorer in (None, True, False):
        async with FakeOpenAI(scorer=scorer) as server, aiohttp.ClientSession() as session:
            async with session.post(server.base_url + "/completions", json=body) as resp:
                choice = (await resp.json())["choices"][0]
                replies[scorer] = (resp.status, choice.get("logprobs"))
    assert replies[None][0] == 200 and replies[None][1]
    assert replies[True] == replies[None]
    assert replies[False] == (200, None)
