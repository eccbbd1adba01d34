"""``helmdeck.route`` refuses an intent larger than the model's input budget before ranking, as
``helmdeck.plan`` does (found by measure/fuzz_servers.py: a 3.9 MB intent kept the server ranking
for 1.6 s, once holding a stdio exit 2.09 s past the end of input, where the same intent sent to
helmdeck.plan is refused in 0.15-0.3 s)."""

from __future__ import annotations

import pytest

from helmdeck_dspy.errors import InputTooLargeError
from helmdeck_dspy.serve.config import ServeConfig
from helmdeck_dspy.serve.service import PlanService
from helmdeck_dspy.serve.wire import RouteRequest

MEGABYTE = "plan my week " * (1024 * 1024 // 13)


def test_route_refuses_an_intent_over_the_input_budget(tmp_path):
    service = PlanService(ServeConfig(lm_spec="sim:frontier-like", history=False))
    with pytest.raises(InputTooLargeError) as refused:
        service.route(RouteRequest(user_intent=MEGABYTE, model="openai/gpt-4o"))
    assert refused.value.argument == "user_intent"
    small = service.route(RouteRequest(user_intent="rewrite my notes as a blog post", model="openai/gpt-4o"))
    assert small.recommendation is not None
