"""Cancelling a run (a cancel scope around ``evaluate``, Ctrl-C): every reply and
verdict already received is stored, so a resumed run pays for none of them again, and
the run ends as a cancellation whatever its stages were doing."""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

import anyio
import pytest

import harness
from harness import pipeline
from harness.client import ModelClient
from harness.errors import StoreError
from harness.interrupt import run_until_signal
from harness.store import Store
from harness.testing import FakeOpenAI

from .helpers import (
    arith_reply,
    count_stored,
    expected_correct,
    fake_judge,
    model_and_judge,
    model_cfg,
    write_arith,
    write_config,
    write_judge_config,
)

#: Samples per run, each asked at once (the run's, and the judge's, concurrency): when
#: the last reply arrives no request is in flight, so every request the server answered
#: is a reply harness received.
N = 8


class CancelOnLastReply:
    """Cancels ``scope`` as the ``N``-th model or judge reply reaches harness, while the
    store writer's first commit waits for that moment (a stuck disk) and its stream holds
    one item: the replies received meanwhile wait in their senders when the cancel comes.

    ``late``: the last reply reaches its send only once the cancelled writer has
    committed again (as a task woken by its reply in the same loop turn as the cancel
    may run after the writer). ``cancel=False`` only lets the writer go on at that
    moment; ``full_disk`` fails its commits.
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, late: bool = False,
                 cancel: bool = True, full_disk: bool = False) -> None:
        self.scope = anyio.CancelScope()
        released, committed_again = anyio.Event(), anyio.Event()
        replies = commits = 0
        monkeypatch.setattr(pipeline, "STORE_BUFFER", 1)
        monkeypatch.setattr(pipeline, "STORE_BUFFER_PER_CALLER", 0)
        write, complete = Store.write_completions, ModelClient.complete

        async def held_write(store: Store, batch: Any) -> None:
            nonlocal commits
            await released.wait()
            if full_disk:
                raise StoreError("writing results failed: database or disk is full")
            await write(store, batch)
            commits += 1
            if commits == 2:
                committed_again.set()

        async def counted_complete(client: ModelClient, *args: Any, **kwargs: Any) -> Any:
            nonlocal replies
            reply = await complete(client, *args, **kwargs)
            replies += 1
            if replies == N:
                if cancel:
                    self.scope.cancel()
                released.set()
                if late:
                    with anyio.CancelScope(shield=True):
                        await committed_again.wait()
            return reply

        monkeypatch.setattr(Store, "write_completions", held_write)
        monkeypatch.setattr(ModelClient, "complete", counted_complete)


@pytest.mark.parametrize("late", [False, True], ids=["queued", "late"])
async def test_a_cancelled_run_stores_every_reply_it_received(tmp_path, monkeypatch, late):
    data = write_arith(tmp_path / "a.jsonl", N)
    work = tmp_path / "w"
    async with FakeOpenAI(responder=arith_reply) as srv:
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(srv.base_url)])
        stop = CancelOnLastReply(monkeypatch, late=late)
        with anyio.fail_after(30), stop.scope:
            await harness.evaluate(cfg, work_dir=work, concurrency=N)
        assert stop.scope.cancelled_caught
        assert srv.stats.total == N
        assert count_stored(work / "harness.db") == N
        monkeypatch.undo()
        report = await harness.evaluate(cfg, work_dir=work, concurrency=N)
        assert srv.stats.total == N  # the resumed run asked for nothing again
    assert report.result("arith")["correct"] == expected_correct(N)


async def test_a_cancelled_run_stores_every_verdict_it_received(tmp_path, monkeypatch):
    data = write_arith(tmp_path / "a.jsonl", N)
    work = tmp_path / "w"
    async with FakeOpenAI(responder=arith_reply) as model, \
            FakeOpenAI(responder=fake_judge, models=("judge-model",)) as judge:
        cfg = write_judge_config(tmp_path / "cfg.py", data, model.base_url, mode="judge",
                                 judge={"concurrency": N}, judge_url=judge.base_url)
        await harness.evaluate(cfg, work_dir=work, mode="infer")
        # Only the judge is asked now: the writer waits on the verdicts alone.
        stop = CancelOnLastReply(monkeypatch)
        with anyio.fail_after(30), stop.scope:
            await harness.evaluate(cfg, work_dir=work, concurrency=N)
        assert stop.scope.cancelled_caught
        assert judge.stats.total == N
        assert count_stored(work / "harness.db", "verdicts") == N
        monkeypatch.undo()
        report = await harness.evaluate(cfg, work_dir=work, concurrency=N)
        assert (model.stats.total, judge.stats.total) == (N, N)
    assert report.result("arith")["complete"]


@pytest.mark.parametrize("cancel", [True, False], ids=["cancelled", "running"])
async def test_a_failing_store_writer_stops_the_run_with_replies_waiting_for_it(
        tmp_path, monkeypatch, cancel):
    """Senders waiting (shielded) for a writer that fails are let go: the run ends with
    the writer's error, never waits for a stream no one reads."""
    data = write_arith(tmp_path / "a.jsonl", N)
    async with FakeOpenAI(responder=arith_reply) as srv:
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(srv.base_url)])
        stop = CancelOnLastReply(monkeypatch, cancel=cancel, full_disk=True)
        with anyio.fail_after(30), stop.scope, pytest.raises(StoreError, match="disk is full"):
            await harness.evaluate(cfg, work_dir=tmp_path / "w", concurrency=N)


