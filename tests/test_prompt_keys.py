"""Template filling (one pass) and the prediction key."""

from __future__ import annotations

import pytest

from harness.keys import prediction_key
from harness.prompt import PromptTemplate, RawPromptTemplate, fill


def test_fill_replaces_known_placeholders():
    assert fill("Q: {question}", {"question": "2+2?"}) == "Q: 2+2?"


def test_fill_keeps_unknown_placeholders_and_latex():
    text = "{problem} put it in \\boxed{} or \\frac{a}{b} {unknown}"
    assert fill(text, {"problem": "P"}) == "P put it in \\boxed{} or \\frac{a}{b} {unknown}"


def test_fill_is_one_pass_so_values_are_data():
    out = fill("{prediction} vs {answer}", {"prediction": "I say {answer}", "answer": "42"})
    assert out == "I say {answer} vs 42"


def test_raw_template_renders_messages():
    t = RawPromptTemplate(messages=[{"role": "system", "content": "S"},
                                    {"role": "user", "content": "{q}"}])
    assert t.render({"q": "hi"}) == ({"role": "system", "content": "S"},
                                     {"role": "user", "content": "hi"})


def test_prompt_template_rounds_map_opencompass_roles():
    t = PromptTemplate(template=dict(round=[dict(role="HUMAN", prompt="{q}"),
                                            dict(role="BOT", prompt="A")]))
    assert t.render({"q": "x"}) == ({"role": "user", "content": "x"},
                                    {"role": "assistant", "content": "A"})


def _key(**changes):
    args = dict(identity={"endpoint": "http://h/v1", "model": "m"},
                messages=[{"role": "user", "content": "q"}], gen_params={"max_tokens": 8},
                replica=0)
    args.update(changes)
    return prediction_key(**args)


def test_prediction_key_is_stable():
    assert _key() == _key()


def test_prediction_key_changes_with_what_changes_the_prediction():
    base = _key()
    assert _key(replica=1) != base
    assert _key(gen_params={"max_tokens": 9}) != base
    assert _key(messages=[{"role": "user", "content": "q2"}]) != base
    assert _key(identity={"endpoint": "http://h/v1", "model": "m2"}) != base


def test_canonical_json_is_what_the_json_module_writes():
    """Keys of stored predictions and verdicts must not change with the encoder's speed-up."""
    import json

    from harness.keys import canonical_json, content_key

    tricky = {"b": 1, "a": [1.5, float("nan"), float("inf"), -0.0, 1e300, True, None,
                            "é\u2028\x00\"\\", ("tuple", 2)], "c": {"z": {}, "y": object},
              "d": {1: "int keys", 2: "sorted"}}
    for value in (tricky, "a string", 3.0, [], {}):
        assert canonical_json(value) == json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    # The key the encoder before this one (``json.JSONEncoder.encode``) gave.
    assert content_key("prediction", model={"endpoint": "http://h/v1", "model": "m"},
                       gen={"max_tokens": 8}, replica=0,
                       messages=[{"role": "user", "content": "2+2?"}]) == (
        "4cb732ffaab32dd572675a26d3905fcb930b6fbc42a61791c9a80175aec525db")


def test_prediction_key_is_the_key_stored_predictions_were_kept_under():
    """The per-dataset key template must give the keys earlier versions stored."""
    assert _key(messages=[{"role": "user", "content": "2+2?"}]) == (
        "4cb732ffaab32dd572675a26d3905fcb930b6fbc42a61791c9a80175aec525db")


def test_key_template_gives_content_key_byte_for_byte():
    from harness.keys import KeyTemplate, content_key

    shared = {"model": {"endpoint": "http://h/v1", "model": "m"},
              "gen": {"temperature": 0.0, "max_tokens": 8, "stop": ["\n\n", "é"]}}
    template = KeyTemplate("prediction", ("messages", "replica"), **shared)
    for messages in ([{"role": "user", "content": "é\u2028\x00\"\\ {answer}"}],
                     [{"role": "system", "content": ""}, {"role": "user", "content": "q"}]):
        for replica in (0, 7):
            assert template(messages, replica) == content_key(
                "prediction", messages=messages, replica=replica, **shared)
    # Varying parts named out of sorted order land where sorting puts them.
    zeta_first = KeyTemplate("x", ("zeta", "alpha"), mid={"b": 1, "a": 2})
    assert zeta_first([3], {"k": None}) == content_key(
        "x", zeta=[3], alpha={"k": None}, mid={"b": 1, "a": 2})
    completions = {"identity": shared["model"], "gen_params": shared["gen"], "api": "completions"}
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "q"}]
    assert prediction_key(messages=messages, replica=2, **completions) == content_key(
        "prediction", model=shared["model"], gen=shared["gen"], replica=2, api="completions",
        prompt="S\nq")


def test_a_key_part_both_shared_and_varying_is_refused():
    """``content_key`` cannot take a part twice; a template must not keep one silently,
    or two different values of it would give one key."""
    from harness.keys import KeyTemplate

    with pytest.raises(ValueError, match="replica"):
        KeyTemplate("prediction", ("messages", "replica"), replica=0)
    with pytest.raises(ValueError, match="kind"):
        KeyTemplate("prediction", ("kind",))


def test_verdict_keys_are_the_keys_stored_verdicts_were_kept_under():
    """A judge's verdict keys, for chat and completions judges: stored verdicts must be
    found again, or a rerun pays for them twice."""
    from harness.keys import content_key, request_keys

    judge, gen = {"endpoint": "http://j/v1", "model": "judge"}, {"temperature": 0.0}
    messages = ({"role": "system", "content": "Grade."}, {"role": "user", "content": "A?"})
    assert request_keys("verdict", "chat", judge=judge, gen=gen)(messages, 1) == content_key(
        "verdict", judge=judge, gen=gen, replica=1, messages=list(messages))
    assert request_keys("verdict", "completions", judge=judge, gen=gen)(messages, 0) == (
        content_key("verdict", judge=judge, gen=gen, replica=0, api="completions",
                    prompt="Grade.\nA?"))


def test_render_fills_each_placeholder_where_it_stands():
    t = RawPromptTemplate(messages=[
        {"role": "system", "content": "no placeholders, {} and \\boxed{x} kept"},
        {"role": "user", "content": "{a}{a} mid {missing} {b} end {a}"}])
    assert t.render({"a": 1, "b": None}) == (
        {"role": "system", "content": "no placeholders, {} and \\boxed{x} kept"},
        {"role": "user", "content": "11 mid {missing}  end 1"})


def test_a_template_whose_messages_are_replaced_renders_the_new_ones():
    t = PromptTemplate(template="Q: {q}</E>", ice_token="</E>")
    assert t.render({"q": "x"}) == ({"role": "user", "content": "Q: x"},)
