"""PlanAdapter: how a plan module talks to its LM.

One request per call, built by the call's answer strategy rather than by DSPy's chat formatting:
the :class:`~helmdeck_dspy.program.spec.PromptSpec` the caller set names the strategy
(``program.strategies``), whose ``messages`` renders the request and whose ``parse`` reads the
answer. This adapter adds what every strategy shares: an ask again's turns after the request, the
output cap, sampling and response format on the wire, and the completion's bookkeeping.

There is no second "JSON fallback" call, and output that hit the token limit is never accepted:
a failure raises :class:`PlanParseError` carrying the cause and the raw completion.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import dspy
from dspy.lm15 import Config, Message, Request
from dspy.utils.exceptions import AdapterParseError

from helmdeck_dspy.decoding.causes import FailureCause
from helmdeck_dspy.decoding.parsing import ParseResult, parse_completion
from helmdeck_dspy.program.calls import (
    capture_completions,
    completion_from_response,
    log_completion,
)
from helmdeck_dspy.program.spec import PromptSpec
from helmdeck_dspy.program.strategies import strategy_named

__all__ = ["PlanAdapter", "PlanParseError", "capture_completions"]

_CONFIG_KEYS = ("max_tokens", "temperature", "top_p", "stop", "seed", "response_format")

class PlanParseError(AdapterParseError):
    """A completion that yielded no plan. A subclass of DSPy's AdapterParseError, so optimizers
    count it as a failed example rather than crashing.

    Attributes:
        cause: The failure cause (see :mod:`helmdeck_dspy.decoding.causes`).
        raw: The completion's visible content as returned.
        finish_reason: The provider's finish_reason.
        reasoning: The separate reasoning field, if any.
        result: The full :class:`ParseResult`.
    """

    def __init__(self, signature: Any, result: ParseResult, raw: str, reasoning: str | None) -> None:
        self.cause: FailureCause | None = result.cause
        self.raw = raw
        self.finish_reason = result.finish_reason_raw
        self.reasoning = reasoning
        self.result = result
        super().__init__(
            adapter_name="PlanAdapter",
            signature=signature,
            lm_response=raw,
            message=f"no plan: {result.cause} (finish_reason={result.finish_reason_raw!r}): {result.error}",
        )


class _DropTruncationNotice(logging.Filter):
    """DSPy logs every length-cut response; the planner reports them as failure causes instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "response was truncated" not in record.getMessage()


_NOTICE_FILTER = _DropTruncationNotice()


class PlanAdapter(dspy.Adapter):
    """Formats plan requests and decodes plan completions (see module docstring)."""

    def __init__(self, spec: PromptSpec | None = None) -> None:
        super().__init__()
        self.spec = spec or PromptSpec()
        lm_log = logging.getLogger("dspy.clients.lm")
        if _NOTICE_FILTER not in lm_log.filters:
            lm_log.addFilter(_NOTICE_FILTER)

    # -------------------------------------------------------------- rendering

    def format(self, signature: Any, demos: list[Any], inputs: dict[str, Any]) -> list[dict[str, str]]:
        """The request's messages: the strategy's, then any ask again's turns."""
        strategy = strategy_named(self.spec.strategy)
        return [*strategy.messages(self.spec, signature.instructions, demos, inputs), *self.again_turns()]

    def again_turns(self) -> list[dict[str, str]]:
        """An ask again's turns after the request: the first answer and the ask (none on a first call)."""
        if self.spec.first_answer is None or self.spec.again_ask is None:
            return []
        return [{"role": "assistant", "content": self.spec.first_answer}, {"role": "user", "content": self.spec.again_ask}]

    # -------------------------------------------------------------- decoding

    def parse(self, signature: Any, completion: str) -> dict[str, Any]:
        """Decode text alone (no finish_reason known)."""
        return self._fields(signature, parse_completion(completion), completion, None)

    def _fields(self, signature: Any, result: ParseResult, raw: str, reasoning: str | None) -> dict[str, Any]:
        if result.plan is None:
            raise PlanParseError(signature, result, raw, reasoning)
        plan = result.plan
        return {
            "steps": plan.steps,
            "complexity": plan.complexity or "",
            "more_steps_likely": bool(plan.more_steps_likely),
            "reasoning": plan.reasoning or "",
        }

    # -------------------------------------------------------------- the call

    def _request(self, lm: Any, lm_kwargs: dict[str, Any], signature: Any, demos: list[Any], inputs: dict[str, Any]):
        messages = self.format(signature, demos, inputs)
        merged = {**lm.kwargs}
        if self.spec.max_tokens is not None:
            merged["max_tokens"] = self.spec.max_tokens
        for key in ("temperature", "seed"):  # the spec's sampling (it keeps what the LM was built with)
            if getattr(self.spec, key) is not None:
                merged[key] = getattr(self.spec, key)
        merged.update(lm_kwargs)
        merged.pop("response_format", None)
        schema = self.spec.answer_schema
        if schema is not None and self.spec.schema_wire == "json_schema":
            merged["response_format"] = {"type": "json_schema", "name": "plan", "schema": schema}
        elif self.spec.json_object:
            merged["response_format"] = {"type": "json_object"}
        config = {k: merged[k] for k in _CONFIG_KEYS if merged.get(k) is not None}
        if schema is not None and self.spec.schema_wire == "json_object":
            # llama-cpp-python's server reads a schema only inside a json_object response_format,
            # a form lm15's canonical response_format cannot carry: it goes verbatim as an extension.
            config["extensions"] = {"response_format": {"type": "json_object", "schema": schema}}
        convo = tuple(
            Message.user(m["content"]) if m["role"] == "user" else Message.assistant(m["content"]) for m in messages[1:]
        )
        call_kwargs = {k: merged[k] for k in ("cache", "rollout_id") if merged.get(k) is not None}
        request = Request(model=lm.model, system=messages[0]["content"] or None, messages=convo,
                          config=Config(**config))
        return request, call_kwargs, messages, config

    def _finish(self, signature: Any, response: Any, messages: list[dict[str, str]], config: dict, t0: float) -> list[dict[str, Any]]:
        latency = (time.perf_counter() - t0) * 1000
        completion = completion_from_response("plan", response, messages[0]["content"], messages[1:], latency, config)
        completion.parse = strategy_named(self.spec.strategy).parse(completion)
        log_completion(completion)
        return [self._fields(signature, completion.parse, completion.content, completion.reasoning)]

    def __call__(self, lm: Any, lm_kwargs: dict[str, Any], signature: Any, demos: list[Any], inputs: dict[str, Any]):
        request, kw, messages, config = self._request(lm, lm_kwargs, signature, demos, inputs)
        t0 = time.perf_counter()
        return self._finish(signature, lm(request, **kw), messages, config, t0)

    async def acall(self, lm: Any, lm_kwargs: dict[str, Any], signature: Any, demos: list[Any], inputs: dict[str, Any]):
        request, kw, messages, config = self._request(lm, lm_kwargs, signature, demos, inputs)
        t0 = time.perf_counter()
        return self._finish(signature, await lm.acall(request, **kw), messages, config, t0)
