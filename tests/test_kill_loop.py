"""Twenty SIGKILLs at random points of one cascade run; the resumed result is exact."""

from __future__ import annotations

import json
import random
import signal
import sqlite3

import anyio
import pytest

from harness.testing import FakeOpenAI

from .helpers import count_stored, model_and_judge, write_arith, write_judge_config
from .test_cli import cli, env


@pytest.mark.timeout(240)
async def test_twenty_kills_at_random_points_then_resume_equals_a_clean_run(tmp_path):
    n, concurrency, judge_slots = 120, 8, 4
    data = write_arith(tmp_path / "a.jsonl", n)
    rng = random.Random(20261202)
    latency = lambda body: rng.uniform(0.0, 0.02)  # noqa: E731
    async with FakeOpenAI(responder=model_and_judge, latency=latency) as srv:
        cfg = write_judge_config(tmp_path / "cfg.py", data, srv.base_url, mode="parallel",
                                 judge={"concurrency": judge_slots})
        work = tmp_path / "killed"
        args = cli("run", str(cfg), "-w", str(work), "-q", "-c", str(concurrency))
        kills = 0
        while kills < 20:
            target = count_stored(work / "harness.db", "predictions", "verdicts") + rng.randint(1, 10)
            proc = await anyio.open_process(args, env=env())
            async with proc:
                with anyio.move_on_after(30):
                    while proc.returncode is None and count_stored(work / "harness.db", "predictions", "verdicts") < target:  # noqa: ASYNC110 - another process's SQLite file: no event to wait on
                        await anyio.sleep(0.005)
                if proc.returncode is not None:
                    break  # it finished before this kill point: the run is complete
                proc.send_signal(signal.SIGKILL)
                await proc.wait()
            kills += 1
        with anyio.fail_after(10):
            await srv.wait_idle()
        final = await anyio.run_process(args, env=env(), check=False)
        assert final.returncode == 0, final.stderr.decode()
        requests_with_kills = srv.stats.total
        srv.requests.clear()
        clean = await anyio.run_process(cli("run", str(cfg), "-w", str(tmp_path / "clean"),
                                            "-q", "-c", str(concurrency)), env=env(), check=False)
        assert clean.returncode == 0
    assert kills >= 15, "too few kills landed before the run completed"
    killed = json.loads((work / "results/fake/arith.json").read_text())
    fresh = json.loads((tmp_path / "clean/results/fake/arith.json").read_text())
    for key in ("total", "scored", "correct", "accuracy", "counts"):
        assert killed[key] == fresh[key]
    for key in ("rule_correct", "llm_evaluated", "llm_correct", "final_correct"):
        assert killed["cascade_stats"][key] == fresh["cascade_stats"][key]

    def strip(text):
        return [{k: v for k, v in json.loads(line).items() if k != "llm_evaluation"}
                for line in text.splitlines()]

    assert strip((work / "details/fake/arith.jsonl").read_text()) == \
        strip((tmp_path / "clean/details/fake/arith.jsonl").read_text())
    # Each kill can only repeat what was in flight: model calls, judge calls, and
    # answers that had not been committed yet.
    clean_requests = 2 * n
    assert requests_with_kills - clean_requests <= kills * 2 * (concurrency + judge_slots)
    con = sqlite3.connect(work / "harness.db")
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    con.close()
