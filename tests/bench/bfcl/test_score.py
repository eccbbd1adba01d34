"""Plan accuracy against BFCL gold calls."""

from __future__ import annotations

import pytest

from helmdeck_dspy.bench.bfcl.load import BfclQuestion, GoldCall, load_bfcl
from helmdeck_dspy.bench.bfcl.score import (
    Call,
    calls_from_steps,
    example_call,
    score_calls,
    summarise,
    value_matches,
)


@pytest.fixture
def q0(bfcl_dir) -> BfclQuestion:
    return load_bfcl(bfcl_dir).questions[0]


def convert(amount, source="EUR", **extra) -> Call:
    return Call(name="money.convert", args={"amount": amount, "source": source, "target": "JPY", **extra})


def test_parallel_calls_match_in_any_order(q0):
    s = score_calls(q0, [convert(25), convert(10)])
    assert s.exact and s.matched_calls == 2 and s.problems == []


def test_ordered_scoring_when_order_matters(q0):
    s = score_calls(q0, [convert(25), convert(10)], order_free=False)
    assert not s.exact and s.matched_calls == 0
    assert "amount=25" in s.problems[0]


def test_each_call_is_used_once(q0):
    s = score_calls(q0, [convert(10), convert(10)])
    assert not s.exact and s.matched_calls == 1


def test_extra_call_breaks_exactness_but_not_recall(q0):
    s = score_calls(q0, [convert(10), convert(25), convert(99)])
    assert not s.exact and s.matched_calls == 2 and s.predicted_calls == 3
    summary = summarise([s])
    assert summary.call_recall == 1.0 and summary.call_precision == pytest.approx(0.6667)


@pytest.mark.parametrize(
    ("call", "problem"),
    [
        (Call(name="money.convert", args={"amount": 10, "source": "EUR"}), "missing required argument 'target'"),
        (convert(10, bogus=1), "unexpected argument 'bogus'"),
        (convert(10, rounding=3), "rounding=3 not among [2]"),
        (Call(name="other.tool", args={}), "no call to money.convert"),
    ],
)
def test_mismatches_say_why(q0, call, problem):
    s = score_calls(q0, [call])
    assert not s.exact
    assert any(problem in p for p in s.problems), s.problems


def test_optional_argument_may_be_left_out_or_given_an_acceptable_value(q0):
    assert score_calls(q0, [convert(10, rounding=2), convert(25)]).exact
    assert score_calls(q0, [convert(10, source="Euro"), convert(25.0)]).exact  # case-insensitive; 25 == 25.0


@pytest.mark.parametrize(
    ("value", "acceptable", "ok"),
    [
        (10, 10.0, True), ("10", 10, True), (True, 1, False), (1, True, False), (True, True, True),
        ("New York, NY", "new york ny", True), ("Boston", "Austin", False),
        ([1, 2], [1, 2], True), ([2, 1], [1, 2], False), ((1.0, 2.0), [1, 2], True),
        ({"a": 1}, {"a": [1], "b": [""]}, True), ({"a": 1, "c": 2}, {"a": [1]}, False), ({}, {"a": [1]}, False),
        (None, None, True), ("x", None, False),
    ],
)
def test_value_matching(value, acceptable, ok):
    assert value_matches(value, acceptable) is ok


def test_steps_become_calls_and_unknown_never_matches():
    steps = [{"tool": "money.convert", "args": {"amount": 1}}, {"tool": "", "args": {}}, {"tool": "unknown", "args": "x"}]
    assert calls_from_steps(steps) == [Call(name="money.convert", args={"amount": 1}), Call(name="unknown", args={})]


def test_example_call_instantiates_nested_gold():
    gold = GoldCall(name="f", args={"who": [{"adults": [2], "kids": ["", 0]}], "opt": [""], "n": [3, 4]})
    assert example_call(gold) == Call(name="f", args={"who": {"adults": 2, "kids": 0}, "n": 3})


def test_oracle_plans_score_exact_on_the_shared_data(shared_dir):
    data = load_bfcl(shared_dir / "data" / "bfcl")
    scores = [score_calls(q, list(reversed([example_call(g) for g in q.gold]))) for q in data.questions]
    summary = summarise(scores)
    assert summary.exact == summary.n == 400
    # Dropping the last call of every plan must cost exactly one matched call per question.
    cut = summarise([score_calls(q, [example_call(g) for g in q.gold][:-1]) for q in data.questions])
    assert cut.exact == 0
    assert cut.call_recall == pytest.approx((sum(len(q.gold) for q in data.questions) - 400) /
                                            sum(len(q.gold) for q in data.questions), abs=1e-4)
