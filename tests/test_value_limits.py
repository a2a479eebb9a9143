"""Values that are the right kind but no sane setting, or that cannot be sent, exit 2
before any request (the red team's fuzzer after issue 13): a concurrency of 10**9,
10**9 re-asks, a pace of one request in 10**12 minutes, a work directory that is a
number, a scoring evaluator without a reference column, generation parameters that are
not JSON or not of their key's type, a prompt that is not text or is empty."""

from __future__ import annotations

import anyio
import pytest

import harness
from harness.errors import ConfigError
from harness.testing import FakeOpenAI
from harness.testing.workloads import model_and_judge

from .helpers import model_cfg, write_arith, write_config
from .test_cli import cli, env
from .test_validation import JUDGE_FIELD, edited, judged, refused, run

# (config writer, the field named, what the message says)
OUT_OF_RANGE = {
    "model-concurrency": (edited("'temperature': 0.0", "'concurrency': 10**9"),
                          "models[0].concurrency", "must be from 1 to 10000, not 1000000000"),
    "judge-concurrency": (judged(concurrency=10**9), f"{JUDGE_FIELD}.concurrency",
                          "must be from 1 to 10000, not 1000000000"),
    "judge-max_reasks": (judged(max_reasks=10**9), f"{JUDGE_FIELD}.max_reasks",
                         "must be a whole number from 0 to 10, not 1000000000"),
    "judge-rpm-tiny": (judged(rpm=1e-12), f"{JUDGE_FIELD}.rpm",
                       "must be at least 0.0167 (one request an hour), not 1e-12"),
    "model-qps-tiny": (edited("'temperature': 0.0", "'query_per_second': 1e-6"),
                       "models[0].query_per_second",
                       "must be at least 0.000278 (one request an hour), not 1e-06"),
    "model-tpm-tiny": (edited("'temperature': 0.0", "'tpm': 1"), "models[0].tpm",
                       "must be at least 60 (one token a second), not 1"),
    "model-qps-overflow": (edited("'temperature': 0.0", "'query_per_second': 1e308"),
                           "models[0].query_per_second",
                           "must be above 0 and at most 1e+09, not 1e+308"),
    "model-timeout": (edited("'temperature': 0.0", "'timeout': 1e300"), "models[0].timeout",
                      "must be above 0 and at most 86400, not 1e+300"),
    # Generation parameters: JSON, and the type and range of the keys servers share.
    "temperature-nan": (edited("'temperature': 0.0", "'temperature': float('nan')"),
                        "models[0].temperature", "must be a finite number, not nan"),
    "temperature-text": (edited("'temperature': 0.0", "'temperature': 'hot'"),
                         "models[0].temperature", "must be a number, not 'hot'"),
    "stop-set": (edited("'temperature': 0.0", "'stop': {'x'}"), "models[0].stop",
                 "must be a non-empty string or a list of them, not {'x'}"),
    "extra_body-bytes": (edited("'temperature': 0.0", "'extra_body': {'k': b'v'}"),
                         "models[0].extra_body.k", "b'v' cannot be sent as JSON"),
    "generation_kwargs-nan": (edited("'temperature': 0.0",
                                     "'generation_kwargs': {'top_p': float('inf')}"),
                              "models[0].generation_kwargs.top_p",
                              "must be a finite number, not inf"),
    "inferencer-max_tokens": (edited("max_out_len=32", "max_tokens=-5"),
                              "datasets[0].infer_cfg.inferencer.max_tokens",
                              "must be a whole number >= 1, not -5"),
    "stopping_criteria-empty": (edited("max_out_len=32", "max_out_len=32, stopping_criteria=['']"),
                                "datasets[0].infer_cfg.inferencer.stopping_criteria",
                                "must be a non-empty string or a list of them, not ['']"),
    "judge-temperature": (judged(temperature="x"), f"{JUDGE_FIELD}.temperature",
                          "must be a number, not 'x'"),
    # The prompt and the reference.
    "prompt-number": (edited("content='{question}'", "content=5"),
                      "datasets[0].infer_cfg.prompt_template",
                      "a prompt message's content must be text, not 5"),
    "prompt-empty": (edited("content='{question}'", "content=''"),
                     "datasets[0].infer_cfg.prompt_template", "the prompt is empty"),
    "no-output_column": (edited(", output_column='answer'", ""),
                         "datasets[0].reader_cfg.output_column",
                         "missing: dataset 'arith' is scored by AccEvaluator, which compares "
                         "each prediction with a reference"),
}


