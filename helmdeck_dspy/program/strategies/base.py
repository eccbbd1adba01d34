"""An answer strategy: how a plan request is put to the model and how its answer is read.

A strategy is an object with one method per stage a request meets, in this order; the attempt
calls them and never names a strategy:

1. :meth:`AnswerStrategy.sees_whole`: whether the request shows the whole catalog (no selection),
   and where it does not, :meth:`AnswerStrategy.keep_head`: the selection widened by a head every
   cut request shares (``PlannerOptions.cut_head``);
2. :meth:`AnswerStrategy.spec`: the frozen :class:`~helmdeck_dspy.program.spec.PromptSpec` of the
   first call, from the :class:`SpecInputs` the resolver gathers once per request;
3. :meth:`AnswerStrategy.messages`: the chat messages that spec renders to;
4. :meth:`AnswerStrategy.parse`: the answer read as a plan;
5. :meth:`AnswerStrategy.decision_point`: where the answer decides between calling and declining
   (the decline probe of ``planning.decision`` reads the model's odds there);
6. :meth:`AnswerStrategy.call_ask`: the ask again after a decline a threshold overrules;
7. :meth:`AnswerStrategy.recheck`: the ask again, over fewer tools, after a declined first answer
   (only strategies with :attr:`AnswerStrategy.rechecks_declines`).

Each strategy is one module of this folder; :mod:`helmdeck_dspy.program.strategies` registers them.
A strategy holds no per-request state: one instance serves every request.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from helmdeck_dspy.decoding.answer_end import AnswerKind
from helmdeck_dspy.program.spec import PromptSpec

if TYPE_CHECKING:
    from helmdeck_dspy.budgets import Budget
    from helmdeck_dspy.catalog.models import RoutingGuide
    from helmdeck_dspy.decoding.parsing import ParseResult
    from helmdeck_dspy.domain import Variant
    from helmdeck_dspy.program.calls import Completion


@dataclass(frozen=True)
class SpecInputs:
    """What a first call's spec is built from, gathered once per request by the resolver.

    Attributes:
        variant: The prompt variant.
        budget: The model's budget row.
        endpoint: The LM's model string (its schema wire).
        whole: The planner's whole catalog.
        selected: The catalog shown for this request (None: none yet, as at compile time).
        intent: The request (picks pool demos).
        program: The plan program (its compiled demo pool, if any).
        max_tokens: The output cap.
        sampling: The ``temperature`` and ``seed`` sent.
        fit_decision: Open a schema answer with the ``tool_fits`` decision (None: by catalog shape).
        fit_catalog: Fit instructions and demos to the catalog.
        exclude_demo: A pool demo never shown (the task being answered).
    """

    variant: Variant
    budget: Budget
    endpoint: str
    whole: RoutingGuide
    selected: RoutingGuide | None
    intent: str = ""
    program: Any = None
    max_tokens: int | None = None
    sampling: Mapping[str, Any] | None = None
    fit_decision: bool | None = None
    fit_catalog: bool = True
    exclude_demo: str | None = None


class AnswerStrategy:
    """One way of answering (see the module docstring); subclasses override the stages they change."""

    name: ClassVar[str]
    description: ClassVar[str]
    answer_kind: ClassVar[AnswerKind | None] = None
    """The one JSON value the answer is, where a streamed answer may be cut (None: never cut)."""
    model_alone_request: ClassVar[bool] = False
    """The request is the model alone's prompt verbatim, so the model alone's recorded answers are
    this strategy's answers too (a study re-reads them through its checks)."""
    rechecks_declines: ClassVar[bool] = False
    """A declined first answer over a long list is asked again over the top-ranked tools (:meth:`recheck`)."""

    def sees_whole(self, budget: Budget, whole: RoutingGuide, intent: str) -> bool:
        """Whether the request shows ``whole`` unchanged, skipping selection."""
        return False

    def keep_head(self, budget: Budget, whole: RoutingGuide, picks: list[str], intent: str) -> RoutingGuide | None:
        """A cut request's list under ``PlannerOptions.cut_head``: the longest leading run of
        ``whole`` that still fits the budget beside the request's top-ranked ``picks``, so every cut
        request shares that head; None where no head fits (the budget's cut stands), and always
        here: a strategy whose prompt has no such head."""
        return None

    def spec(self, given: SpecInputs) -> PromptSpec:
        """The first call's spec."""
        raise NotImplementedError

    def messages(self, spec: PromptSpec, instructions: str, demos: list[Any],
                 inputs: Mapping[str, Any]) -> list[dict[str, str]]:
        """The messages of a call with ``spec`` (the system message first, "" for none): the
        program's ``instructions`` and ``demos``, and the call's ``inputs`` (``user_intent``,
        ``catalog``, ``context``, ``prior_steps``). An ask again's turns are added after them."""
        raise NotImplementedError

    def demo_messages(self, spec: PromptSpec, demos: list[Any]) -> list[dict[str, str]]:
        """The program's ``demos`` as the request would show them (none: a strategy without demos)."""
        return []

    def parse(self, completion: Completion) -> ParseResult:
        """The completion read as a plan; never raises."""
        raise NotImplementedError

    def decision_point(self, content: str) -> tuple[str, str, str] | None:
        """Where ``content`` decides: the answer before that token, a decline's start and any
        answer's start there; None when the answer holds no such point."""
        return None

    def call_ask(self, spec: PromptSpec, shown: RoutingGuide, content: str | None,
                 endpoint: str, retry: bool = False) -> PromptSpec:
        """The ask again after a decline a threshold overrules: ``spec``'s conversation, the
        decline as the model's turn, an ask for calls, decoded under a schema of at least one call;
        with ``retry``, the ask after a decline that came right after a failed call (it names the failure)."""
        raise NotImplementedError

    def recheck(self, spec: PromptSpec, shown: RoutingGuide) -> PromptSpec:
        """The ask again after a declined first answer, over ``shown`` (the top-ranked tools)."""
        raise NotImplementedError

    @staticmethod
    def again(spec: PromptSpec, content: str | None, ask: str, schema: dict[str, Any], endpoint: str) -> PromptSpec:
        """``spec`` continued: its answer ``content`` as the model's turn, then ``ask``, decoded under ``schema``."""
        from helmdeck_dspy.program.answer_schema import schema_wire

        return spec.model_copy(update={"first_answer": content or "", "again_ask": ask, "answer_schema": schema,
                                       "schema_wire": schema_wire(endpoint), "json_object": False})
