"""What the strategies that answer with a plan object share (``free`` and ``schema``).

The request, as :meth:`PlanObject.messages` renders it:

- system message: the instructions (the plain tool-list text for a catalog without pipelines,
  else the program's own), the answer format, and, when the model supports prefix caching, the
  catalog block, so it is byte-identical across calls for the same model and catalog;
- the program's demos as user/assistant pairs that never repeat the catalog (only those whose
  tools are all in the planner's catalog), then the request's pool demos, each with its own tools;
- the user message: the catalog block first when it is not in the system message, the request,
  the optional context and any prior steps, the closing line and the no-fit sentence.

The answer is one JSON object (``{"steps": [...]}``, ``tool_fits`` first under a schema with the
fit decision), read by :func:`~helmdeck_dspy.decoding.parsing.parse_completion`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel

from helmdeck_dspy.decoding.answer_end import AnswerKind
from helmdeck_dspy.domain import PIPELINE_RUN_TOOL
from helmdeck_dspy.program.answer_schema import (
    CONSTRAINED_FORMAT,
    CONSTRAINED_STEPS_FORMAT,
    has_fit_decision,
    plan_schema,
)
from helmdeck_dspy.program.demo_pool import best_match, compiled_pool, pipeline_line, signature_line
from helmdeck_dspy.program.plain_prompt import FIT_ASK, RETRY_FIT_ASK
from helmdeck_dspy.program.sections import (
    ANSWER_FORMAT_MARK,
    CATALOG_HEADER,
    CLOSING_LINE,
    CONTEXT_HEADER,
    DEMO_TOOLS_HEADER,
    PRIOR_STEPS_HEADER,
    REQUEST_HEADER,
)
from helmdeck_dspy.program.spec import PromptSpec
from helmdeck_dspy.program.strategies.base import AnswerStrategy, SpecInputs

if TYPE_CHECKING:
    from helmdeck_dspy.catalog.models import RoutingGuide
    from helmdeck_dspy.decoding.parsing import ParseResult
    from helmdeck_dspy.program.calls import Completion

FORMAT_FULL_STEPS = ANSWER_FORMAT_MARK + """: one JSON object and nothing else (no prose, no code fences):
{"steps": [{"order": 1, "tool": "<catalog id>", "args": {}, "rationale": "<one sentence>"}],
 "complexity": "single-action" | "pipeline-direct" | "pack-chain",
 "reasoning": "<one to three sentences>"}"""

FORMAT_SINGLE_PICK = ANSWER_FORMAT_MARK + """: one JSON object and nothing else (no prose, no code fences):
{"steps": [{"order": 1, "tool": "<catalog id>", "args": {}, "rationale": "<one sentence>"}],
 "complexity": "single-action" | "pipeline-direct" | "pack-chain",
 "more_steps_likely": true | false,
 "reasoning": "<one or two sentences>"}"""

NO_FIT_CONSTRAINED = "If none of the catalog's tools does what the request asks, set tool_fits to false."
NO_FIT_FREE = "If none of the catalog's tools does what the request asks, return an empty steps list."
"""The last words of a request under the plain tool-list instructions or a schema: the no-fit
decision is put next to the request, where a small model still sees it."""

_FIT_FIELD = re.compile(r'"tool_fits"\s*:\s*')


def _get(demo: Any, key: str) -> Any:
    return demo.get(key) if hasattr(demo, "get") else getattr(demo, key, None)


def jsonable(value: Any) -> Any:
    """``value`` with every pydantic model in it dumped to JSON-ready data."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    return value


def prior_json(prior_steps: Any) -> list[dict[str, Any]] | None:
    """Executed steps as JSON objects, ``error`` only on a step that failed."""
    steps = [{k: v for k, v in s.items() if k != "error" or v} for s in jsonable(prior_steps or [])]
    return steps or None


