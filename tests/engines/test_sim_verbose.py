"""A verbose simulated answer: each step's rationale stays one sentence, the extra words (and the
tokens that can overrun a small cap) go in the answer's reasoning."""

from __future__ import annotations

import json

from helmdeck_dspy.program.calls import raw_finish_reason
from tests.engines.test_sim_knobs import DEV, engine, request, text_of


def _answer(intent: str, **shape) -> tuple[dict, int]:
    resp = engine(seed=3, **shape).complete(request(intent, "full_steps", 4000))
    assert raw_finish_reason(resp) == "stop"
    return json.loads(text_of(resp)), resp.usage.output_tokens


def test_verbose_rationales_are_one_sentence_and_the_extra_words_are_in_the_reasoning():
    intent = next(t.intent for t in DEV if len(_answer(t.intent)[0]["steps"]) >= 2)
    plain, plain_tokens = _answer(intent)
    verbose, verbose_tokens = _answer(intent, verbose_rate=1.0, verbose_tokens_per_step=200, verbose_sigma=0.0)
    assert len(verbose["steps"]) >= 2
    assert [s["rationale"] for s in verbose["steps"]] == [s["rationale"] for s in plain["steps"]]
    for step in verbose["steps"]:
        assert step["rationale"].endswith(".") and "the user wants this part" not in step["rationale"]
    extra_words = len(verbose["reasoning"].split()) - len(plain["reasoning"].split())
    assert extra_words == len(verbose["steps"]) * int(200 * 0.75)
    assert verbose_tokens > plain_tokens + 100 * len(verbose["steps"])
