"""A broken endpoint stops the run in seconds, with its cause; a transient storm does not.

The circuit breaker of an endpoint (model or judge) opens after a run of failed attempts
with no success that lasts long enough; the run then stops (exit 3) with one message
naming the endpoint and the cause. 429s and short outages never open it.
"""

from __future__ import annotations

import json
import socket
import time

import anyio
import pytest

import harness
from harness.breaker import BreakerPolicy
from harness.errors import EndpointDownError
from harness.testing import FakeOpenAI, Fault, fail_for

from .helpers import (
    JUDGE_MODEL,
    arith_reply,
    count_stored,
    expected_cascade,
    expected_correct,
    model_and_judge,
    model_cfg,
    write_arith,
    write_config,
    write_judge_config,
)
from .test_cli import cli, env

QUICK = BreakerPolicy(failures=5, seconds=0.5)


def dead_port() -> int:
    """A port on 127.0.0.1 where nothing listens (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def always(fault):
    return lambda body, attempt: fault


@pytest.mark.timeout(90)
async def test_a_dead_endpoint_stops_the_run_in_seconds_naming_it_and_the_cause(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 3000)
    cfg = write_config(tmp_path / "cfg.py", data)
    url = f"http://127.0.0.1:{dead_port()}/v1"
    started = time.monotonic()
    result = await anyio.run_process(
        cli("run", str(cfg), "-w", str(tmp_path / "w"), "-q", "--model-base-url", url,
            "--model", "fake-model"), env=env(), check=False)
    elapsed = time.monotonic() - started
    err = result.stderr.decode()
    assert result.returncode == 3, err
    assert err.count("error:") == 1
    assert f"model 'fake-model' at {url} is down" in err and "connection refused" in err
    assert not (tmp_path / "w" / "results").exists()
    print(f"stopped after {elapsed:.1f} s")  # the default breaker: about 10 s


async def test_an_endpoint_answering_500_stops_with_the_status_and_the_body(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 3000)
    async with FakeOpenAI(responder=arith_reply,
                          faults=always(Fault("server_error", status=500))) as srv:
        url = srv.base_url
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(url)])
        with pytest.raises(EndpointDownError) as caught:
            await harness.evaluate(cfg, work_dir=tmp_path / "w", breaker=QUICK)
    assert caught.value.cause.startswith("HTTP 500: ")
    assert url in str(caught.value)
    # It stopped sending: a small share of the 18,000 attempts 3,000 samples could cost.
    assert srv.stats.total < 1000


async def test_a_dead_judge_stops_the_run_naming_the_judge(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 200)
    judge_down = lambda body, attempt: (  # noqa: E731
        Fault("server_error", status=503) if body["model"] == JUDGE_MODEL else None)
    async with FakeOpenAI(responder=model_and_judge, faults=judge_down,
                          models=("fake-model", JUDGE_MODEL)) as srv:
        cfg = write_judge_config(tmp_path / "cfg.py", data, srv.base_url)
        with pytest.raises(EndpointDownError, match=f"judge '{JUDGE_MODEL}' at "):
            await harness.evaluate(cfg, work_dir=tmp_path / "w", breaker=QUICK)
    # Model answers received before the stop are stored, for the rerun to reuse.
    assert count_stored(tmp_path / "w" / "harness.db", "predictions") > 0


async def test_a_429_storm_longer_than_the_breaker_window_does_not_trip_it(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 40)
    storm = fail_for(2.0, Fault("rate_limit", retry_after=0.2))
    async with FakeOpenAI(responder=arith_reply, faults=storm) as srv:
        cfg = write_config(tmp_path / "cfg.py", data,
                           models=[model_cfg(srv.base_url, max_attempts=30)])
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w", breaker=QUICK)
    assert srv.stats.faults["rate_limit"] > QUICK.failures
    assert report.complete and report.result("arith")["correct"] == expected_correct(40)


async def test_a_short_outage_does_not_trip_it(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 40)
    async with FakeOpenAI(responder=arith_reply, faults=fail_for(0.3)) as srv:
        cfg = write_config(tmp_path / "cfg.py", data,
                           models=[model_cfg(srv.base_url, max_attempts=10)])
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w",
                                        breaker=BreakerPolicy(failures=5, seconds=1.0))
    assert srv.stats.faults["server_error"] > 5
    assert report.complete and report.result("arith")["correct"] == expected_correct(40)


async def test_the_end_of_a_run_counts_failures_by_cause(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 8)
    judge_limited = lambda body, attempt: (  # noqa: E731
        Fault("rate_limit", retry_after=0.01) if body["model"] == JUDGE_MODEL
        else Fault("server_error", status=502) if "What is 0 + " in str(body) else None)
    async with FakeOpenAI(responder=model_and_judge, faults=judge_limited,
                          models=("fake-model", JUDGE_MODEL)) as srv:
        cfg = write_judge_config(tmp_path / "cfg.py", data, srv.base_url,
                                 judge={"max_attempts": 2, "rate_limit_timeout": 0.2})
        result = await anyio.run_process(
            cli("run", str(cfg), "-w", str(tmp_path / "w"), "-q", "--max-attempts", "2"),
            env=env(), check=False)
    err = result.stderr.decode()
    assert result.returncode == 1
    pending = expected_cascade(8)["rule_failures"]
    assert (f"judge_error: {pending} × HTTP 429: Rate limit reached for requests. (still "
            "rate limited at the end of its rate_limit_timeout)") in err
    assert "model_error: 1 × HTTP 502: " in err and "after 2 attempts" in err
    summary = json.loads((tmp_path / "w" / "results" / "fake" / "arith.json").read_text())
    assert {(c["status"], c["count"]) for c in summary["pending_causes"]} == {
        ("judge_error", pending), ("model_error", 1)}


async def test_requests_that_fail_on_their_own_do_not_open_it(tmp_path):
    """A few prompts the server always fails on (left alone at the end of the run) are
    failed samples, not a dead endpoint: the probe finds the endpoint answering."""
    data = write_arith(tmp_path / "a.jsonl", 40)
    poison = lambda body, attempt: (  # noqa: E731
        Fault("server_error") if any(f"What is {a} + " in str(body) for a in (2, 5))
        else None)
    async with FakeOpenAI(responder=arith_reply, faults=poison) as srv:
        cfg = write_config(tmp_path / "cfg.py", data,
                           models=[model_cfg(srv.base_url, max_attempts=8)])
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w", breaker=QUICK)
    result = report.result("arith")
    assert result["pending_counts"] == {"model_error": 2}
    assert result["correct"] == expected_correct(40) - 2  # both would have been right


async def test_an_endpoint_that_dies_during_the_run_opens_it(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 400)
    answered = 0

    def dies(body, attempt):
        nonlocal answered
        answered += 1
        return Fault("server_error", status=500) if answered > 20 else None

    async with FakeOpenAI(responder=arith_reply, faults=dies) as srv:
        cfg = write_config(tmp_path / "cfg.py", data,
                           models=[model_cfg(srv.base_url, max_attempts=8)])
        with pytest.raises(EndpointDownError, match="HTTP 500"):
            await harness.evaluate(cfg, work_dir=tmp_path / "w", breaker=QUICK, concurrency=4)


@pytest.mark.parametrize("kind", ["empty_choices", "null_content", "error_200"])
@pytest.mark.parametrize("answered_first", [0, 20])
async def test_an_endpoint_answering_200_with_nothing_usable_opens_it(tmp_path, kind,
                                                                        answered_first):
    """A 200 that harness cannot score (no choices, no content, an error object) is no
    answer: the breaker's probe must not take it for one, from the start or after the
    endpoint answered a while."""
    data = write_arith(tmp_path / "a.jsonl", 3000)
    seen = 0

    def broken(body, attempt):
        nonlocal seen
        seen += 1
        return Fault(kind) if seen > answered_first else None

    async with FakeOpenAI(responder=arith_reply, faults=broken, record=False) as srv:
        url = srv.base_url
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(url)])
        with pytest.raises(EndpointDownError) as caught:
            await harness.evaluate(cfg, work_dir=tmp_path / "w", breaker=QUICK)
    assert url in str(caught.value)
    assert caught.value.cause in ("the response has no choices",
                                  "the response message has no content",
                                  "an error with status 200: The server had an error "
                                  "while processing your request.")
    assert srv.stats.total < 1000


async def test_429s_among_the_failures_do_not_reset_the_count(tmp_path):
    """A dead backend behind a gateway whose rate limiter answers some requests 429: a
    429 is no answer, so the 503s still add up and open it."""
    data = write_arith(tmp_path / "a.jsonl", 3000)
    seen = 0

    def dead_behind_gateway(body, attempt):
        nonlocal seen
        seen += 1
        return (Fault("rate_limit", retry_after=0.05) if seen % 3 == 0
                else Fault("server_error", status=503))

    async with FakeOpenAI(responder=arith_reply, faults=dead_behind_gateway,
                          record=False) as srv:
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(srv.base_url)])
        with pytest.raises(EndpointDownError) as caught:
            await harness.evaluate(cfg, work_dir=tmp_path / "w", breaker=QUICK)
    assert caught.value.cause.startswith("HTTP 503: ")
    assert srv.stats.total < 1000


async def test_an_endpoint_answering_only_429s_opens_it_after_its_window(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 200)
    async with FakeOpenAI(responder=arith_reply, faults=always(Fault("rate_limit")),
                          record=False) as srv:
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(srv.base_url)])
        with pytest.raises(EndpointDownError, match=r"answered nothing but 429 \(rate "
                           r"limited\) for \d+ s \(last: HTTP 429: Rate limit reached"):
            await harness.evaluate(cfg, work_dir=tmp_path / "w",
                                   breaker=BreakerPolicy(rate_limited_seconds=1.0))


async def test_an_exhausted_quota_stops_the_run_at_once(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 3000)
    async with FakeOpenAI(responder=arith_reply, faults=always(Fault("quota")),
                          record=False) as srv:
        url = srv.base_url
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(url)])
        result = await anyio.run_process(
            cli("run", str(cfg), "-w", str(tmp_path / "w"), "-q"), env=env(), check=False)
    err = result.stderr.decode()
    assert result.returncode == 3, err
    assert (f"model 'fake-model' at {url} refuses every request: HTTP 429: You "
            "exceeded your current quota") in err and "quota is used up" in err
    assert srv.stats.total < 200  # not one request per sample


async def test_prompts_that_fail_before_any_answer_are_failed_samples(tmp_path):
    """The first prompts of a run fail (the server 500s on them) at concurrency 1, so
    there is no answered request to probe with: failures of a few distinct prompts are
    not a dead endpoint. The rest is scored, and a rerun (only those prompts left) ends
    the same way."""
    data = write_arith(tmp_path / "a.jsonl", 40)
    poison = lambda body, attempt: (  # noqa: E731
        Fault("server_error") if any(f"What is {a} + " in str(body) for a in range(3))
        else None)
    async with FakeOpenAI(responder=arith_reply, faults=poison) as srv:
        cfg = write_config(tmp_path / "cfg.py", data,
                           models=[model_cfg(srv.base_url, max_attempts=4)])
        for _ in range(2):
            report = await harness.evaluate(cfg, work_dir=tmp_path / "w", breaker=QUICK,
                                            concurrency=1)
            result = report.result("arith")
            assert result["pending_counts"] == {"model_error": 3}
            assert result["correct"] == expected_correct(40) - 3  # all three were right


async def test_a_dead_endpoint_at_concurrency_1_still_opens_it(tmp_path):
    """Without an answered request to probe with, failures that span enough distinct
    requests open it (here: QUICK.requests samples, one after another)."""
    data = write_arith(tmp_path / "a.jsonl", 40)
    async with FakeOpenAI(responder=arith_reply,
                          faults=always(Fault("server_error", status=500))) as srv:
        cfg = write_config(tmp_path / "cfg.py", data,
                           models=[model_cfg(srv.base_url, max_attempts=2)])
        with pytest.raises(EndpointDownError, match="HTTP 500"):
            await harness.evaluate(cfg, work_dir=tmp_path / "w", breaker=QUICK, concurrency=1)
    assert srv.stats.total < 40 * 2  # stopped before every sample spent its attempts


async def test_an_overloaded_endpoint_is_named_as_such(tmp_path):
    """Every attempt timing out may mean an endpoint too busy to answer in time, not a
    dead one: the message says so, and what to change."""
    data = write_arith(tmp_path / "a.jsonl", 200)
    async with FakeOpenAI(responder=arith_reply, latency=5.0) as srv:
        cfg = write_config(tmp_path / "cfg.py", data,
                           models=[model_cfg(srv.base_url, timeout=0.2)])
        with pytest.raises(EndpointDownError) as caught:
            await harness.evaluate(cfg, work_dir=tmp_path / "w", breaker=QUICK)
    assert caught.value.cause == "timed out"
    assert "may be overloaded rather than down: try a longer --timeout" in str(caught.value)
    assert "a lower -c" in str(caught.value)


async def test_the_end_of_a_run_says_what_to_try_when_calls_time_out(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 8)
    slow_first = lambda body, attempt: (  # noqa: E731
        Fault("slow", seconds=5) if "What is 0 + " in str(body) else None)
    async with FakeOpenAI(responder=arith_reply, faults=slow_first) as srv:
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(srv.base_url)])
        result = await anyio.run_process(
            cli("run", str(cfg), "-w", str(tmp_path / "w"), "-q", "--timeout", "0.3",
                "--max-attempts", "2"), env=env(), check=False)
    err = result.stderr.decode()
    assert result.returncode == 1, err
    assert "model_error: 1 × timed out after 2 attempts" in err
    assert "may be overloaded rather than down: try a longer --timeout or a lower -c" in err


async def test_a_dead_endpoint_without_a_model_name_exits_3_naming_it(tmp_path):
    """Discovering the model name (``/v1/models``) from a dead endpoint is the first call
    that fails: the message is the breaker's, not advice to give --model."""
    data = write_arith(tmp_path / "a.jsonl", 50)
    cfg = write_config(tmp_path / "cfg.py", data)
    url = f"http://127.0.0.1:{dead_port()}/v1"
    result = await anyio.run_process(
        cli("run", str(cfg), "-w", str(tmp_path / "w"), "-q", "--model-base-url", url),
        env=env(), check=False)
    err = result.stderr.decode()
    assert result.returncode == 3, err
    assert f"model endpoint {url} is down" in err and "connection refused" in err
    assert "give the model name" not in err


async def test_failures_group_by_cause_whatever_their_request_ids(tmp_path):
    """Gateways put a request id in every error text; the causes counted at the end of
    the run read it as '…', so one cause is one line."""
    import re
    import uuid

    data = write_arith(tmp_path / "a.jsonl", 20)

    def upstream(body):
        if int(re.search(r"What is (\d+)", str(body)).group(1)) % 2:
            raise RuntimeError(f"upstream error (request id req_{uuid.uuid4().hex[:12]}, "
                               f"{uuid.uuid4()})")
        return arith_reply(body)

    async with FakeOpenAI(responder=upstream, record=False) as srv:
        cfg = write_config(tmp_path / "cfg.py", data,
                           models=[model_cfg(srv.base_url, max_attempts=2)])
        result = await anyio.run_process(
            cli("run", str(cfg), "-w", str(tmp_path / "w"), "-q"), env=env(), check=False)
    err = result.stderr.decode()
    assert result.returncode == 1, err
    assert ("model_error: 10 × HTTP 500: FakeOpenAI responder raised RuntimeError('upstream "
            "error (request id req_…, …)') after 2 attempts") in err

