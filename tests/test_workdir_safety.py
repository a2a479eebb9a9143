"""Files stay inside the work directory, and a failed run never replaces good results."""

from __future__ import annotations

import json
import os
import socket
import uuid

import anyio
import pytest

from harness.paths import safe_name
from harness.testing import FakeOpenAI

from .helpers import arith_reply, expected_correct, model_cfg, write_arith, write_config
from .test_cli import cli, env

N = 8


def files_under(root):
    return sorted(os.path.relpath(os.path.join(d, f), root)
                  for d, _, names in os.walk(root) for f in names)


async def test_names_from_the_endpoint_or_the_config_never_write_outside(tmp_path):
    escape = f"harness-escape-{uuid.uuid4().hex}"
    evil_model = f"../../../../../../tmp/{escape}"
    data = write_arith(tmp_path / "a.jsonl", N)
    cfg = write_config(tmp_path / "cfg.py", data)
    cfg.write_text(cfg.read_text().replace("abbr='arith'", "abbr='../../../ds'"))
    work = tmp_path / "sub" / "w"
    async with FakeOpenAI(responder=arith_reply, models=(evil_model,)) as srv:
        # The model name is the first one the endpoint's /v1/models reports.
        result = await anyio.run_process(
            cli("run", str(cfg), "-w", str(work), "-q", "--model-base-url", srv.base_url),
            env=env(), check=False)
    assert result.returncode == 0, result.stderr.decode()
    assert not os.path.exists(f"/tmp/{escape}")
    outside = [f for f in files_under(tmp_path) if not f.startswith("sub/w/")]
    assert sorted(outside) == ["a.jsonl", "cfg.py"]
    inside = files_under(work)
    model_dir, dataset_file = safe_name(evil_model), safe_name("../../../ds")
    assert f"results/{model_dir}/{dataset_file}.json" in inside
    assert f"details/{model_dir}/{dataset_file}.jsonl" in inside
    assert ".." not in model_dir and "/" not in model_dir


def test_plain_names_are_kept_and_changed_ones_do_not_collide():
    assert safe_name("gemma-3-270m") == "gemma-3-270m" and safe_name("gsm8k") == "gsm8k"
    assert safe_name("a/b") != safe_name("a_b") and safe_name("..") not in ("..", ".", "")


def test_long_names_fit_a_file_name_in_bytes_and_stay_distinct():
    """A file name may have 255 bytes: 90 CJK characters are 270 (and 100 emoji 400)."""
    names = ["字" * 86, "字" * 99, "字" * 100, "𠀀" * 100, "é" * 300, "a" * 300, "x" * 95 + "字" * 5]
    safe = [safe_name(n) for n in names]
    assert len(set(safe)) == len(names)
    for name in safe:
        assert len(f"{name}.jsonl.part".encode()) <= 255, name


async def test_a_long_model_and_dataset_name_in_cjk_are_written(tmp_path):
    model, dataset = "模型" * 45, "数据" * 45
    cfg = write_config(tmp_path / "cfg.py", write_arith(tmp_path / "a.jsonl", N))
    cfg.write_text(cfg.read_text().replace("abbr='arith'", f"abbr={dataset!r}"))
    work = tmp_path / "w"
    async with FakeOpenAI(responder=arith_reply, models=(model,)) as srv:
        result = await anyio.run_process(
            cli("run", str(cfg), "-w", str(work), "-q", "--model-base-url", srv.base_url),
            env=env(), check=False)
    assert result.returncode == 0, result.stderr.decode()
    saved = json.loads((work / "results" / safe_name(model) / f"{safe_name(dataset)}.json")
                       .read_text())
    assert saved["correct"] == expected_correct(N) and saved["model"] == model
    assert (work / "details" / safe_name(model) / f"{safe_name(dataset)}.jsonl").exists()


def dead_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


async def snapshot(work):
    files = {f: (work / f).read_bytes() for f in files_under(work)
             if f.startswith(("results/", "details/"))}
    files["summary.json results"] = json.loads((work / "summary.json").read_text())["results"]
    return files


