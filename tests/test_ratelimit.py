"""RateLimiter on virtual time: slot spacing, windows, pauses, settling, concurrency, cancel.

No test measures wall time. ``AutoTime`` is a clock whose ``sleep`` jumps straight to the
wake-up time; ``ManualTime`` blocks sleepers until the test moves the clock, so a test can
hold waiters mid-sleep and cancel or pause them.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import anyio
import pytest

from harness.ratelimit import RateLimiter


class AutoTime:
    """Virtual clock; ``sleep(s)`` advances it by ``s`` at once, then yields."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await anyio.lowlevel.checkpoint()

    def limiter(self, rpm: float | None = None, tpm: float | None = None) -> RateLimiter:
        return RateLimiter(rpm, tpm, clock=self.clock, sleep=self.sleep)


class ManualTime:
    """Virtual clock; sleepers wait until ``advance_to`` passes their wake-up time."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleepers: list[tuple[float, anyio.Event]] = []
        self._changed = anyio.Event()

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        entry = (self.now + seconds, anyio.Event())
        self._update(lambda: self.sleepers.append(entry))
        try:
            await entry[1].wait()
        finally:
            self._update(lambda: self.sleepers.remove(entry))

    def wake_times(self) -> list[float]:
        return sorted(wake_at for wake_at, _ in self.sleepers)

    async def until(self, condition: Callable[[], bool]) -> None:
        """Wait (on events, not timers) until ``condition()`` holds for the sleepers."""
        while not condition():
            self._changed = anyio.Event()
            await self._changed.wait()

    def advance_to(self, when: float) -> None:
        self.now = when
        for wake_at, event in self.sleepers:
            if wake_at <= when:
                event.set()

    def limiter(self, rpm: float | None = None, tpm: float | None = None) -> RateLimiter:
        return RateLimiter(rpm, tpm, clock=self.clock, sleep=self.sleep)

    def _update(self, change: Callable[[], None]) -> None:
        change()
        self._changed.set()


async def _acquire_into(limiter: RateLimiter, slots: dict[str, float], name: str,
                        tokens: int = 0) -> None:
    slots[name] = await limiter.acquire(tokens)


def _max_in_window(slots: list[float], weights: list[float] | None = None) -> float:
    """The largest total weight granted in any half-open 60-second window [s, s+60)."""
    weights = weights or [1.0] * len(slots)
    return max(sum(w for t, w in zip(slots, weights, strict=True) if s <= t < s + 60) for s in slots)


async def test_first_request_goes_immediately():
    t = AutoTime(start=100.0)
    assert await t.limiter(rpm=60).acquire() == 100.0
    assert t.sleeps == []


async def test_slots_are_evenly_spaced():
    t = AutoTime()
    limiter = t.limiter(rpm=600)
    slots = [await limiter.acquire() for _ in range(100)]
    assert slots == pytest.approx([i * 0.1 for i in range(100)], abs=1e-9)


async def test_no_burst_after_idle():
    t = AutoTime()
    limiter = t.limiter(rpm=60)
    await limiter.acquire()
    t.now = 500.0  # a long idle period earns no stored-up burst
    assert [await limiter.acquire() for _ in range(3)] == [500.0, 501.0, 502.0]


async def test_requests_per_window_stay_under_rpm():
    t = AutoTime()
    limiter = t.limiter(rpm=120)
    rng = random.Random(0)
    slots = []
    for _ in range(400):
        if rng.random() < 0.01:
            t.now += rng.randint(1, 90) / 4  # idle gaps of varying length (exact floats)
        slots.append(await limiter.acquire())
    assert _max_in_window(slots) == 120  # the limit is used, never exceeded


async def test_tokens_per_window_stay_under_tpm():
    t = AutoTime()
    limiter = t.limiter(tpm=6000)
    slots = [await limiter.acquire(100) for _ in range(300)]
    assert slots[:3] == [0.0, 1.0, 2.0]
    assert _max_in_window(slots, [100.0] * len(slots)) <= 6000


async def test_request_larger_than_tpm_goes_then_spaces_the_next():
    t = AutoTime()
    limiter = t.limiter(tpm=1000)
    assert await limiter.acquire(5000) == 0.0
    assert await limiter.acquire(10) == 300.0


async def test_slot_is_the_later_of_both_clocks():
    t = AutoTime()
    limiter = t.limiter(rpm=60, tpm=600)
    assert await limiter.acquire(5) == 0.0
    assert await limiter.acquire(50) == 1.0  # request clock: 1 s; token clock: 0.5 s
    assert await limiter.acquire(0) == 6.0  # token clock: 1 + 50 tokens * 0.1 s


async def test_unlimited_never_waits():
    t = AutoTime()
    limiter = t.limiter()
    assert [await limiter.acquire(10**6) for _ in range(1000)] == [0.0] * 1000
    assert t.sleeps == []
    assert limiter.stats.waited == 0.0


async def test_pause_pushes_the_next_slot():
    t = AutoTime()
    limiter = t.limiter(rpm=60)
    await limiter.acquire()
    limiter.pause(10)
    assert await limiter.acquire() == 10.0
    assert await limiter.acquire() == 11.0


async def test_pause_applies_without_limits():
    t = AutoTime()
    limiter = t.limiter()
    limiter.pause(5)
    assert await limiter.acquire() == 5.0


async def test_pause_moves_sleeping_waiters_and_keeps_their_spacing():
    t = ManualTime()
    limiter = t.limiter(rpm=60)
    slots: dict[str, float] = {}
    async with anyio.create_task_group() as tg:
        for name in "abc":
            tg.start_soon(_acquire_into, limiter, slots, name)
        await t.until(lambda: t.wake_times() == [1.0, 2.0])  # a went at 0
        limiter.pause(5)
        t.advance_to(1.0)  # b wakes at its old slot and must sleep on
        await t.until(lambda: 5.0 in t.wake_times())
        t.advance_to(6.0)
        tg.start_soon(_acquire_into, limiter, slots, "d")
        await t.until(lambda: 7.0 in t.wake_times())
        t.advance_to(7.0)
    assert slots == {"a": 0.0, "b": 5.0, "c": 6.0, "d": 7.0}
    assert limiter.stats.pauses == 1


async def test_settle_refund_brings_the_next_slot_forward():
    t = AutoTime()
    limiter = t.limiter(tpm=600)  # 0.1 s per token
    await limiter.acquire(100)
    limiter.settle(estimated=100, actual=50)
    assert await limiter.acquire() == pytest.approx(5.0)


async def test_settle_overrun_pushes_the_next_slot_out():
    t = AutoTime()
    limiter = t.limiter(tpm=600)
    await limiter.acquire(100)
    limiter.settle(estimated=100, actual=300)
    assert await limiter.acquire() == pytest.approx(30.0)


async def test_settle_refund_never_jumps_ahead_of_a_reserved_slot():
    t = ManualTime()
    limiter = t.limiter(tpm=600)  # 0.1 s per token
    slots: dict[str, float] = {}
    async with anyio.create_task_group() as tg:
        tg.start_soon(_acquire_into, limiter, slots, "a", 100)
        tg.start_soon(_acquire_into, limiter, slots, "b", 20)
        await t.until(lambda: t.wake_times() == [10.0])  # b holds 10.0
        limiter.settle(estimated=100, actual=0)  # token clock back to 2.0
        tg.start_soon(_acquire_into, limiter, slots, "c", 10)
        await t.until(lambda: len(t.sleepers) == 2)
        t.advance_to(12.0)
    assert slots == {"a": 0.0, "b": 10.0, "c": 10.0}


async def test_settle_is_a_no_op_without_tpm():
    t = AutoTime()
    limiter = t.limiter(rpm=60)
    await limiter.acquire(100)
    limiter.settle(estimated=100, actual=10_000)
    assert await limiter.acquire() == 1.0


async def test_concurrent_callers_get_distinct_spaced_slots_in_arrival_order():
    t = AutoTime()
    limiter = t.limiter(rpm=120)
    arrivals: list[int] = []
    slots: dict[int, float] = {}

    async def caller(i: int) -> None:
        arrivals.append(i)
        slots[i] = await limiter.acquire()

    async with anyio.create_task_group() as tg:
        for i in range(20):
            tg.start_soon(caller, i)
    assert [slots[i] for i in arrivals] == [0.5 * k for k in range(20)]


async def test_concurrent_waiters_are_all_asleep_on_reserved_slots():
    t = ManualTime()
    limiter = t.limiter(rpm=60)
    slots: dict[str, float] = {}
    async with anyio.create_task_group() as tg:
        for name in "abcde":
            tg.start_soon(_acquire_into, limiter, slots, name)
        await t.until(lambda: len(t.sleepers) == 4)
        assert t.wake_times() == [1.0, 2.0, 3.0, 4.0]
        t.advance_to(4.0)
    assert sorted(slots.values()) == [0.0, 1.0, 2.0, 3.0, 4.0]


async def test_cancelled_waiter_leaves_no_hole_for_a_burst():
    t = ManualTime()
    limiter = t.limiter(rpm=60)
    slots: dict[str, float] = {}
    scopes: dict[str, anyio.CancelScope] = {}

    async def waiter(name: str) -> None:
        with anyio.CancelScope() as scopes[name]:
            slots[name] = await limiter.acquire()

    assert await limiter.acquire() == 0.0
    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter, "b")
        tg.start_soon(waiter, "c")
        await t.until(lambda: t.wake_times() == [1.0, 2.0])
        scopes["b"].cancel()
        await t.until(lambda: t.wake_times() == [2.0])
        tg.start_soon(waiter, "d")  # must queue behind c, not take b's 1.0
        await t.until(lambda: len(t.sleepers) == 2)
        assert t.wake_times() == [2.0, 3.0]
        t.advance_to(3.0)
    assert slots == {"c": 2.0, "d": 3.0}
    assert limiter.stats.requests == 3


async def test_cancelled_last_waiter_gives_its_slot_back():
    t = ManualTime()
    limiter = t.limiter(rpm=60)
    slots: dict[str, float] = {}
    assert await limiter.acquire() == 0.0
    async with anyio.create_task_group() as tg:
        tg.start_soon(_acquire_into, limiter, slots, "b")
        await t.until(lambda: t.wake_times() == [1.0])
        tg.cancel_scope.cancel()
    t.advance_to(0.5)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_acquire_into, limiter, slots, "c")
        await t.until(lambda: len(t.sleepers) == 1)
        assert t.wake_times() == [1.0]  # b's slot, not 2.0
        t.advance_to(1.0)
    assert slots == {"c": 1.0}
    assert limiter.stats.requests == 2


async def test_stats_count_requests_and_waiting():
    t = AutoTime()
    limiter = t.limiter(rpm=60)
    for _ in range(3):
        await limiter.acquire()
    limiter.pause(1)
    assert (limiter.stats.requests, limiter.stats.waited, limiter.stats.pauses) == (3, 2.0, 1)


@pytest.mark.parametrize("kwargs", [{"rpm": 0}, {"rpm": -5}, {"tpm": 0}],
                         ids=["rpm-zero", "rpm-negative", "tpm-zero"])
def test_limits_must_be_positive(kwargs):
    with pytest.raises(ValueError):
        RateLimiter(**kwargs)


async def test_negative_tokens_rejected():
    with pytest.raises(ValueError):
        await RateLimiter(rpm=60).acquire(-1)


def test_negative_pause_rejected():
    with pytest.raises(ValueError):
        RateLimiter().pause(-1)
