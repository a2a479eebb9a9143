"""Config loading: the seed vocabulary, and errors that name file, line and field."""

from __future__ import annotations

import textwrap

import pytest

from harness.config import load_config
from harness.errors import ConfigError
from harness.models import ModelOverrides, resolve_models

from .helpers import write_arith, write_config

SEED_AIME = '''
from harness import RawPromptTemplate, ZeroRetriever, GenInferencer, CustomDataset
from harness import MATHVerifyEvaluator

aime2026_reader_cfg = dict(input_columns=['problem'], output_column='answer')
aime2026_infer_cfg = dict(
    prompt_template=dict(
        type=RawPromptTemplate,
        messages=[
            {'role': 'user', 'content': '{problem}\\nRemember to put your final answer within \\\\boxed{}.'},
        ],
    ),
    retriever=dict(type=ZeroRetriever),
    inferencer=dict(type=GenInferencer),
)
aime2026_eval_cfg = dict(evaluator=dict(type=MATHVerifyEvaluator))
aime2026_datasets = [
    dict(type=CustomDataset, abbr='aime2026', path='data.jsonl',
         reader_cfg=aime2026_reader_cfg, infer_cfg=aime2026_infer_cfg,
         eval_cfg=aime2026_eval_cfg, n=1)
]
'''


def test_seed_style_config_with_suffixed_datasets_variable(tmp_path):
    (tmp_path / "data.jsonl").write_text('{"problem": "1+1?", "answer": "2"}\n')
    (tmp_path / "cfg.py").write_text(SEED_AIME)
    cfg = load_config(tmp_path / "cfg.py")
    (spec,) = cfg.datasets
    assert spec.abbr == "aime2026" and spec.n == 1
    assert type(spec.evaluator).__name__ == "MATHVerifyEvaluator"
    messages = spec.template.render({"problem": "1+1?"})
    assert messages[0]["content"] == "1+1?\nRemember to put your final answer within \\boxed{}."


def test_data_path_is_resolved_relative_to_the_config(tmp_path, monkeypatch):
    (tmp_path / "data.jsonl").write_text('{"problem": "1+1?", "answer": "2"}\n')
    (tmp_path / "cfg.py").write_text(SEED_AIME)
    monkeypatch.chdir("/")
    assert load_config(tmp_path / "cfg.py").datasets[0].reader.path == tmp_path / "data.jsonl"


def test_syntax_error_names_the_line(tmp_path):
    (tmp_path / "cfg.py").write_text("datasets = [\n  dict(abbr='x',\n")
    with pytest.raises(ConfigError, match=r"cfg\.py:\d+: syntax error"):
        load_config(tmp_path / "cfg.py")


def test_unknown_postprocessor_names_the_field(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 2)
    cfg = write_config(tmp_path / "cfg.py", data, pred_pp=None, ref_pp=None)
    text = cfg.read_text().replace("pred_role='BOT'",
                                   "pred_role='BOT', pred_postprocessor=dict(type='no-such-pp')")
    cfg.write_text(text)
    with pytest.raises(ConfigError, match=r"datasets\[0\]\.eval_cfg\.pred_postprocessor"):
        load_config(cfg)


def test_unknown_evaluator_name_names_the_field(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 2)
    cfg = write_config(tmp_path / "cfg.py", data, pred_pp=None, ref_pp=None)
    cfg.write_text(cfg.read_text().replace("type=AccEvaluator", "type='NoSuchEvaluator'"))
    with pytest.raises(ConfigError, match=r"datasets\[0\]\.eval_cfg\.evaluator.*NoSuchEvaluator"):
        load_config(cfg)


def test_missing_reader_cfg_field(tmp_path):
    (tmp_path / "cfg.py").write_text(textwrap.dedent("""
        datasets = [dict(abbr='x', path='d.jsonl', infer_cfg=dict())]
    """))
    with pytest.raises(ConfigError, match=r"datasets\[0\]\.reader_cfg.*missing"):
        load_config(tmp_path / "cfg.py")


def test_missing_data_file_names_the_path_field(tmp_path):
    cfg = write_config(tmp_path / "cfg.py", tmp_path / "absent.jsonl")
    with pytest.raises(ConfigError, match=r"datasets\[0\]\.path"):
        load_config(cfg)


def test_config_without_datasets(tmp_path):
    (tmp_path / "cfg.py").write_text("x = 1\n")
    with pytest.raises(ConfigError, match="defines no datasets"):
        load_config(tmp_path / "cfg.py")


def test_sample_score_fn_as_evaluator_type(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 2)
    cfg = write_config(tmp_path / "cfg.py", data, evaluator="my_score",
                       extra="def my_score(pred, ref, item):\n    return pred == ref\n")
    spec = load_config(cfg).datasets[0]
    assert spec.evaluator.score_sample("3", "3", {})["correct"] is True


# --- model precedence -------------------------------------------------------------

CONFIG_MODEL = {"abbr": "cfg", "path": "cfg-model", "openai_api_base": "http://cfg/v1",
                "key": "ENV"}


def test_no_endpoint_anywhere_means_embedded_model():
    assert resolve_models([], ModelOverrides(), env={}) is None


def test_config_models_beat_environment():
    (spec,) = resolve_models([CONFIG_MODEL], ModelOverrides(),
                             env={"HARNESS_MODEL_BASE_URL": "http://env/v1",
                                  "OPENAI_API_KEY": "k"})
    assert spec.base_url == "http://cfg/v1" and spec.model == "cfg-model"
    assert spec.api_key == "k"


def test_flags_beat_config_models():
    (spec,) = resolve_models([CONFIG_MODEL], ModelOverrides(base_url="http://flag/v1",
                                                            model="flag-model"), env={})
    assert spec.base_url == "http://flag/v1" and spec.model == "flag-model"


def test_environment_used_when_config_has_no_models():
    (spec,) = resolve_models([], ModelOverrides(), env={"HARNESS_MODEL_BASE_URL": "http://env/v1",
                                                        "HARNESS_MODEL": "m"})
    assert (spec.base_url, spec.model) == ("http://env/v1", "m")


def test_api_key_env_flag_reads_the_named_variable():
    (spec,) = resolve_models([CONFIG_MODEL], ModelOverrides(api_key_env="MY_KEY"),
                             env={"MY_KEY": "secret"})
    assert spec.api_key == "secret"
    assert "secret" not in repr(spec) and "secret" not in str(spec.identity())


def test_api_key_env_flag_with_unset_variable_is_a_config_error():
    with pytest.raises(ConfigError, match="MY_KEY"):
        resolve_models([CONFIG_MODEL], ModelOverrides(api_key_env="MY_KEY"), env={})
