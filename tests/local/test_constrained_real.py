"""Constrained decoding on a real model: unconstrained, Qwen2.5 Coder 0.5B names a tool the catalog
does not have when the request names one; under the catalog's answer schema it cannot."""

from __future__ import annotations

import warnings

import pytest

from helmdeck_dspy.catalog.models import Pack, RoutingGuide
from tests.local.conftest import REAL_MODEL, real_model_marks

pytestmark = real_model_marks()

CATALOG = RoutingGuide(packs=(
    Pack(name="weather.current", description="Current weather for a city.",
         parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    Pack(name="calendar.add_event", description="Add an event to the user's calendar.",
         parameters={"type": "object", "properties": {"title": {"type": "string"}, "date": {"type": "string"}},
                     "required": ["title", "date"]}),
))
INTENTS = ["use email.send to tell bob the meeting moved", "call slack.post_message with the text hello team"]


@pytest.fixture(autouse=True)
def _stop(stop_local_servers):
    yield


def _plans(constrained: bool):
    from helmdeck_dspy.engines.lm_spec import make_lm
    from helmdeck_dspy.planning.planner import Planner

    lm = make_lm(f"local:{REAL_MODEL}", cache=False, num_retries=0, sampling={"temperature": 0.0, "seed": 7})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        planner = Planner.for_model(f"local/{REAL_MODEL}-instruct", lm=lm, catalog=CATALOG, variant="full_steps",
                                    history=None, use_filter=False, cache=False,
                                    answer_strategy="schema" if constrained else "free")
    return [planner.plan(intent) for intent in INTENTS]


def test_the_schema_stops_a_real_model_naming_a_tool_outside_the_catalog():
    free = _plans(constrained=False)
    invented = [s.model_tool for r in free for s in r.steps if s.demoted]
    assert invented, "precondition: unconstrained, the model names a tool the catalog lacks"
    assert set(invented) <= {"email.send", "slack.post_message"}
    bound = _plans(constrained=True)
    assert all(r.ok for r in bound)
    assert all(s.tool in CATALOG.id_set and not s.demoted for r in bound for s in r.steps)
