"""The probability that a first answer declines, where the engine gives it cheaply (issue 38, item 2).

Whether any tool fits is decided in one token of the answer. In the model-alone call list
(``plain``, ``draft``) it is the token that opens the list: Qwen's vocabulary holds ``[]`` as one
token, so a decline is a token starting ``[]`` and a call one starting ``[`` otherwise (``[``,
``[{``, ``[\n``...), read where the list opens (after any code fence); under the schema strategy's
fit decision, ``false`` or ``true`` after ``"tool_fits": ``. With
``PlannerOptions.probe_decision`` on and the LM a llama.cpp server started by this package (which
has the route of :mod:`helmdeck_dspy.local.next_token`), the planner asks for the next-token mass
at that point of the first answer, with the request exactly as sent, and keeps
``p_decline = P(decline) / (P(decline) + P(call))`` with the answer (``run.decision`` of its trace
record). The context already holds the request and the answer, so only the last token or two are
evaluated. Any other endpoint gives none (None), and the decision is the model's own choice.
"""

from __future__ import annotations

import re
from typing import Any

from helmdeck_dspy.domain import MODEL_ALONE_STRATEGIES

DECISION_KEY = "decision"
"""``run`` key of a trace record that holds its first answer's decline probability."""
_FIT_FIELD = re.compile(r'"tool_fits"\s*:\s*')


def decision_point(strategy: str, content: str) -> tuple[str, str, str] | None:
    """Where ``content`` makes the call-or-not decision: the answer before that token, the start of
    a decline and the start of any answer there (a call's, or a decline's when it begins the same
    way: ``[`` holds ``[]``); None when it holds no such point."""
    if strategy in MODEL_ALONE_STRATEGIES:
        at = content.find("[")
        return (content[:at], "[]", "[") if at >= 0 else None
    found = _FIT_FIELD.search(content)
    return (content[: found.end()], "false", "true") if found else None


def decline_probability(lm: Any, strategy: str, completion: Any, timeout_s: float = 60.0) -> dict[str, Any] | None:
    """``{"p_decline", "covered", "evaluated"}`` for ``completion`` (the first answer's exchange), or
    None when the endpoint cannot tell (see the module docstring). ``covered`` is the mass of the
    two starts together (near 1: the point is where the model decides)."""
    from helmdeck_dspy.local.next_token import NextTokenRequest, ask_next_token

    api_base = (getattr(lm, "kwargs", None) or {}).get("api_base")
    point = decision_point(strategy, completion.content or "")
    if not api_base or not str(getattr(lm, "model", "")).startswith("llamacpp/") or point is None:
        return None
    prefix, decline, call = point
    messages = ([{"role": "system", "content": completion.system}] if completion.system else []) + completion.messages
    answer = ask_next_token(api_base, NextTokenRequest(messages=messages, prefix=prefix, starts=[decline, call]),
                            timeout_s)
    if answer is None:
        return None
    calls = answer.mass[call] - (answer.mass[decline] if decline.startswith(call) else 0.0)
    covered = answer.mass[decline] + calls
    if covered <= 0:
        return None
    return {"p_decline": round(answer.mass[decline] / covered, 6), "covered": round(covered, 6),
            "evaluated": answer.evaluated}
