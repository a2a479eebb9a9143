"""A config's top level: names harness reads, one slip from them, lists of datasets, and
a config that exits: each a clear outcome, not a run of something else with exit 0."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import pytest

from harness.config import load_config
from harness.errors import ConfigError

from .helpers import model_cfg, write_arith, write_config
from .test_cli import cli, env


def config(tmp_path: Path, extra: str = "", models: bool = True) -> Path:
    data = write_arith(tmp_path / "a.jsonl", 3)
    cfg = write_config(tmp_path / "cfg.py", data,
                       models=[model_cfg("http://127.0.0.1:9/v1")] if models else None)
    cfg.write_text(cfg.read_text() + extra)
    return cfg


@pytest.mark.parametrize(("line", "meant"), [
    ("model = [dict(abbr='m1', path='m', openai_api_base='http://127.0.0.1:9/v1')]\n",
     "models"),
    ("work_dri = 'outputs/here'\n", "work_dir"),
])
def test_a_name_one_slip_from_one_harness_reads_is_refused(tmp_path, line, meant):
    # model = [...] ran the embedded model instead, work_dri wrote elsewhere: exit 0.
    cfg = config(tmp_path, line, models=False)
    with pytest.raises(ConfigError, match=f"did you mean {meant!r}") as caught:
        load_config(cfg)
    assert str(cfg) in str(caught.value)


@pytest.mark.parametrize("line", [
    "judge_models = [dict(abbr='j', path='j')]\n",  # the config's own name, far from models
    "mode = 'cascade'\n",  # close to models, but not a list of models
    "model = dict(abbr='m1', path='m')\n",  # beside a models list: the config's own
    "d0_datasets = datasets\n",  # a list harness reads (and finds in datasets)
])
def test_the_configs_own_names_are_left_alone(tmp_path, line):
    assert load_config(config(tmp_path, line)).datasets


def test_a_datasets_list_left_out_of_datasets_is_named(tmp_path, caplog):
    # With a `datasets` list, that list is the run; another *_datasets list was dropped
    # without a word.
    cfg = config(tmp_path, "extra_datasets = [dict(datasets[0], abbr='extra')]\n")
    with caplog.at_level(logging.WARNING, logger="harness"):
        loaded = load_config(cfg)
    assert [d.abbr for d in loaded.datasets] == ["arith"]
    assert any("extra_datasets (1 dataset) is not in its `datasets` list" in r.getMessage()
               for r in caplog.records)


def test_lists_gathered_into_datasets_are_not_named(tmp_path, caplog):
    cfg = config(tmp_path, "more_datasets = datasets\ndatasets = [*more_datasets]\n")
    with caplog.at_level(logging.WARNING, logger="harness"):
        load_config(cfg)
    assert not caplog.records


@pytest.mark.parametrize("exit_line", ["raise SystemExit(0)\n", "import sys; sys.exit('bad')\n"])
async def test_a_config_that_exits_is_a_config_error(tmp_path, exit_line):
    cfg = config(tmp_path, exit_line)
    done = await anyio.run_process(cli("run", str(cfg), "-w", str(tmp_path / "w")), env=env(),
                                   check=False)
    assert done.returncode == 2, done.stderr.decode()
    assert f"{cfg}:" in done.stderr.decode() and "SystemExit" in done.stderr.decode()


async def test_a_report_written_to_a_directory_is_an_error_not_a_traceback(server, tmp_path):
    cfg = write_config(tmp_path / "cfg.py", write_arith(tmp_path / "a.jsonl", 3),
                       models=[model_cfg(server.base_url)])
    await anyio.run_process(cli("run", str(cfg), "-w", str(tmp_path / "w"), "-q"), env=env())
    (tmp_path / "out").mkdir()
    (tmp_path / "afile").write_text("x")
    for target in (tmp_path / "out", tmp_path / "afile" / "r.html"):
        done = await anyio.run_process(cli("report", str(tmp_path / "w"), "-o", str(target)),
                                       env=env(), check=False)
        err = done.stderr.decode()
        assert done.returncode == 2 and "Traceback" not in err and "--output" in err, err
    assert not list(tmp_path.glob("*.tmp")) and not list((tmp_path / "w").glob("*.tmp"))
