"""Bad input: a clear error naming file, line and field, exit 2, before any request."""

from __future__ import annotations

import sqlite3

import anyio
import pytest

import harness
from harness.errors import ConfigError, DatasetError

from .helpers import arith_reply, model_cfg, write_arith, write_config
from .test_cli import cli, env


async def run_cli(cfg, work, server):
    return await anyio.run_process(
        cli("run", str(cfg), "-w", str(work), "-q", "--model-base-url", server.base_url,
            "--model", "fake-model"), env=env(), check=False)


@pytest.mark.parametrize("content,message", [
    (b'{"question": "What is 1 + 2?", "answer": "#### 3"}\n{"question": \n',
     b"a.jsonl:2: malformed JSON"),
    (b'{"question": "What is 1 + 2?", "answer": "#### 3"}\n{"question": "\xff", "answer": "1"}\n',
     b"a.jsonl:2: not UTF-8"),
    (b'{"question": "What is 1 + 2?", "answer": "#### 3"}\n{"answer": "#### 3"}\n',
     b"a.jsonl:2 field 'question': missing column"),
    (b'{"question": "What is 1 + 2?", "answer": "#### 3"}\n{"question": "x \\ud83d", "answer": "1"}\n',
     b"a.jsonl:2 field 'question': half a character"),
    (b"", b"no rows"),
    # The prompt's only field null: the model would get an empty prompt.
    (b'{"question": "What is 1 + 2?", "answer": "#### 3"}\n{"question": null, "answer": "#### 3"}\n',
     b"a.jsonl:2 field 'question': every field the prompt uses is empty"),
    # gsm8k_dataset_postprocess finds no number in the reference: every reply would be
    # scored wrong against ''.
    (b'{"question": "What is 1 + 2?", "answer": "#### 3"}\n{"question": "What is 2 + 2?", "answer": "N/A"}\n',
     b"a.jsonl:2 field 'answer': the dataset_postprocessor finds no reference in 'N/A'"),
], ids=["malformed-json", "non-utf8", "missing-column", "lone-surrogate", "empty",
        "null-prompt-field", "postprocessed-reference-empty"])
async def test_bad_jsonl_fails_before_any_request(server, tmp_path, content, message):
    data = tmp_path / "a.jsonl"
    data.write_bytes(content)
    result = await run_cli(write_config(tmp_path / "cfg.py", data), tmp_path / "w", server)
    assert result.returncode == 2
    assert message in result.stderr
    assert server.stats.total == 0


def test_an_escaped_character_reads_whole_and_half_of_one_is_refused(tmp_path):
    from harness.dataset import CustomDataset

    data = tmp_path / "a.json"
    data.write_text('[{"q": "\\ud83d\\ude00 \\u00e9"}, {"q": {"nested": ["\\udfff"]}}]')
    rows = CustomDataset(data).rows()
    assert next(rows) == (1, {"q": "😀 é"})
    with pytest.raises(DatasetError, match=r"a.json:2 field 'q': half a character"):
        next(rows)


async def test_csv_missing_column_names_line_and_field(server, tmp_path):
    data = tmp_path / "a.csv"
    data.write_text("question,solution\nWhat is 1 + 2?,3\n")
    result = await run_cli(write_config(tmp_path / "cfg.py", data), tmp_path / "w", server)
    assert result.returncode == 2
    assert b"a.csv:2 field 'answer': missing column" in result.stderr
    assert server.stats.total == 0


@pytest.mark.parametrize("content,message", [
    # A short row would send an empty prompt (or no reference) and score the reply.
    ("question,answer\nWhat is 1 + 2?,3\nWhat is 2 + 2?\n",
     b"a.csv:3 field 'answer': the reference is empty (None)"),
    ("answer,question\n3,What is 1 + 2?\n4\n",
     b"a.csv:3 field 'question': every field the prompt uses is empty (question=None)"),
    # csv reads a column named twice from its last place only.
    ("question,question,answer\nWhat is 1 + 2?,see above,3\n",
     b"a.csv:1 field 'question': the header names this column twice"),
    # An error in a quoted record spanning lines names the line it starts on.
    ('question,answer\n"What is\n1 + 2?",\n', b"a.csv:2 field 'answer': the reference is empty"),
    ("question,answer\rWhat is 1 + 2?,3\r", b"a.csv:1: malformed CSV: new-line character"),
], ids=["short-row-no-reference", "short-row-no-prompt", "duplicate-header",
        "multi-line-record", "cr-only"])
