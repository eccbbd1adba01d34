"""One conversation per task (issue 55): :class:`ChatAgent`, the agent :func:`~.execution.run_loop`
drives when a task is one conversation in the model's own chat format
(:class:`~helmdeck_dspy.program.chat_turns.ChatTurns`) instead of a re-plan per batch.

The same class is both arms of a study, so the only difference between them is what the planner
adds:

- **the model alone** (no ``planner``): every turn, the first too, is the model's own answer over
  every tool, its calls sent as written;
- **the planner**: the first turn is the planner's own plan (its strategies, selection, recheck and
  checks), shown to the model as the assistant's first tool calls; every later turn is the model's,
  and its calls pass the planner's checks (names, argument types, grounded paths) before they run. A call the checks cannot repair is sent
  as the unknown tool it is, so the model reads why it failed on its next turn: a repair never
  turns into silence. With ``planner_first`` off, the first turn is the model's own as well, checked
  like every later one: the planner adds its checks to the model's native tool calling and nothing else
  (``loop = "chat-checked"``; measured on the dev half and not chosen: docs/results/e2e.md).

Every turn of either arm offers the same tools, the whole catalog, so the conversation's opening
(the chat template's system turn with the tools) is the same for every task over the same servers
and a server's prompt cache evaluates it once. (The fallback loop's hand-over offers the request's
top-ranked tools instead, :class:`FallbackAgent`: an opening of its own, evaluated from the start.)
A turn with no call ends the task (the model said it is done). Each turn's exchange is kept in
:attr:`ChatAgent.turns` for the result line.
"""

from __future__ import annotations

import time
from typing import Any

from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.domain import DEFAULT_LOOP, Loop
from helmdeck_dspy.decoding.causes import normalize_finish_reason
from helmdeck_dspy.decoding.parsing import ParseResult
from helmdeck_dspy.planning.guards import GuardedStep
from helmdeck_dspy.planning.result import PlanResult, build_result
from helmdeck_dspy.program.chat_turns import ChatTurns, TurnAnswer
from helmdeck_dspy.signatures.types import ExecutedStep, PlanOutput, PlanStep


class ChatAgent:
    """One task's conversation (make a new one for each task).

    Args:
        lm: The ``dspy.LM`` (uncached calls).
        catalog: Every tool the servers list.
        budget: The model's budget row (the output cap of a turn; model and tier for results).
        sampling: Temperature and seed sent with every turn (the planner's).
        planner: The planner whose first turn and checks this conversation uses (None: the model alone).
        planner_first: The planner answers the first turn with its own plan (off: the model does, checked).
    """

    variant = "single_pick"  # run_loop asks again after every batch of calls, until a turn has none

    def __init__(self, lm: Any, catalog: RoutingGuide, budget: Any, sampling: dict[str, Any],
                 planner: Any = None, planner_first: bool = True) -> None:
        self.lm = lm
        self.catalog = catalog
        self.budget = budget
        self.sampling = sampling
        self.planner = planner
        self.planner_first = planner_first
        self.chat: ChatTurns | None = None
        self.seen = 0
        self.turns: list[dict[str, Any]] = []

    def plan(self, intent: str, context: str | None = None, prior_steps: list[ExecutedStep] | None = None) -> PlanResult:
        prior = list(prior_steps or [])
        if self.chat is None:
            self.chat = ChatTurns(self.catalog, intent, context)
            if self.planner is not None and self.planner_first:
                first = self.planner.plan(intent, context=context)
                self.turns.append({"planner": [s.tool for s in first.steps], "failure": first.failure_cause})
                return first.model_copy(update={"more_steps_likely": True, "prompt_variant_used": self.variant})
        else:
            self.chat.ran([(s.tool, s.args, s.output, s.error) for s in prior[self.seen:]])
        self.seen = len(prior)
        return self._turn(intent)

    def _turn(self, intent: str) -> PlanResult:
        """Ask the model for its next turn and make a plan of its calls (checked by the planner's rules)."""
        assert self.chat is not None
        base = dict(prompt_variant_used=self.variant, model=self.budget.model, tier=self.budget.tier)
        try:
            answer = self._ask()
        except Exception as exc:  # noqa: BLE001 - a failed call ends the run, as a failed plan call does
            self.turns.append({"error": f"{type(exc).__name__}: {exc}"[:300]})
            return PlanResult(failure_cause="transport_error", error=str(exc)[:300], **base)
        self.turns.append({"content": answer.content, "calls": answer.calls, "finish_reason": answer.finish_reason,
                           "prompt_tokens": answer.prompt_tokens, "latency_ms": round(answer.latency_ms)})
        usage = {"prompt_tokens": answer.prompt_tokens, "completion_tokens": answer.completion_tokens,
                 "latency_ms": round(answer.latency_ms)}
        if answer.calls is None:  # cut at the output cap
            return PlanResult(failure_cause="length_truncated", finish_reason=answer.finish_reason, usage=usage, **base)
        if self.planner is None:
            steps = [GuardedStep(order=i, tool=name, args=args) for i, (name, args) in enumerate(answer.calls, 1)]
            return PlanResult(steps=steps, more_steps_likely=True, finish_reason=answer.finish_reason, usage=usage,
                              parse_outcome="repaired" if answer.repaired else "strict", **base)
        return checked_turn(self.planner, intent, answer.calls or [], repaired=answer.repaired,
                            finish_reason=answer.finish_reason, usage=usage, budget=self.budget, variant=self.variant)

    def _ask(self) -> TurnAnswer:
        """One uncached request of the whole conversation; a streamed answer cut once it is plainly text."""
        from helmdeck_dspy.engines.call_control import expecting

        assert self.chat is not None
        config = {"max_tokens": self.budget.output_tokens, **self.sampling}
        request = self.chat.request(self.lm.model, config)
        t0 = time.perf_counter()
        with expecting("turn"):
            response = self.lm(request, cache=False)
        return self.chat.answer(response, (time.perf_counter() - t0) * 1000, config)

    def transcript(self) -> list[dict[str, Any]]:
        """The conversation so far as plain data (empty before the first turn)."""
        return self.chat.transcript() if self.chat is not None else []