def request_text(intent: str, context: Any = None, prior_steps: Any = None) -> str:
    """The request block: the request, any context, any steps already run (with their outputs, each
    a JSON string under a lead that calls it data: :data:`~helmdeck_dspy.program.sections.DATA_NOTE`)."""
    parts = [f"{REQUEST_HEADER}\n{intent.strip()}"]
    if context is not None and str(context).strip():
        ctx = context if isinstance(context, str) else json.dumps(jsonable(context), ensure_ascii=False)
        parts.append(f"{CONTEXT_HEADER}\n{ctx.strip()}")
    if prior_steps:
        lines: list[str] = []
        for s in prior_json(prior_steps) or []:
            args = json.dumps(s.get("args") or {}, ensure_ascii=False, separators=(",", ":"))
            output = json.dumps(f"error: {s.get('output', '')}" if s.get("error") else s.get("output", ""),
                                ensure_ascii=False)
            lines.append(f"{s.get('order', len(lines) + 1)}. {s.get('tool')} {args} -> {output}")
        parts.append(f"{PRIOR_STEPS_HEADER}\n" + "\n".join(lines))
    return "\n\n".join(parts)


class PlanObject(AnswerStrategy):
    """A plan object answer; :meth:`shape` says what constrains it."""

    answer_kind: ClassVar[AnswerKind | None] = None

    def shape(self, given: SpecInputs) -> dict[str, Any]:
        """The spec fields that constrain the answer (a response format, a schema)."""
        raise NotImplementedError

    def spec(self, given: SpecInputs) -> PromptSpec:
        whole, selected = given.whole, given.selected
        fields: dict[str, Any] = {}
        if given.fit_catalog:
            fields["demo_tools"] = whole.id_set | ({PIPELINE_RUN_TOOL} if whole.pipelines else set())
            if not whole.pipelines:
                from helmdeck_dspy.signatures.plan import variant_instructions  # imports dspy

                fields["instructions"] = variant_instructions(given.variant, tools_only=True)
        pool = compiled_pool(given.program, selected, whole) if selected is not None else None
        if pool is not None:
            match = best_match(whole, given.intent) if pool.decline_below is not None else None
            exclude = frozenset({given.exclude_demo} if given.exclude_demo else ())
            fields["pool_demos"] = tuple(pool.nearest(given.intent, exclude=exclude, catalog_match=match))
        return PromptSpec(
            variant=given.variant, strategy=self.name, catalog=selected.render() if selected is not None else "",
            catalog_in_system=given.budget.supports_prefix_cache, max_tokens=given.max_tokens,
            **(given.sampling or {}), **self.shape(given), **fields,
        )

    # ------------------------------------------------------------------ rendering

    @staticmethod
    def answer_format(spec: PromptSpec) -> str:
        """The answer-format section: the variant's, or the schema's when the answer is constrained."""
        if spec.answer_schema is not None:
            more = ' It also holds "more_steps_likely": true | false.' if spec.variant == "single_pick" else ""
            fmt = CONSTRAINED_FORMAT if has_fit_decision(spec.answer_schema) else CONSTRAINED_STEPS_FORMAT
            return ANSWER_FORMAT_MARK + fmt + more
        return FORMAT_SINGLE_PICK if spec.variant == "single_pick" else FORMAT_FULL_STEPS

    @staticmethod
    def schema_answer(spec: PromptSpec, steps: list[dict[str, Any]], more: Any = None) -> dict[str, Any]:
        """A demo's answer as the answer schema has it: ``tool`` and ``args`` per step, ``tool_fits``
        where the schema puts it, and ``more_steps_likely`` for single_pick."""
        answer: dict[str, Any] = {"tool_fits": bool(steps)} if has_fit_decision(spec.answer_schema) else {}
        answer["steps"] = [{"tool": s.get("tool"), "args": s.get("args") or {}} for s in steps]
        if spec.variant == "single_pick":
            answer["more_steps_likely"] = bool(more)
        return answer

    def demo_messages(self, spec: PromptSpec, demos: list[Any]) -> list[dict[str, str]]:
        """The program's demos as user/assistant pairs, each answer in the format the model must
        answer in; a demo naming a tool outside ``spec.demo_tools`` is left out."""
        messages = []
        for demo in demos:
            intent, steps = _get(demo, "user_intent"), _get(demo, "steps")
            if not intent or steps is None:
                continue
            if spec.demo_tools is not None and not all(_get(s, "tool") in spec.demo_tools for s in steps):
                continue
            if spec.answer_schema is not None:
                answer = self.schema_answer(spec, jsonable(steps), _get(demo, "more_steps_likely"))
            else:
                answer = {"steps": jsonable(steps)}
                for key in ("complexity", "more_steps_likely", "reasoning"):
                    value = _get(demo, key)
                    if value is not None and (key != "more_steps_likely" or spec.variant == "single_pick"):
                        answer[key] = jsonable(value)
            messages.append({"role": "user", "content": request_text(intent, _get(demo, "context"),
                                                                     _get(demo, "prior_steps"))})
            messages.append({"role": "assistant", "content": json.dumps(answer, ensure_ascii=False)})
        return messages

    def pool_demos(self, spec: PromptSpec) -> list[dict[str, str]]:
        """The request's pool demos as user/assistant pairs: the demo's tools, its request, the answer."""
        messages = []
        for demo in spec.pool_demos:
            tools = "\n".join([*(signature_line(p) for p in demo.tools), *(pipeline_line(p) for p in demo.pipelines)])
            steps = [{"tool": s["tool"], "args": s.get("args") or {}} for s in demo.steps]
            if spec.answer_schema is not None:
                answer = self.schema_answer(spec, steps, more=False)
            else:
                answer = {"steps": [{"order": i, **s, "rationale": ""} for i, s in enumerate(steps, 1)]}
            messages.append({"role": "user", "content": f"{DEMO_TOOLS_HEADER}\n{tools}\n\n{request_text(demo.intent)}"})
            messages.append({"role": "assistant", "content": json.dumps(answer, ensure_ascii=False)})
        return messages

    def messages(self, spec: PromptSpec, instructions: str, demos: list[Any],
                 inputs: Mapping[str, Any]) -> list[dict[str, str]]:
        catalog = inputs.get("catalog") or ""
        system = f"{(spec.instructions or instructions).strip()}\n\n{self.answer_format(spec)}"
        if spec.catalog_in_system:
            system += f"\n\n{CATALOG_HEADER}\n{catalog}"
        user = request_text(inputs["user_intent"], inputs.get("context"), inputs.get("prior_steps"))
        if not spec.catalog_in_system:
            user = f"{CATALOG_HEADER}\n{catalog}\n\n{user}"
        user += f"\n\n{CLOSING_LINE}"
        if spec.instructions is not None or spec.answer_schema is not None:
            user += f" {NO_FIT_CONSTRAINED if has_fit_decision(spec.answer_schema) else NO_FIT_FREE}"
        return [{"role": "system", "content": system}, *self.demo_messages(spec, demos), *self.pool_demos(spec),
                {"role": "user", "content": user}]

    # ------------------------------------------------------------------ the answer

    def parse(self, completion: Completion) -> ParseResult:
        from helmdeck_dspy.decoding.parsing import parse_completion

        return parse_completion(completion.content, completion.finish_reason, completion.reasoning,
                                tool_calls=completion.tool_calls, refusal=completion.refusal)

    def decision_point(self, content: str) -> tuple[str, str, str] | None:
        found = _FIT_FIELD.search(content)
        return (content[: found.end()], "false", "true") if found else None

    def call_ask(self, spec: PromptSpec, shown: RoutingGuide, content: str | None, endpoint: str,
                 retry: bool = False) -> PromptSpec:
        schema = plan_schema(shown, spec.variant, fit_decision=has_fit_decision(spec.answer_schema), must_call=True)
        return self.again(spec, content, RETRY_FIT_ASK if retry else FIT_ASK, schema, endpoint)
