"""The decline probability on a real model (issue 38, item 2): the route added to the local server
reads the next-token mass at the answer's decision point, evaluating only what the context lacks."""

from __future__ import annotations

import warnings

import pytest

from helmdeck_dspy.catalog.models import Pack, RoutingGuide
from tests.local.conftest import REAL_MODEL, real_model_marks

pytestmark = real_model_marks()

CATALOG = RoutingGuide(packs=(
    Pack(name="weather.current", description="Current weather for a city.",
         parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
))


@pytest.fixture(autouse=True)
def _stop(stop_local_servers):
    yield


@pytest.mark.parametrize(("strategy", "intent", "declines"), [
    ("plain", "What is the weather in Oslo right now?", False),
    ("plain", "Hello, how are you?", True),  # answered "[]", one token in Qwen's vocabulary
    ("schema", "What is the weather in Oslo right now?", None),
])
def test_the_decline_probability_agrees_with_the_greedy_answer(tmp_path, strategy, intent, declines):
    from helmdeck_dspy.engines.lm_spec import make_lm
    from helmdeck_dspy.planning.planner import Planner
    from helmdeck_dspy.traces.io import read_jsonl_traces

    lm = make_lm(f"local:{REAL_MODEL}", cache=False, num_retries=0, sampling={"temperature": 0.0, "seed": 7})
    record = tmp_path / "rec.jsonl"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        planner = Planner.for_model(f"local/{REAL_MODEL}-instruct", lm=lm, catalog=CATALOG, history=None,
                                    use_filter=False, cache=False, answer_strategy=strategy, probe_decision=True,
                                    record_path=record)
    result = planner.plan(intent)
    assert result.ok and result.p_decline is not None and 0.0 <= result.p_decline <= 1.0
    if declines is not None:
        assert (not result.steps) is declines, "precondition: the 0.5B answers this request as it did when written"
    # temperature 0 takes the likeliest token: an answer that calls had the call as the likelier start
    assert (result.p_decline < 0.5) is bool(result.steps)
    (rec,) = read_jsonl_traces(record)
    decision = rec.run["decision"]
    assert decision["p_decline"] == result.p_decline and decision["covered"] > 0.5
    assert 1 <= decision["evaluated"] <= 8  # the request was already in the context: at most a code fence more
