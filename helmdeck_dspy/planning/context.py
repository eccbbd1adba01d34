"""One request's settings as a value: :class:`PlanContext`, built once per attempt and passed down.

The planner is immutable, and so is what an attempt reads of it. Everything with more than one
source is settled here, once, by :mod:`helmdeck_dspy.planning.request`'s precedence: the answer
strategy, the output cap and the sampling sent. No module assigns to a context; a different
setting is a different context (``planning.request.context_of`` over a different planner).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from helmdeck_dspy.budgets import Budget
from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.domain import Variant
from helmdeck_dspy.planning.grounding import Grounding
from helmdeck_dspy.planning.history import HistoryStore
from helmdeck_dspy.planning.options import PlannerOptions
from helmdeck_dspy.program.store import ProgramRef
from helmdeck_dspy.program.strategies import AnswerStrategy


@dataclass(frozen=True)
class PlanContext:
    """What one attempt plans with (see the module docstring).

    Attributes:
        budget / variant / program / program_ref / lm / catalog / history / options: The planner's.
        endpoint: The LM's model string (``llamacpp/...``, ``openai/...``).
        strategy: The answer strategy.
        max_tokens: The output cap of the first call.
        sampling: The ``temperature`` and, where the endpoint takes one, the ``seed`` sent.
    """

    budget: Budget
    variant: Variant
    program: Any
    program_ref: ProgramRef | None
    lm: Any
    catalog: RoutingGuide
    history: HistoryStore | None
    options: PlannerOptions
    endpoint: str
    strategy: AnswerStrategy
    max_tokens: int
    sampling: Mapping[str, Any]

    @property
    def chains(self) -> dict[str, frozenset[str]] | None:
        """The pipeline chains the guards collapse (:mod:`~helmdeck_dspy.planning.chains`), if checked."""
        return (self.catalog.pipeline_chains or None) if self.options.checks.pipeline_chains else None

    def grounding(self, intent: str) -> Grounding | None:
        """What a step's path arguments are grounded in for ``intent`` (None: not grounded)."""
        options = self.options
        if not (options.fill_placeholders or options.ground_paths):
            return None
        return Grounding(intent, placeholders=options.fill_placeholders, complete_tails=options.ground_paths)

    def top_tools(self, intent: str, top: int, matched: bool = False) -> RoutingGuide:
        """The catalog cut to the ``top`` tools the ranker gives for ``intent``, in rank order (or the
        catalog's, ``recheck_order = "catalog"``): the recheck's list, and the ``fallback_top``
        conversation's. With ``matched``, the whole catalog where the ranker scores no tool above 0
        (under ``bm25`` and ``lexical``: the request shares no word with any tool, so the order says
        nothing; the ``embedding`` ranker's cosine is rarely 0, so there the cut nearly always applies)."""
        from helmdeck_dspy.catalog.ranking import RANKERS
        from helmdeck_dspy.catalog.select import restrict_catalog

        scored = RANKERS[self.options.ranker](self.catalog, intent, None)
        if matched and not (scored and scored[0].score > 0):
            return self.catalog
        ranked = [r.id for r in scored[:top]]
        if self.options.recheck_order == "catalog":
            ranked = [i for i in self.catalog.ids() if i in set(ranked)]
        return restrict_catalog(self.catalog, ranked)

    @property
    def arg_schemas(self) -> dict[str, dict[str, object]] | None:
        """The tool schemas the guards check and coerce arguments against, if checked."""
        return self.catalog.arg_schemas if self.options.checks.coerce_args else None
