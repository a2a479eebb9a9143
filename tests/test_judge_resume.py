"""A run killed with SIGKILL while judging resumes and judges only what is missing."""

from __future__ import annotations

import json
import signal

import anyio

from harness.testing import FakeOpenAI

from .helpers import (
    count_stored,
    expected_cascade,
    model_and_judge,
    write_arith,
    write_judge_config,
)
from .test_cli import cli, env


async def test_sigkill_mid_judging_resumes_without_rejudging(tmp_path):
    n = 120
    data = write_arith(tmp_path / "a.jsonl", n)
    latency = lambda body: 0.03 if body["model"] == "judge-model" else 0.0  # noqa: E731
    async with FakeOpenAI(responder=model_and_judge, latency=latency) as srv:
        cfg = write_judge_config(tmp_path / "cfg.py", data, srv.base_url, mode="parallel",
                                 judge={"concurrency": 4})
        work = tmp_path / "w"
        proc = await anyio.open_process(cli("run", str(cfg), "-w", str(work), "-q"), env=env())
        async with proc:
            with anyio.fail_after(60):
                while count_stored(work / "harness.db", "verdicts") < n // 3:  # noqa: ASYNC110 - another process's SQLite file: no event to wait on
                    await anyio.sleep(0.02)
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
        with anyio.fail_after(10):
            await srv.wait_idle()
        stored = count_stored(work / "harness.db", "verdicts")
        judged_before = sum(r["model"] == "judge-model" for r in srv.requests)
        assert stored < n
        resumed = await anyio.run_process(cli("run", str(cfg), "-w", str(work), "-q"),
                                          env=env(), check=False)
        assert resumed.returncode == 0, resumed.stderr.decode()
        judged_after = sum(r["model"] == "judge-model" for r in srv.requests) - judged_before
    # Every stored verdict is reused; only the missing ones are asked for.
    assert judged_after == n - stored
    # What the killed run asked but never stored was in flight: at most the judge's slots
    # plus answers not yet committed.
    assert judged_before - stored <= 2 * 4
    result = json.loads((work / "results" / "fake" / "arith.json").read_text())
    assert result["correct"] == expected_cascade(n)["final"]
    assert result["cascade_stats"]["judge_cached"] == stored