async def test_bad_csv_fails_before_any_request(server, tmp_path, content, message):
    data = tmp_path / "a.csv"
    data.write_bytes(content.encode())
    result = await run_cli(write_config(tmp_path / "cfg.py", data), tmp_path / "w", server)
    assert result.returncode == 2 and b"Traceback" not in result.stderr
    assert message in result.stderr
    assert server.stats.total == 0


def test_spreadsheet_rows_may_leave_out_empty_last_cells(tmp_path):
    # Excel writes a row whose last cells are empty without their commas, and exports
    # empty columns unnamed: neither is an error where the run does not read them.
    from harness.dataset import CustomDataset

    data = tmp_path / "a.csv"
    data.write_text("question,answer,notes,,\nWhat is 1 + 2?,3,easy,,\nWhat is 2 + 2?,4\n")
    rows = [row for _, row in CustomDataset(data).rows()]
    assert [(r["question"], r["answer"], r["notes"]) for r in rows] == [
        ("What is 1 + 2?", "3", "easy"), ("What is 2 + 2?", "4", None)]


async def test_a_dataset_without_an_evaluator_is_not_reported_as_scored(server, tmp_path):
    # It was: 0.00 % "complete", exit 0, every reply counted wrong.
    data = write_arith(tmp_path / "a.jsonl", 3)
    cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(server.base_url)])
    cfg.write_text(cfg.read_text().replace("evaluator=dict(type=AccEvaluator), ", ""))
    result = await run_cli(cfg, tmp_path / "w", server)
    assert result.returncode == 2
    assert b"cfg.py field 'datasets[0].eval_cfg.evaluator': dataset 'arith' has no evaluator" \
        in result.stderr
    assert server.stats.total == 0
    # Predicting alone needs none.
    report = await harness.evaluate(cfg, work_dir=tmp_path / "w", mode="infer")
    assert report.complete and report.result("arith")["scored"] == 0
    assert server.stats.total == 3


async def test_unknown_postprocessor_and_evaluator_exit_2(server, tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 2)
    cfg = write_config(tmp_path / "cfg.py", data)
    cfg.write_text(cfg.read_text().replace("dict(type=gsm8k_postprocess)", "dict(type='gsm8kk')"))
    result = await run_cli(cfg, tmp_path / "w", server)
    assert result.returncode == 2 and b"pred_postprocessor" in result.stderr
    assert b"did you mean" in result.stderr
    cfg = write_config(tmp_path / "cfg.py", data)
    cfg.write_text(cfg.read_text().replace("dict(type=AccEvaluator)", "dict(type='AccEval')"))
    result = await run_cli(cfg, tmp_path / "w", server)
    assert result.returncode == 2 and b"eval_cfg.evaluator" in result.stderr
    assert server.stats.total == 0


async def test_template_placeholder_the_dataset_lacks(server, tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 2)
    cfg = write_config(tmp_path / "cfg.py", data)
    cfg.write_text(cfg.read_text().replace("content='{question}'", "content='{questoin}'"))
    result = await run_cli(cfg, tmp_path / "w", server)
    assert result.returncode == 2
    assert b"{questoin}" in result.stderr and b"prompt_template" in result.stderr
    assert server.stats.total == 0


async def test_column_used_in_prompt_but_not_an_input_column(server, tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 2)
    cfg = write_config(tmp_path / "cfg.py", data)
    cfg.write_text(cfg.read_text().replace("content='{question}'", "content='{question} {answer}'"))
    with pytest.raises(ConfigError, match="not in reader_cfg.input_columns"):
        await harness.evaluate(cfg, work_dir=tmp_path / "w")


