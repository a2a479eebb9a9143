"""The postprocessor registry, build_postprocessor, is_extraction_failure, robustness."""

from __future__ import annotations

import inspect

import pytest

import harness.postprocessors as pp
from harness.errors import ConfigError
from harness.postprocessors import (
    POSTPROCESSORS,
    build_postprocessor,
    first_option_postprocess,
    gsm8k_postprocess,
    is_extraction_failure,
)

NAMES = {
    "first-option": "first_option_postprocess",
    "last-option": "last_option_postprocess",
    "first-capital": "first_capital_postprocess",
    "bbh-mcq": "bbh_mcq_postprocess",
    "bbh-freeform": "bbh_freeform_postprocess",
    "gsm8k": "gsm8k_postprocess",
    "gsm8k-dataset": "gsm8k_dataset_postprocess",
    "gsm8k_dataset": "gsm8k_dataset_postprocess",
    "math-boxed": "math_postprocess_v2",
    "boxed": "math_postprocess_v2",
    "strip-think": "extract_non_reasoning_content",
    "extract-non-reasoning-content": "extract_non_reasoning_content",
    "specific-xml-tag": "xml_tag_postprocessor",
    "general": "general_postprocess",
}


@pytest.mark.parametrize("name,func_name", sorted(NAMES.items()), ids=sorted(NAMES))
def test_hyphen_name_resolves_to_function(name: str, func_name: str) -> None:
    assert POSTPROCESSORS.get(name) is getattr(pp, func_name)


@pytest.mark.parametrize("func_name", sorted(set(NAMES.values())))
def test_function_name_resolves_to_function(func_name: str) -> None:
    assert POSTPROCESSORS.get(func_name) is getattr(pp, func_name)


def test_get_by_object_returns_the_object() -> None:
    assert POSTPROCESSORS.get(first_option_postprocess) is first_option_postprocess


def test_build_none_is_none() -> None:
    assert build_postprocessor(None) is None


@pytest.mark.parametrize("kind", ["first-option", "first_option_postprocess",
                                  first_option_postprocess], ids=["hyphen", "function-name", "object"])
def test_build_by_name_or_object(kind: object) -> None:
    post = build_postprocessor(dict(type=kind))
    assert post is not None
    assert post("Let's compare. (A) is too small, so the answer is (C).") == "C"


def test_build_passes_kwargs_through() -> None:
    default = build_postprocessor(dict(type="first-option"))
    wide = build_postprocessor(dict(type="first-option", options="ABCDEFG"))
    assert default is not None and wide is not None
    reply = "The answer is (F)."
    assert default(reply) == ""  # F is not among ABCD
    assert wide(reply) == "F"


def test_build_passes_kwargs_to_xml_tag() -> None:
    post = build_postprocessor(dict(type="specific-xml-tag", tag="final"))
    assert post is not None
    assert post("<answer>draft</answer> <final>42</final>") == "42"


def test_build_accepts_an_unregistered_user_function() -> None:
    def my_pred_postprocess(text: str, suffix: str = "") -> str:
        return text.strip() + suffix

    post = build_postprocessor(dict(type=my_pred_postprocess, suffix="!"))
    assert post is not None
    assert post(" hi ") == "hi!"


def test_candidate_list_is_processed_element_wise() -> None:
    post = build_postprocessor(dict(type="gsm8k"))
    assert post is not None
    assert post(["The answer is 18.", "#### 1,000", "no idea"]) == ["18", "1000", ""]


def test_candidate_tuple_gives_a_list() -> None:
    post = build_postprocessor(dict(type="first-capital"))
    assert post is not None
    assert post(("(B)", "C.")) == ["B", "C"]


def test_bound_postprocessor_keeps_name_and_kwargs() -> None:
    post = build_postprocessor(dict(type="first-option", options="AB"))
    assert post.name == "first-option"  # type: ignore[union-attr]
    assert post.kwargs == {"options": "AB"}  # type: ignore[union-attr]


def test_unknown_name_raises_key_error_with_hint() -> None:
    with pytest.raises(KeyError, match="first-option"):
        build_postprocessor(dict(type="first-optoin"))


def test_bad_kwarg_raises_config_error_naming_postprocessor_and_kwarg() -> None:
    with pytest.raises(ConfigError, match=r"'option' in postprocessor 'first-option'; "
                                          r"did you mean 'options'"):
        build_postprocessor(dict(type="first-option", option="ABCD"))


def test_bad_kwarg_on_object_names_the_function() -> None:
    with pytest.raises(ConfigError, match=r"'precision'.*gsm8k_postprocess"):
        build_postprocessor(dict(type=gsm8k_postprocess, precision=2))


def test_missing_required_kwarg_of_user_function_fails_at_build() -> None:
    def needs_options(text: str, options: str) -> str:
        return text

    with pytest.raises(TypeError, match="needs_options"):
        build_postprocessor(dict(type=needs_options))


def test_user_function_with_var_kwargs_accepts_anything() -> None:
    def loose(text: str, **kwargs: object) -> str:
        return f"{text}{sorted(kwargs)}"

    post = build_postprocessor(dict(type=loose, a=1, b=2))
    assert post is not None and post("x") == "x['a', 'b']"


def test_config_without_type_is_rejected() -> None:
    with pytest.raises(TypeError, match="type"):
        build_postprocessor(dict(options="ABCD"))


def test_non_callable_type_is_rejected() -> None:
    with pytest.raises(TypeError, match="callable"):
        build_postprocessor(dict(type=42))


def test_bare_name_is_shorthand_for_dict() -> None:
    post = build_postprocessor("gsm8k")
    assert post is not None and post("#### 7") == "7"


@pytest.mark.parametrize("value,expected", [
    ("", True), (None, True), ("   \n\t", True), ([], True), ((), True),
    (["", None, "  "], True), ([[], [""]], True),
    ("A", False), ("0", False), (0, False), (0.0, False), (["", "B"], False), ({"x": 1}, False),
], ids=["empty", "none", "whitespace", "empty-list", "empty-tuple", "all-failed-list",
        "nested-failed", "letter", "zero-string", "zero-int", "zero-float", "one-good-item", "dict"])
def test_is_extraction_failure(value: object, expected: bool) -> None:
    assert is_extraction_failure(value) is expected


ODD_INPUTS = [None, "", "   ", 123, 4.5, b"The answer is (B).", b"\xff\xfe", {"a": 1}, ["x"],
              "\x00\x01", "<think>", "</think>", "\\boxed{", "####", "((((((", "Ａ" * 3]


@pytest.mark.parametrize("name", sorted(set(NAMES.values())))
def test_never_raises_on_odd_input(name: str) -> None:
    func = getattr(pp, name)
    for value in ODD_INPUTS:
        assert isinstance(func(value), str), value


@pytest.mark.parametrize("name", sorted(set(NAMES.values())))
def test_none_is_a_failure(name: str) -> None:
    assert getattr(pp, name)(None) == ""


def test_bytes_are_decoded() -> None:
    assert first_option_postprocess(b"The answer is (B).") == "B"


def test_all_lists_the_public_api() -> None:
    for name in pp.__all__:  # loaded on first use
        getattr(pp, name)
    public = {n for n, v in vars(pp).items()
              if not n.startswith("_") and not inspect.ismodule(v)
              and n not in ("annotations", "TYPE_CHECKING", "lazy_exports")}
    assert set(pp.__all__) == public


@pytest.mark.parametrize("name", pp.__all__)
def test_public_names_have_docstrings(name: str) -> None:
    obj = getattr(pp, name)
    assert (obj.__doc__ or "").strip() or name == "POSTPROCESSORS"
