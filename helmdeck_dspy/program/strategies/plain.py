"""``plain``: the model-alone prompt verbatim, its answer through the planner's checks.

The request is :mod:`~helmdeck_dspy.program.plain_prompt`'s: the tools as JSON functions in the
catalog's own order, the question, any context and calls already made, and one sentence asking
for a JSON list of ``{name, arguments}`` calls (``[]`` for none); no system text, instructions or
demos. Only the output cap and sampling of the resolver apply.

- Catalog: the whole list whenever the request with every tool fits the row's ``input_tokens``
  (:meth:`Plain.sees_whole`): the prompt is then the model alone's, byte for byte, and its head is
  the same on every call, so a prefix cache reuses it (a per-request cut changed that head on
  every call and cost a full prefill each time: issue 38, item 4); else the selection's entries,
  in catalog order; under ``cut_head`` (the default) the request's top-ranked picks after the
  catalog's longest leading run that still fits (:meth:`Plain.keep_head`), a head consecutive cut
  requests share (experiments/mcp/cut-head-check: p50 11.6 s against 45.8 s, 18 of 44 exact against 16).
- Answer: a JSON list of calls (:func:`~helmdeck_dspy.decoding.call_list.parse_call_list`); a
  stream stops where the list closes.
- Decision point: where the list opens; Qwen's vocabulary holds ``[]`` as one token, so a decline
  starts ``[]`` and a call ``[`` otherwise.
- Asks again: a declined first answer over a long list is asked once more over the top-ranked
  tools (:meth:`Plain.recheck`); a decline a threshold overrules is asked for at least one call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from helmdeck_dspy.catalog.select import restrict_catalog
from helmdeck_dspy.program.answer_schema import call_list_schema
from helmdeck_dspy.program.plain_prompt import CALL_ASK, RETRY_ASK, plain_functions, plain_request
from helmdeck_dspy.program.spec import PromptSpec
from helmdeck_dspy.program.strategies.base import AnswerStrategy, SpecInputs
from helmdeck_dspy.program.strategies.plan_object import prior_json

if TYPE_CHECKING:
    from helmdeck_dspy.budgets import Budget
    from helmdeck_dspy.catalog.models import RoutingGuide
    from helmdeck_dspy.decoding.parsing import ParseResult
    from helmdeck_dspy.program.calls import Completion


def _fits(budget: Budget, shown: RoutingGuide, intent: str) -> bool:
    """Whether the request over ``shown`` fits the row's ``input_tokens``."""
    from helmdeck_dspy.io.tokens import count_tokens

    return count_tokens(plain_request(plain_functions(shown), intent)) <= budget.input_tokens


class Plain(AnswerStrategy):
    name = "plain"
    description = "the model-alone prompt verbatim, its JSON list of calls through the planner's checks"
    answer_kind = "list"
    model_alone_request = True
    rechecks_declines = True

    def sees_whole(self, budget: Budget, whole: RoutingGuide, intent: str) -> bool:
        return _fits(budget, whole, intent)

    def keep_head(self, budget: Budget, whole: RoutingGuide, picks: list[str], intent: str) -> RoutingGuide | None:
        ids, picked = whole.ids(), set(picks)

        def shown(head: int) -> RoutingGuide:  # the first ``head`` tools, then the picks after them
            return restrict_catalog(whole, [i for n, i in enumerate(ids) if n < head or i in picked])

        low, high = 0, len(ids)  # the longest head that fits: more tools never shorten the request
        while low < high:
            mid = (low + high + 1) // 2
            low, high = (mid, high) if _fits(budget, shown(mid), intent) else (low, mid - 1)
        widened = shown(low)
        return widened if len(widened.ids()) > len(picked) else None

    def spec(self, given: SpecInputs) -> PromptSpec:
        whole = given.whole
        kept = given.selected.id_set if given.selected is not None else whole.id_set
        shown = restrict_catalog(whole, [i for i in whole.ids() if i in kept])  # whole entries, catalog order
        return PromptSpec(variant=given.variant, strategy=self.name, catalog=plain_functions(shown),
                          max_tokens=given.max_tokens, **(given.sampling or {}))

    def messages(self, spec: PromptSpec, instructions: str, demos: list[Any],
                 inputs: Mapping[str, Any]) -> list[dict[str, str]]:
        request = plain_request(inputs.get("catalog") or "", inputs["user_intent"], inputs.get("context"),
                                prior_json(inputs.get("prior_steps")))
        return [{"role": "system", "content": ""}, {"role": "user", "content": request}]

    def parse(self, completion: Completion) -> ParseResult:
        from helmdeck_dspy.decoding.call_list import parse_call_list

        return parse_call_list(completion.content, completion.finish_reason, completion.reasoning)

    def decision_point(self, content: str) -> tuple[str, str, str] | None:
        at = content.find("[")
        return (content[:at], "[]", "[") if at >= 0 else None

    def call_ask(self, spec: PromptSpec, shown: RoutingGuide, content: str | None, endpoint: str,
                 retry: bool = False) -> PromptSpec:
        return self.again(spec, content, RETRY_ASK if retry else CALL_ASK, call_list_schema(shown, minimum=1), endpoint)

    def recheck(self, spec: PromptSpec, shown: RoutingGuide) -> PromptSpec:
        return spec.model_copy(update={"catalog": plain_functions(shown)})