def checked_turn(planner: Any, intent: str, calls: list[tuple[str, dict[str, Any]]], *, repaired: bool,
                 finish_reason: str | None, usage: dict[str, Any], budget: Any, variant: str) -> PlanResult:
    """A conversation turn's calls through ``planner``'s checks (its catalog, schemas, name mapping,
    grounding in ``intent``), as the plan of a loop that asks again after every batch (``variant``)."""
    ctx = planner.context()
    plan = PlanOutput(steps=[PlanStep(order=i, tool=name, args=args, rationale="") for i, (name, args) in enumerate(calls, 1)])
    parse = ParseResult(outcome="repaired" if repaired else "strict", plan=plan, value=plan.model_dump(mode="json"),
                        finish_reason=normalize_finish_reason(finish_reason), finish_reason_raw=finish_reason,
                        notes=("chat_turn",))
    result = build_result(parse, intent=intent, variant="full_steps", model=budget.model, tier=budget.tier,
                          catalog_ids=ctx.catalog.id_set, pipeline_ids=ctx.catalog.pipeline_ids, usage=usage,
                          schemas=ctx.arg_schemas, chains=ctx.chains, map_names=ctx.options.checks.map_names,
                          ground=ctx.grounding(intent))
    return result.model_copy(update={"more_steps_likely": True, "prompt_variant_used": variant})


def task_agent(planner: Any, loop: Loop = DEFAULT_LOOP) -> Any:
    """What drives one task for ``planner`` under ``loop`` (make a new one for each task): the
    planner itself (``replan``) or a :class:`FallbackAgent` around it, whose conversation uses the
    planner's own LM, catalog, budget row and sampling.

    Under ``fallback`` the planner asks no recheck (``recheck_top`` off): a declined first plan goes
    to the conversation at once, whose opening the server's cache keeps, instead of first to a
    narrowed prompt evaluated from the start (experiments/e2e/direct-dev: the same 31 of 45 tasks,
    median task 0.84x; a single ``plan`` keeps the recheck)."""
    if loop == "replan":
        return planner
    planner = planner.replace(options=planner.options.model_copy(update={"recheck_top": 0}))
    ctx = planner.context()
    return FallbackAgent(planner, lambda tools: ChatAgent(ctx.lm, tools, ctx.budget, dict(ctx.sampling),
                                                          planner=planner, planner_first=False))


class FallbackAgent:
    """The planner's re-plan loop, and where its first plan has nothing to run (declined, or
    unreadable), the model's own conversation over every tool with the planner's checks
    on each turn (:class:`ChatAgent` with ``planner_first`` off) for the rest of the task
    (``loop = "fallback"``; make a new one for each task).

    Under ``fallback_top`` the request's top-ranked tools bound the hand-over where the request
    shares a word with some tool (the ranker scores one above 0): the conversation offers only them,
    and a first plan none of whose calls is to one of them (a tool the servers lack still counts as a
    call: it fails and is answered) is handed over too, its calls unsent. A request that matches no
    tool keeps every tool (experiments/e2e/top-dev: shown the closer tools, two such requests got a
    write; experiments/e2e/name-dev: every tool offered, the top ones named in the request, lost two
    tasks).

    Args:
        planner: The planner (its plans, and the checks of the conversation's turns).
        chat: Builds the conversation over the tools it is given.
    """

    def __init__(self, planner: Any, chat: Any) -> None:
        self.planner = planner
        self.chat = chat
        self.active: Any = planner  # the one answering: the planner until its first plan has nothing to run
        self.turns: list[dict[str, Any]] = []
        self.unreturned: list[PlanResult] = []  # plans made but not returned to the loop: the first one, handed over

    @property
    def variant(self) -> str:
        return str(self.active.variant)

    def plan(self, intent: str, context: str | None = None, prior_steps: list[ExecutedStep] | None = None) -> PlanResult:
        first = self.active is self.planner and not prior_steps
        result = self.active.plan(intent, context=context, prior_steps=prior_steps)
        if not first:
            return result
        ctx = self.planner.context()
        top = ctx.options.fallback_top
        shown = ctx.top_tools(intent, top, matched=True) if 0 < top < len(ctx.catalog.packs) else ctx.catalog
        if result.ok and any(s.tool in shown.id_set or s.tool not in ctx.catalog.id_set for s in result.steps):
            return result
        self.turns.append({"planner": [s.tool for s in result.steps], "failure": result.failure_cause})
        self.unreturned.append(result)
        self.active = self.chat(shown)
        self.active.turns = self.turns  # the conversation's turns follow the planner's in one list
        return self.active.plan(intent, context=context)
