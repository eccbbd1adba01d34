"""The model alone: a plain function-calling prompt, the row every planner row is paired against.

The prompt holds the question's own functions as JSON (name, description, JSON Schema
parameters; a catalog's pipelines as functions named by their ids, without parameters), the request, and one sentence asking for a JSON list of ``{name, arguments}``
(``[]`` when no function fits). There are no planner instructions, no demos and no catalog
selection. The answer is decoded here (:func:`decode_plain`) and scored by the same call matcher
as the planner's plans (:func:`~helmdeck_dspy.bench.bfcl.score.score_calls`).

A plain exchange is recorded as a trace record with ``prompt_variant = "plain"`` (see
:data:`PLAIN_VARIANT`), so ``bench bfcl --traces`` re-scores it without a model.
"""

from __future__ import annotations

import time
from typing import Any, Literal, NamedTuple

from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.decoding.call_list import decode_calls
from helmdeck_dspy.decoding.reasoning import split_reasoning
from helmdeck_dspy.program.plain_prompt import plain_functions, plain_request
from helmdeck_dspy.bench.bfcl.score import Call

PLAIN_VARIANT = "plain"
"""The ``prompt_variant`` of a plain exchange's trace record."""

def plain_prompt(intent: str, catalog: RoutingGuide) -> str:
    """The one user message of a plain request (:mod:`helmdeck_dspy.program.plain_prompt`)."""
    return plain_request(plain_functions(catalog), intent)


class PlainAnswer(NamedTuple):
    """A decoded plain answer: the calls, and whether decoding needed repair (or failed)."""

    calls: list[Call]
    outcome: Literal["strict", "repaired", "failed"]


def decode_plain(content: str | None, finish_reason: str | None = None) -> PlainAnswer:
    """Decode a plain answer (:func:`~helmdeck_dspy.decoding.call_list.decode_calls`). A ``length``
    finish is never a success, as for plans."""
    if finish_reason == "length" or not content:
        return PlainAnswer([], "failed")
    calls, outcome = decode_calls(split_reasoning(content).visible.strip())
    return PlainAnswer([Call(name=n, args=a) for n, a in calls or ()], outcome)


def ask_plain(lm: Any, intent: str, catalog: RoutingGuide, *, max_tokens: int,
              sampling: dict[str, Any] | None = None) -> Any:
    """One plain request to ``lm`` (a ``dspy.LM``): a :class:`~helmdeck_dspy.program.calls.Completion`.
    ``sampling`` (temperature, seed; default: the LM's own) is sent with it."""
    return ask_messages(lm, [{"role": "user", "content": plain_prompt(intent, catalog)}], max_tokens=max_tokens,
                        sampling=sampling)


def ask_messages(lm: Any, messages: list[dict[str, str]], *, max_tokens: int,
                 sampling: dict[str, Any] | None = None) -> Any:
    """One uncached request of ``messages`` (user and assistant turns) to ``lm``: a
    :class:`~helmdeck_dspy.program.calls.Completion`. The answer is a JSON list of calls: a
    streaming endpoint stops where that list closes, as for the ``plain`` strategy."""
    from dspy.lm15 import Config, Message, Request

    from helmdeck_dspy.engines.call_control import expecting

    from helmdeck_dspy.program.calls import completion_from_response

    if sampling is None:  # the LM's own sampling (make_lm(sampling=...)), as a levers run builds it
        sampling = {k: lm.kwargs[k] for k in ("temperature", "seed") if lm.kwargs.get(k) is not None}
    config = {"max_tokens": max_tokens, **sampling}
    turns = tuple(Message.user(m["content"]) if m["role"] == "user" else Message.assistant(m["content"])
                  for m in messages)
    request = Request(model=lm.model, messages=turns, config=Config(**config))
    t0 = time.perf_counter()
    with expecting("list"):
        response = lm(request, cache=False)
    latency = (time.perf_counter() - t0) * 1000
    return completion_from_response("plan", response, "", messages, latency, config)


def record_plain(lm: Any, lm_spec: str, intent: str, task_id: str, catalog: RoutingGuide, path: Any, budget: Any,
                 run: dict[str, Any]) -> None:
    """Ask the model alone and append the exchange to ``path`` (a transport failure is recorded as
    an error, which a resumed run asks again)."""
    from helmdeck_dspy.engines.lm_spec import trace_source
    from helmdeck_dspy.recording.exchanges import record_exchanges

    common = dict(source=trace_source(lm_spec), budget=budget, variant=PLAIN_VARIANT, intent=intent, task_id=task_id,
                  secrets=[], run=run)
    try:
        completion = ask_plain(lm, intent, catalog, max_tokens=budget.output_tokens)
    except Exception as exc:  # noqa: BLE001 - recorded, and asked again on resume
        record_exchanges(path, [], error=f"{type(exc).__name__}: {exc}", max_tokens=budget.output_tokens, **common)
        return
    record_exchanges(path, [completion], **common)