def reply_after_the_judge_stopped(monkeypatch: pytest.MonkeyPatch,
                                  stop: Callable[[], None]) -> None:
    """At the model's reply to a sample the rules get wrong (one for the judge), call
    ``stop`` (the run's cancellation), and hand the reply over only once the judge's
    lookup stage has stopped: as a task resumed by its reply in the loop turn that
    cancelled the run runs on, with no checkpoint, to a stream whose reader is gone."""
    judge_stopped = anyio.Event()
    lookup, complete = pipeline.judge_lookup, ModelClient.complete

    async def watched_lookup(*args: Any) -> None:
        try:
            await lookup(*args)
        finally:
            judge_stopped.set()

    async def held_complete(client: ModelClient, messages: Any, *args: Any) -> Any:
        reply = await complete(client, messages, *args)
        if messages[-1]["content"] == "What is 3 + 4?":  # 8: wrong, so judged
            stop()
            with anyio.CancelScope(shield=True):
                await judge_stopped.wait()
        return reply

    monkeypatch.setattr(pipeline, "judge_lookup", watched_lookup)
    monkeypatch.setattr(ModelClient, "complete", held_complete)


@pytest.fixture
async def cascade(tmp_path):
    """A cascade config of four samples, two of them for the judge, and its server."""
    data = write_arith(tmp_path / "a.jsonl", 4)
    async with FakeOpenAI(responder=model_and_judge) as srv:
        yield write_judge_config(tmp_path / "cfg.py", data, srv.base_url)


async def test_a_cancelled_cascade_ends_as_a_cancellation(cascade, tmp_path, monkeypatch):
    scope = anyio.CancelScope()
    reply_after_the_judge_stopped(monkeypatch, scope.cancel)
    with anyio.fail_after(30), scope:
        await harness.evaluate(cascade, work_dir=tmp_path / "w", concurrency=4)
    assert scope.cancelled_caught


async def test_ctrl_c_ends_a_cascade_as_an_interrupt(cascade, tmp_path, monkeypatch):
    """The ``KeyboardInterrupt`` the command line turns into exit code 130 and the
    resume hint."""
    reply_after_the_judge_stopped(monkeypatch, lambda: signal.raise_signal(signal.SIGINT))
    with anyio.fail_after(30), pytest.raises(KeyboardInterrupt):
        await run_until_signal(lambda: harness.evaluate(cascade, work_dir=tmp_path / "w",
                                                        concurrency=4), grace=60)
