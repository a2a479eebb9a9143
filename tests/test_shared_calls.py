"""Samples that share a request share one call (``harness.stages.calls``), here without
a pipeline around them, so each interleaving is exact."""

from __future__ import annotations

import anyio

from harness.records import Completion, Sample, VerdictRecord
from harness.stages.calls import Calls


class EmptyStore:
    """A store that holds nothing yet (every lookup misses)."""

    async def lookup_predictions(self, keys):
        return {}

    async def lookup_verdicts(self, keys):
        return {}


def failed(key: str) -> Completion:
    sample = Sample("d", "m", 0, 0, {}, None, (), key, {}, "chat")
    return Completion(sample, "error", error="HTTP 500")


async def test_a_second_sample_waits_for_the_first_call_and_takes_its_reply():
    calls = Calls(EmptyStore()).predictions
    assert calls.claim("K")
    got = []

    async def second():
        assert not calls.claim("K")
        got.append(await calls.reuse("K"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(second)
        await anyio.wait_all_tasks_blocked()  # the second waits on the call in flight
        assert got == []
        calls.finish("K", ("18", "stop", None))
    assert got == [("18", "stop", None)]


async def test_a_failed_rows_commit_keeps_the_retrys_reply_in_memory():
    """S1's call fails, S2 asks again and is answered; the writer then commits S1's error
    row before S2's reply: S3 still takes S2's reply rather than asking a third time."""
    run = Calls(EmptyStore())
    calls = run.predictions
    assert calls.claim("K")
    calls.finish("K", None)  # S1 failed
    assert not calls.claim("K") and await calls.reuse("K") is None  # S2 asks
    calls.finish("K", ("18", "stop", None))
    run.committed([failed("K")])
    assert not calls.claim("K")
    assert await calls.reuse("K") == ("18", "stop", None)
    # Once its own row is committed the reply is read from the store instead.
    sample = failed("K").sample
    run.committed([Completion(sample, "ok", "18", "stop")])
    assert await calls.reuse("K") is None  # the empty store: asked again


async def test_an_error_verdict_is_not_shared_and_its_commit_keeps_a_final_one():
    run = Calls(EmptyStore())
    verdicts = run.verdicts
    final = VerdictRecord("V", "j", "m", "d", 0, 0, "ok", "A", "A")
    assert verdicts.claim("V")
    verdicts.finish("V", None)  # the judge call failed
    assert not verdicts.claim("V") and await verdicts.reuse("V") is None
    verdicts.finish("V", final)
    run.committed([VerdictRecord("V", "j", "m", "d", 0, 0, "error", None, None)])
    assert await verdicts.reuse("V") == final


async def test_a_refused_unparsed_verdict_is_asked_again_and_its_commit_keeps_the_answer():
    """S1 (no re-asks) gets an unparsed verdict; S2, allowed re-asks, refuses it, asks
    and is answered; the writer then commits S1's row before S2's: S3, allowed re-asks
    too, takes S2's answer rather than asking a third time."""
    run = Calls(EmptyStore())
    verdicts = run.verdicts
    unparsed = VerdictRecord("V", "j", "m", "d", 0, 0, "unparsed", None, "Looks fine.")
    answer = VerdictRecord("V", "j", "m", "d", 0, 0, "ok", "A", "A", reasks=1)

    def allows_two(verdict: VerdictRecord) -> bool:
        return verdict.status != "unparsed" or verdict.reasks >= 2

    assert verdicts.claim("V")
    verdicts.finish("V", unparsed)
    assert not verdicts.claim("V") and await verdicts.reuse("V", allows_two) is None
    verdicts.finish("V", answer)
    run.committed([unparsed])
    assert await verdicts.reuse("V", allows_two) == answer
