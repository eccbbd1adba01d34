"""parse_completion: helmdeck's decode and cause cases, our additions, and properties."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helmdeck_dspy.decoding.parsing import parse_completion

PLAN_OBJ = {
    "steps": [
        {"order": 1, "tool": "helmdeck.memory_store", "args": {"key": "launch"}, "rationale": "Save it."},
        {"order": 2, "tool": "blog.rewrite_for_audience", "args": {}, "rationale": "Write the post."},
    ],
    "complexity": "pack-chain",
    "reasoning": "Two packs.",
}
PLAN = json.dumps(PLAN_OBJ)


def ok(content, finish="stop", reasoning=None):
    r = parse_completion(content, finish, reasoning)
    assert r.outcome == "strict", (r.cause, r.error)
    assert r.cause is None
    return r


# ---------------------------------------------------------------- helmdeck's decode cases


@pytest.mark.parametrize(
    "content",
    [
        PLAN,
        f"<think>plan the steps</think>\n{PLAN}",
        f"<reasoning>pick</reasoning>{PLAN}",
        f"```json\n{PLAN}\n```",
        f"{PLAN} this trailing garbage <html> tags",
        f"Sure, here's the plan you requested: {PLAN} let me know!",
        f"<think>hmm</think>\n```json\n{PLAN}\n```",
    ],
)
def test_upstream_success_cases(content):
    r = ok(content)
    assert r.value == PLAN_OBJ
    assert [s.tool for s in r.plan.steps] == ["helmdeck.memory_store", "blog.rewrite_for_audience"]


def test_brace_inside_string_literal_is_preserved():
    obj = {"steps": [{"order": 1, "tool": "a", "args": {"text": "a } and { inside"}, "rationale": "x"}]}
    r = ok("Here: " + json.dumps(obj) + " done")
    assert r.value["steps"][0]["args"]["text"] == "a } and { inside"


def test_escaped_quote_inside_string():
    obj = {"steps": [{"tool": "a", "args": {"q": 'say "}" now \\ ok'}}]}
    r = ok("prose " + json.dumps(obj) + " trailing")
    assert r.value == obj


@pytest.mark.parametrize(
    "content,finish,cause",
    [
        ("", None, "likely_timeout"),
        ("", "content_filter", "safety_filtered"),
        ("", "length", "length_truncated"),
        ("", "", "likely_timeout"),
        # issue 16: an undocumented finish_reason is labelled as such, not sent chasing a timeout
        ("", "weird_aggregator_marker", "unknown_finish_reason"),
        ('{"steps":[{"order":1,"tool":"x","args":{', "length", "length_truncated"),
        ('{"this is not valid json at all', "stop", "constrained_deadlock"),
        ("Sorry, I can't help with that.", "content_filter", "safety_filtered"),
        ("<think>only reasoning here</think>", "stop", "reasoning_only"),
        # helmdeck calls this deadlock; we separate prose with no JSON at all.
        ("garbage", "", "no_json"),
        ("The model output is just prose about blogs.", "stop", "no_json"),
    ],
)
def test_upstream_cause_cases(content, finish, cause):
    r = parse_completion(content, finish)
    assert r.outcome == "failed"
    assert r.cause == cause
    assert r.value is None


# ---------------------------------------------------------------- beyond helmdeck


def test_unclosed_think_cut_by_length_is_length_truncated_and_json_in_it_is_ignored():
    r = parse_completion(f"<think>I will output {PLAN} after checking", "length")
    assert (r.outcome, r.cause) == ("failed", "length_truncated")
    assert "unclosed_reasoning" in r.notes


def test_unclosed_think_with_stop_is_reasoning_only():
    r = parse_completion(f"<think>draft: {PLAN}", "stop")
    assert (r.outcome, r.cause) == ("failed", "reasoning_only")


def test_orphan_closing_tag():
    r = ok(f"reasoning whose opener was dropped {{not json}}</think>\n{PLAN}")
    assert "orphan_close" in r.notes and r.value == PLAN_OBJ


def test_thinking_tag():
    assert ok(f"<thinking>{{'a': 1}}</thinking>{PLAN}").value == PLAN_OBJ


def test_fence_after_prose():
    r = ok(f"Here is the plan.\n\n```json\n{PLAN}\n```\nHope that helps.")
    assert "fenced" in r.notes


def test_unterminated_fence():
    assert ok(f"```json\n{PLAN}").value == PLAN_OBJ


def test_two_json_objects_first_plan_wins():
    other = {"steps": [{"tool": "second"}]}
    r = ok(f"{PLAN}\n{json.dumps(other)}")
    assert r.value == PLAN_OBJ


def test_non_plan_object_before_the_plan_is_skipped():
    r = ok(f'Context: {{"note": "not a plan"}} and the plan: {PLAN}')
    assert r.value == PLAN_OBJ
    assert "prose" in r.notes


def test_single_quoted_python_dict_is_repaired_not_strict():
    r = parse_completion("{'steps': [{'order': 1, 'tool': 'a', 'args': {}, 'rationale': 'x'}]}", "stop")
    assert r.outcome == "repaired" and r.cause is None
    assert r.plan.steps[0].tool == "a"
    assert "repaired" in r.notes


def test_trailing_comma_is_repaired():
    r = parse_completion('{"steps": [{"tool": "a"},]}', "stop")
    assert r.outcome == "repaired"


def test_repairable_but_length_truncated_is_never_a_success():
    r = parse_completion(PLAN[:-3], "length")
    assert (r.outcome, r.cause) == ("failed", "length_truncated")
    # Even a complete plan is not trusted when the provider says the limit was hit.
    r = parse_completion(PLAN, "max_tokens")
    assert (r.outcome, r.cause) == ("failed", "length_truncated")


def test_truncated_without_length_finish_is_repaired():
    r = parse_completion(PLAN[: PLAN.index('"complexity"')], "stop")
    assert r.outcome == "repaired"


def test_safety_finish_with_text_is_safety_filtered():
    assert parse_completion(PLAN, "SAFETY").cause == "safety_filtered"


def test_unicode():
    obj = {"steps": [{"tool": "blog.rewrite_for_audience", "args": {"title": "Über café — 日本語 🚀"}}]}
    r = ok("Voilà : " + json.dumps(obj, ensure_ascii=False) + " ✔")
    assert r.value == obj


def test_valid_json_that_is_not_a_plan_is_schema_mismatch():
    # a bare scalar ('"just a string"') has its own cause since issue 16: see test_bare_scalars
    for content in ('{"answer": 42}', "[1, 2, 3]", '{"steps": "none"}', "{}"):
        r = parse_completion(content, "stop")
        assert (r.outcome, r.cause) == ("failed", "schema_mismatch"), content
        assert r.value == json.loads(content)


def test_steps_must_be_objects():
    assert parse_completion('{"steps": [1, 2]}', "stop").cause == "schema_mismatch"


def test_case_insensitive_top_level_keys_like_go():
    r = ok('{"Steps": [{"tool": "a"}], "Complexity": "single-action"}')
    assert r.plan.steps[0].tool == "a"


def test_args_as_json_string_is_accepted():
    r = ok('{"steps": [{"tool": "a", "args": "{\\"id\\": \\"x\\"}"}]}')
    assert r.plan.steps[0].args == {"id": "x"}


def test_separate_reasoning_content_field():
    r = ok(PLAN, reasoning="long chain of thought")
    assert r.saw_reasoning and "reasoning_field" in r.notes
    r = parse_completion("", "stop", "thought a lot, said nothing")
    assert (r.outcome, r.cause) == ("failed", "reasoning_only")
    r = parse_completion("", "length", "thought until the limit")
    assert r.cause == "length_truncated"


def test_native_tool_call_with_no_text():
    # issue 16: no longer no_json; the finish_reason says tool calls but none were recorded
    r = parse_completion("", "tool_calls")
    assert r.cause == "unusable_tool_calls" and "no tool call" in r.error


def test_one_megabyte_input():
    filler = "lorem ipsum dolor sit amet " * 40000  # ~1 MB
    r = parse_completion(filler + PLAN + filler, "stop")  # its time: measure/parse_speed.py, last line
    assert r.value == PLAN_OBJ
    r = parse_completion("{" * 1_000_000, "stop")
    assert r.outcome == "failed" and r.cause == "constrained_deadlock"


@pytest.mark.parametrize("depth", [10_000])
def test_deep_nesting_does_not_escape(depth):
    r = parse_completion('{"a":' * depth + "1" + "}" * depth, "stop")
    assert r.outcome == "failed"
    r = parse_completion("[" * depth + "]" * depth, "stop")
    assert r.outcome == "failed"
    deep_args = '{"steps":[{"tool":"a","args":' + '{"a":' * depth + "1" + "}" * depth + "}]}"
    assert parse_completion(deep_args, "stop").outcome == "failed"


def test_non_string_inputs_do_not_raise():
    assert parse_completion(None).cause == "likely_timeout"
    r = parse_completion(12345, "stop")  # type: ignore[arg-type]
    assert r.outcome == "failed"


def test_json_dict_shape_for_the_cli():
    d = parse_completion(PLAN, "stop").to_json_dict()
    assert {"outcome", "cause", "value"} <= set(d)
    assert "plan" not in d
    json.dumps(d)


# ---------------------------------------------------------------- properties

_safe_text = st.text(
    alphabet=st.characters(blacklist_characters="<>[]{}`\"\\", blacklist_categories=("Cs",)), max_size=60
)
_steps = st.lists(
    st.fixed_dictionaries(
        {
            "order": st.integers(1, 20),
            "tool": st.text(max_size=30),
            "args": st.dictionaries(
                st.text(max_size=10),
                st.one_of(st.integers(), st.text(max_size=20), st.booleans(), st.none(), st.lists(st.integers(), max_size=3)),
                max_size=4,
            ),
            "rationale": st.text(max_size=60),
        }
    ),
    max_size=6,
)
_plans = st.fixed_dictionaries(
    {"steps": _steps},
    optional={
        "complexity": st.sampled_from(["single-action", "pipeline-direct", "pack-chain"]),
        "more_steps_likely": st.booleans(),
        "reasoning": st.text(max_size=80),
    },
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=400), st.sampled_from([None, "", "stop", "length", "content_filter", "MAX_TOKENS", "x"]), st.one_of(st.none(), st.text(max_size=40)))
def test_arbitrary_text_never_raises(text, finish, reasoning):
    r = parse_completion(text, finish, reasoning)
    assert r.outcome in ("strict", "repaired", "failed")
    assert (r.cause is None) == (r.outcome != "failed")


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    _plans,
    st.booleans(),
    st.booleans(),
    _safe_text,
    _safe_text,
    st.sampled_from(["think", "thinking", "reasoning", "REASONING", None]),
    st.text(max_size=80).filter(lambda s: "<" not in s and "[" not in s),
    st.sampled_from([None, 2]),
)
def test_wrapped_plans_come_back_strict_and_equal(plan, fenced, prose, lead, trail, tag, thought, indent):
    body = json.dumps(plan, indent=indent, ensure_ascii=False)
    if fenced:
        body = f"```json\n{body}\n```"
    if prose:
        body = f"{lead}\n{body}\n{trail}"
    if tag == "REASONING":
        body = f"[REASONING]{thought} {{\"decoy\": 1}}[/REASONING]\n{body}"
    elif tag:
        body = f"<{tag}>{thought} {{\"steps\": []}}</{tag}>\n{body}"
    r = parse_completion(body, "stop")
    assert r.outcome == "strict", (r.cause, r.error, body)
    assert r.value == plan