def test_latex_braces_in_prompts_are_not_placeholders(tmp_path):
    from harness.config import load_config
    from harness.validate import validate_dataset

    data = write_arith(tmp_path / "a.jsonl", 2)
    cfg = write_config(tmp_path / "cfg.py", data)
    cfg.write_text(cfg.read_text().replace(
        "content='{question}'", "content='{question} Use \\\\\\\\frac{a}{b}, x^{n} and \\\\\\\\boxed{}.'"))
    assert validate_dataset(load_config(cfg).datasets[0]).rows == 2


async def test_incompatible_store_schema_exit_2_and_keeps_the_store(server, tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 4)
    cfg = write_config(tmp_path / "cfg.py", data)
    assert (await run_cli(cfg, tmp_path / "w", server)).returncode == 0
    con = sqlite3.connect(tmp_path / "w" / "harness.db")
    con.execute("UPDATE meta SET value='99' WHERE name='schema_version'")
    con.commit()
    con.close()
    before = server.stats.total
    result = await run_cli(cfg, tmp_path / "w", server)
    assert result.returncode == 2 and b"schema version 99" in result.stderr
    assert server.stats.total == before
    con = sqlite3.connect(tmp_path / "w" / "harness.db")
    assert con.execute("SELECT count(*) FROM predictions").fetchone() == (4,)
    con.close()


async def test_bad_row_in_later_run_loses_nothing_already_stored(server, tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 6)
    cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(server.base_url)])
    await harness.evaluate(cfg, work_dir=tmp_path / "w")
    with open(data, "a") as fh:
        fh.write("not json\n")
    with pytest.raises(DatasetError, match=r"a\.jsonl:7"):
        await harness.evaluate(cfg, work_dir=tmp_path / "w")
    data.write_text("\n".join(data.read_text().splitlines()[:6]) + "\n")
    before = server.stats.total
    report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    assert server.stats.total == before and report.result("arith")["total"] == 6


async def test_second_process_on_the_same_work_dir_is_refused(tmp_path):
    from harness.testing import FakeOpenAI

    data = write_arith(tmp_path / "a.jsonl", 200)
    cfg = write_config(tmp_path / "cfg.py", data)
    arrived = anyio.Event()

    def reply(body: dict) -> str:
        arrived.set()
        return arith_reply(body)

    async with FakeOpenAI(responder=reply, latency=0.05) as srv:
        args = cli("run", str(cfg), "-w", str(tmp_path / "w"), "-q", "--model-base-url",
                   srv.base_url, "--model", "fake-model", "-c", "2")
        first = await anyio.open_process(args, env=env())
        async with first:
            with anyio.fail_after(30):
                await arrived.wait()
            second = await anyio.run_process(args, env=env(), check=False)
            # A run on another work directory shares nothing and goes ahead meanwhile.
            other = list(args)
            other[other.index(str(tmp_path / "w"))] = str(tmp_path / "w2")
            other[other.index("run") + 1] = str(write_config(tmp_path / "cfg2.py",
                                                             write_arith(tmp_path / "b.jsonl", 5)))
            third = await anyio.run_process(other, env=env(), check=False)
            first.terminate()
            await first.wait()
    assert second.returncode == 2
    assert b"another harness process is using this work directory" in second.stderr
    assert third.returncode == 0, third.stderr.decode()


def test_a_missing_data_file_names_every_place_it_was_looked_for(tmp_path, monkeypatch):
    from harness.config import load_config

    conf = tmp_path / "configs"
    conf.mkdir()
    cfg = write_config(conf / "cfg.py", tmp_path / "placeholder.jsonl")
    cfg.write_text(cfg.read_text().replace(repr(str(tmp_path / "placeholder.jsonl")),
                                           repr("data/missing.jsonl")))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    message = str(err.value)
    assert str(conf / "data" / "missing.jsonl") in message      # beside the config first
    assert str(tmp_path / "data" / "missing.jsonl") in message  # then the working directory