@pytest.mark.parametrize("write,field,message", OUT_OF_RANGE.values(), ids=OUT_OF_RANGE.keys())
async def test_a_value_no_run_can_use_exits_2_before_any_request(tmp_path, write, field,
                                                                  message):
    async with FakeOpenAI(responder=model_and_judge, models=("fake-model", "judge-model")) as srv:
        cfg = write(tmp_path / "cfg.py", write_arith(tmp_path / "a.jsonl", 4), srv.base_url)
        with anyio.fail_after(60):  # accepted, some of these waited forever
            result = await run(cfg, tmp_path / "w")
    refused(result, f"cfg.py field '{field}': {message}")
    assert srv.stats.total == 0


async def test_a_judge_that_grades_without_a_reference_needs_no_output_column(tmp_path):
    template = "Is this a sum of two numbers? {prediction}\nReply A or B."
    data = write_arith(tmp_path / "a.jsonl", 4)
    async with FakeOpenAI(responder=model_and_judge, models=("fake-model", "judge-model")) as srv:
        from harness.testing.workloads import write_judge_config

        cfg = write_judge_config(tmp_path / "cfg.py", data, srv.base_url, mode="judge",
                                 template=template)
        cfg.write_text(cfg.read_text().replace(", output_column='answer'", ""))
        result = await run(cfg, tmp_path / "w")
    assert result.returncode in (0, 1), result.stderr.decode()
    assert srv.stats.total >= 8  # the model and the judge were asked


@pytest.mark.parametrize("flags,message", [
    (["-c", "1000000000"], "argument -c/--concurrency: must be from 1 to 10000, not 1000000000"),
    (["--max-attempts", "1000"], "argument --max-attempts: must be from 1 to 100, not 1000"),
    (["--timeout", "1e9"], "argument --timeout: must be above 0 and at most 86400, not 1000000000.0"),
    (["--rule-workers", "1000"], "argument --rule-workers: must be from 1 to 256, not 1000"),
    (["--rule-workers", "0"], "argument --rule-workers: must be positive, not 0"),
])
async def test_a_flag_beyond_its_limit_exits_2_naming_the_range(server, tmp_path, flags,
                                                                 message):
    cfg = write_config(tmp_path / "cfg.py", write_arith(tmp_path / "a.jsonl", 4),
                       models=[model_cfg(server.base_url)])
    refused(await run(cfg, tmp_path / "w", *flags), message)
    assert server.stats.total == 0


@pytest.mark.parametrize("value", ["5", "['a']", "''"])
async def test_a_config_work_dir_that_is_no_path_exits_2(server, tmp_path, value):
    cfg = write_config(tmp_path / "cfg.py", write_arith(tmp_path / "a.jsonl", 4),
                       models=[model_cfg(server.base_url)], extra=f"work_dir = {value}")
    result = await anyio.run_process(cli("run", str(cfg), "-q"), env=env(), cwd=tmp_path,
                                     check=False)
    refused(result, f"cfg.py field 'work_dir': must be a directory path, not {eval(value)!r}")
    assert server.stats.total == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "cfg.py"]


@pytest.mark.parametrize("option,message", [
    (dict(concurrency=10**9), "field 'concurrency': must be from 1 to 10000"),
    (dict(work_dir=5), "field 'work_dir': must be a directory path, not 5"),
    (dict(rule_workers=0), "field 'rule_workers': must be positive, not 0"),
    (dict(rule_workers=1000), "field 'rule_workers': must be from 1 to 256, not 1000"),
])
async def test_the_library_refuses_them_too(server, tmp_path, option, message):
    cfg = write_config(tmp_path / "cfg.py", write_arith(tmp_path / "a.jsonl", 4),
                       models=[model_cfg(server.base_url)])
    option = {"work_dir": tmp_path / "w", **option}
    with pytest.raises(ConfigError, match=message):
        await harness.evaluate(cfg, **option)
    assert server.stats.total == 0

