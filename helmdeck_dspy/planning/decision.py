"""The probability that a first answer declines, where the engine gives it cheaply (issue 38, item 2).

Whether any tool fits is decided in one token of the answer, at the point the answer strategy
names (``AnswerStrategy.decision_point``: where the model-alone call list opens, ``[]`` against
``[``; under a schema's fit decision, ``false`` against ``true`` after ``"tool_fits": ``). With
``PlannerOptions.probe_decision`` on and the LM a llama.cpp server (llama-cpp-python's started by
this package, which has the route of :mod:`helmdeck_dspy.local.next_token`, or llama.cpp's own
``llama-server``, asked through its public routes), the planner asks for the next-token mass
at that point of the first answer, with the request exactly as sent, and keeps
``p_decline = P(decline) / (P(decline) + P(call))`` with the answer (``run.decision`` of its trace
record). The context already holds the request and the answer, so only the last token or two are
evaluated. Any other endpoint gives none, and the decision is the model's own choice: the route is
probed once per endpoint (``engines.features``), a missing one is said once per process, and the
record notes it (``run.decision.unavailable``).

A budget row's ``decline_thresholds`` (per strategy, fitted by ``calibrate --decisions``) turns the
probability into the decision (:func:`threshold_action`): a decline under the threshold is asked
again for at least one call (``AnswerStrategy.call_ask``), a call at or over it is dropped
(:func:`declined_parse`); ``run.decision.overruled`` says which, so a re-score does the same.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from helmdeck_dspy.decoding.parsing import ParseResult
from helmdeck_dspy.program.strategies import AnswerStrategy

DECISION_KEY = "decision"
"""``run`` key of a trace record that holds its first answer's decline probability."""


NEXT_TOKEN = "next-token probabilities"
FALLBACK = "the decline threshold is skipped and the model's own choice stands"


def decline_probability(lm: Any, strategy: AnswerStrategy, completion: Any, timeout_s: float = 60.0) -> dict[str, Any] | None:
    """``{"p_decline", "covered", "evaluated"}`` for ``completion`` (the first answer's exchange);
    ``{"unavailable": why}`` when the endpoint cannot give it (see the module docstring); None when
    the answer holds no decision point or the endpoint did not answer this time. ``covered`` is
    the mass of the two starts together (near 1: the point is where the model decides)."""
    from helmdeck_dspy.engines.features import FEATURES
    from helmdeck_dspy.engines.streaming import endpoint_of  # imports dspy
    from helmdeck_dspy.local.next_token import NextTokenRequest, RouteMissing, ask_next_token

    api_base, model = endpoint_of(lm), str(getattr(lm, "model", ""))
    if not api_base or not model.startswith("llamacpp/"):
        reason = "only a llama.cpp server started by helmdeck-dspy gives next-token probabilities"
        FEATURES.settle_absent(NEXT_TOKEN, api_base or model, reason, FALLBACK)
        return {"unavailable": reason}
    known = FEATURES.absent(NEXT_TOKEN, api_base)
    if known is not None:
        return {"unavailable": known}
    point = strategy.decision_point(completion.content or "")
    if point is None:
        return None
    prefix, decline, call = point
    messages = ([{"role": "system", "content": completion.system}] if completion.system else []) + completion.messages
    try:
        answer = ask_next_token(api_base, NextTokenRequest(messages=messages, prefix=prefix, starts=[decline, call]),
                                timeout_s)
    except RouteMissing as exc:
        FEATURES.settle_absent(NEXT_TOKEN, api_base, str(exc), FALLBACK)
        return {"unavailable": str(exc)}
    if answer is None:
        return None
    calls = answer.mass[call] - (answer.mass[decline] if decline.startswith(call) else 0.0)
    covered = answer.mass[decline] + calls
    if covered <= 0:
        return None
    return {"p_decline": round(answer.mass[decline] / covered, 6), "covered": round(covered, 6),
            "evaluated": answer.evaluated}


def threshold_action(p_decline: float, declined: bool, threshold: float | None) -> str | None:
    """What a decline threshold does to a first answer: ``call`` (it declined, under the threshold:
    asked again for at least one call), ``decline`` (it called, at or over it: its calls dropped), or
    None (it stands)."""
    if threshold is None:
        return None
    if declined and p_decline < threshold:
        return "call"
    if not declined and p_decline >= threshold:
        return "decline"
    return None


def declined_parse(parse: ParseResult) -> ParseResult:
    """``parse`` with its plan's steps dropped (a call a threshold overruled), noted ``declined_by_threshold``."""
    assert parse.plan is not None
    return dataclasses.replace(parse, plan=parse.plan.model_copy(update={"steps": []}),
                               notes=(*parse.notes, "declined_by_threshold"))


def declined_by_threshold(run: dict[str, Any] | None) -> bool:
    """Whether a trace record's ``run`` says a threshold dropped its answer's calls (re-scoring it
    drops them too)."""
    decision = (run or {}).get(DECISION_KEY)
    return isinstance(decision, dict) and decision.get("overruled") == "decline"
