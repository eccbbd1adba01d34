"""What one plan call sends the model: :class:`PromptSpec`, and the answer strategies that shape it.

A spec is built once per request (``planning.prompt.resolve_prompt``), frozen, and handed to the
plan module through ``dspy.context`` under :data:`SPEC_KEY`, never stored on the module, so
concurrent requests over one loaded program cannot see each other's catalogs. The adapter renders
exactly what the spec says; the recorded run stamps its :meth:`PromptSpec.stamp`.

An *answer strategy* is how the model answers and what, if anything, constrains it. Each is one
named object in :data:`STRATEGIES`, chosen by name (a budget row's ``answer_strategy``, or the
planner's option):

- ``free``: JSON text in the variant's answer format, decoded freely (a JSON-object response
  format when the row wants strict JSON, never on Tier C);
- ``schema``: JSON text decoded under the selected catalog's answer schema
  (:func:`~helmdeck_dspy.program.answer_schema.plan_schema`), sent on the endpoint's wire;
- ``native``: the selected catalog also offered as native function tools; the model may answer
  with tool calls instead of JSON text;
- ``plain``: the model-alone prompt verbatim (``program.plain_prompt``: the tools as JSON
  functions, the question, a JSON list of calls, ``[]`` for none), no instructions or demos,
  decoded freely; the answer then goes through the planner's checks (names outside the catalog
  mapped to a near miss or demoted, arguments checked and coerced);

Two more were measured on the dev sets and retired (``domain.RETIRED_STRATEGIES``;
docs/results/strategies.md): ``decide`` and ``draft``. Their recorded answers, call lists, still
re-score.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.decoding.answer_end import AnswerKind
from helmdeck_dspy.domain import MODEL_ALONE_STRATEGIES, StrategyName, Variant
from helmdeck_dspy.program.answer_schema import SchemaWire, plan_schema
from helmdeck_dspy.program.demo_pool import PoolDemo
from helmdeck_dspy.program.native_tools import NativeTool, native_tools

SPEC_KEY = "helmdeck_prompt_spec"
"""The ``dspy.context`` key a plan call's :class:`PromptSpec` travels under."""


class PromptSpec(BaseModel):
    """Everything one plan request shows and asks of the model (see the module docstring).

    Attributes:
        variant: ``full_steps`` or ``single_pick``.
        strategy: The answer strategy's name.
        instructions: The instruction text (None: the program's own).
        catalog: The selected catalog's text, as the prompt carries it.
        catalog_in_system: The catalog goes in the system message (prefix-caching models).
        max_tokens: The output cap.
        temperature / seed: The sampling sent with the call, any the LM was built with included
            (None: none sent).
        json_object: Ask for a JSON-object response format.
        tools: Native function tools offered (the ``native`` strategy).
        answer_schema: The JSON Schema the answer is decoded under (the ``schema`` strategy).
        schema_wire: How the schema travels (see :data:`~helmdeck_dspy.program.answer_schema.SchemaWire`).
        demo_tools: A program demo is shown only when every tool it names is among these.
        pool_demos: Demos chosen for this request from the program's compiled pool.
        first_answer / again_ask: An ask again in the same conversation: the first answer (the
            assistant turn) and the user turn after it (None on a first call; ``planning.decision``).
    """

    model_config = ConfigDict(frozen=True)

    variant: Variant = "full_steps"
    strategy: StrategyName = "free"
    instructions: str | None = None
    catalog: str = ""
    catalog_in_system: bool = False
    max_tokens: int | None = None
    temperature: float | None = None
    seed: int | None = None
    json_object: bool = False
    tools: tuple[NativeTool, ...] = ()
    answer_schema: dict[str, Any] | None = None
    schema_wire: SchemaWire = "json_schema"
    demo_tools: frozenset[str] | None = None
    pool_demos: tuple[PoolDemo, ...] = ()
    first_answer: str | None = None
    again_ask: str | None = None

    def stamp(self) -> dict[str, Any]:
        """What a trace record keeps of the spec: the strategy, the wire, the demos and a hash of the rest."""
        body = self.model_dump(mode="json", exclude={"pool_demos"})
        for key in ("first_answer", "again_ask"):  # fields added since specs were first hashed: unset, the hash is unchanged
            if body[key] is None:
                del body[key]
        body["demo_tools"] = sorted(self.demo_tools) if self.demo_tools is not None else None
        digest = hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]
        return {"strategy": self.strategy, **({"wire": self.schema_wire} if self.answer_schema is not None else {}),
                "spec_sha": digest}


@dataclass(frozen=True)
class AnswerShape:
    """What a strategy adds to a spec."""

    json_object: bool = False
    tools: tuple[NativeTool, ...] = ()
    answer_schema: dict[str, Any] | None = None
    schema_wire: SchemaWire = "json_schema"


@dataclass(frozen=True)
class AnswerStrategy:
    """One way of answering (see the module docstring)."""

    name: StrategyName
    description: str
    answer_kind: AnswerKind | None = None  # the one JSON value the answer is, where the stream may stop

    def shape(self, catalog: RoutingGuide | None, variant: str, *, strict_json: bool, wire: SchemaWire,
              fit_decision: bool) -> AnswerShape:
        """The answer shape over the selected ``catalog`` (None: a request with no catalog yet, as at
        compile time, gets the free shape)."""
        if self.name in MODEL_ALONE_STRATEGIES:
            return AnswerShape()
        if catalog is None or self.name == "free":
            return AnswerShape(json_object=strict_json and self.name != "native")
        if self.name == "native":
            return AnswerShape(tools=tuple(native_tools(catalog)))
        return AnswerShape(answer_schema=plan_schema(catalog, variant, fit_decision), schema_wire=wire)


STRATEGIES: dict[str, AnswerStrategy] = {s.name: s for s in (
    AnswerStrategy("free", "JSON text in the variant's answer format, decoded freely"),
    AnswerStrategy("schema", "JSON text decoded under the selected catalog's answer schema", "object"),
    AnswerStrategy("native", "the selected catalog also offered as native function tools"),
    AnswerStrategy("plain", "the model-alone prompt verbatim, its JSON list of calls through the planner's checks",
                   "list"),
)}

CALL_LIST_STRATEGIES = frozenset({*MODEL_ALONE_STRATEGIES, "decide", "draft"})
"""Strategies whose answer is a JSON list of calls (``decoding.call_list``), not a plan object (the
retired ``decide`` and ``draft`` strategies' plan records hold one too, so their answers re-score)."""


def answers_in_call_list(run: dict[str, Any] | None) -> bool:
    """Whether a trace record's ``run`` says its answer was asked for as a call list."""
    prompt = (run or {}).get("prompt")
    return isinstance(prompt, dict) and prompt.get("strategy") in CALL_LIST_STRATEGIES