async def test_a_run_against_a_dead_endpoint_leaves_the_good_results(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", N)
    work = tmp_path / "w"
    async with FakeOpenAI(responder=arith_reply) as srv:
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(srv.base_url)])
        good = await anyio.run_process(cli("run", str(cfg), "-w", str(work), "-q"), env=env())
    assert good.returncode == 0
    before = await snapshot(work)
    # The same config pointed at a dead endpoint: every call fails (one attempt each,
    # too few to open the breaker, so the run ends with all samples failed).
    bad = await anyio.run_process(
        cli("run", str(cfg), "-w", str(work), "-q", "--model-base-url", dead_url(),
            "--model", "fake-model", "--max-attempts", "1"), env=env(), check=False)
    err = bad.stderr.decode()
    assert bad.returncode == 1
    assert "kept the earlier results of fake on arith" in err
    assert await snapshot(work) == before
    kept = json.loads((work / "results/fake/arith.json").read_text())
    assert kept["complete"] and kept["correct"] == expected_correct(N)


async def test_a_run_on_fewer_samples_or_without_scores_leaves_the_results(tmp_path):
    """Issue 13 point 7: a complete ``--limit`` run on fewer samples, or an ``--mode
    infer`` run (nothing scored), got less far than a full scored run."""
    data = write_arith(tmp_path / "a.jsonl", N)
    work = tmp_path / "w"
    async with FakeOpenAI(responder=arith_reply) as srv:
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(srv.base_url)])
        await anyio.run_process(cli("run", str(cfg), "-w", str(work), "-q"), env=env())
        before = await snapshot(work)
        for flags in (["--limit", "3"], ["--mode", "infer"]):
            lesser = await anyio.run_process(
                cli("run", str(cfg), "-w", str(work), "-q", *flags), env=env())
            assert lesser.returncode == 0
            assert (f"kept the earlier results of fake on arith, which got further than "
                    f"this run ({N} scored, {N} predicted; this run: ") in lesser.stderr.decode()
            # The table's figure is this run's, not the one results/ keeps: it says so.
            out = lesser.stdout.decode()
            assert " *\n" in out and "* this run's own result: results/ keeps an earlier " \
                "run's, which got further" in out
            assert await snapshot(work) == before, flags


@pytest.mark.parametrize("flags, then", [
    ((), ()),
    # Replaced without details: the earlier run's rows would describe another result.
    ((), ("--no-dump-eval-details",)),
    # A --limit beyond the dataset's rows leaves none out: a complete run as well.
    ((), ("--limit", "100")),
    # No scores to protect: an infer result of rows that no longer exist.
    (("--mode", "infer"), ("--mode", "infer")),
])
async def test_a_complete_run_on_a_dataset_that_shrank_replaces_the_results(tmp_path, flags,
                                                                           then):
    # The dataset has fewer rows now: a complete run over all of them is its result.
    # The old result (more samples, rows that no longer exist) stayed, with exit 0.
    data = write_arith(tmp_path / "a.jsonl", N)
    work = tmp_path / "w"
    async with FakeOpenAI(responder=arith_reply) as srv:
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(srv.base_url)])
        await anyio.run_process(cli("run", str(cfg), "-w", str(work), "-q", *flags), env=env())
        write_arith(data, 3)
        fewer = await anyio.run_process(cli("run", str(cfg), "-w", str(work), "-q", *then),
                                        env=env())
    assert fewer.returncode == 0 and b"kept the earlier" not in fewer.stderr
    saved = json.loads((work / "results/fake/arith.json").read_text())
    assert saved["total"] == 3 and saved["complete"]
    assert json.loads((work / "summary.json").read_text())["results"][0]["total"] == 3
    details = work / "details/fake/arith.jsonl"
    if "--no-dump-eval-details" in then:
        assert not details.exists()
    else:
        assert len(details.read_text().splitlines()) == 3


async def test_a_run_that_gets_as_far_replaces_the_results(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", N)
    work = tmp_path / "w"
    async with FakeOpenAI(responder=arith_reply) as srv:
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(srv.base_url)])
        # Three predictions, then all, then all scored, then re-scored: each run got at
        # least as far as the last.
        for flags, total in ((["--mode", "infer", "--limit", "3"], 3), (["--mode", "infer"], N),
                             (["--mode", "all"], N), (["--mode", "eval"], N)):
            further = await anyio.run_process(
                cli("run", str(cfg), "-w", str(work), "-q", *flags), env=env())
            assert further.returncode == 0 and b"kept the earlier" not in further.stderr
            saved = json.loads((work / "results/fake/arith.json").read_text())
            assert saved["total"] == total and saved["mode"] == flags[1]
            assert len((work / "details/fake/arith.jsonl").read_text().splitlines()) == total
