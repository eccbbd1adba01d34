"""``run`` applies ``plan``'s input bound (issue 52, item 4): a request larger than the model's
budget row is refused before any model call, on every surface, since the bound is the planner's."""

from __future__ import annotations

import pytest

from helmdeck_dspy.errors import InputTooLargeError
from helmdeck_dspy.planning.execution import StepOutcome
from helmdeck_dspy.planning.planner import Planner

BIG = "plan my week " * 20_000  # far over any row's input_tokens


def test_run_loop_refuses_an_over_large_request_before_any_model_call(tmp_path):
    replay = tmp_path / "answers.jsonl"
    replay.write_text("", encoding="utf-8")  # a model call would fail differently: no answer to replay
    planner = Planner.for_model("local/qwen2.5-coder-1.5b-instruct", lm=f"replay:{replay}", history=None)
    with pytest.raises(InputTooLargeError, match="input tokens"):
        planner.run_loop(BIG, lambda step: StepOutcome(text="ran"))
