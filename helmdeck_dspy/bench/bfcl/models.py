"""The loaded BFCL data: planning tasks with their gold calls, the set of them, and what was not loaded.

A single-turn question is one task. A multi_turn question is one task per turn: its ``id`` is
``<question id>:turn<N>`` and ``question_id`` the BFCL id. ``expect`` says what a right plan does
(:data:`~helmdeck_dspy.bench.bfcl.spec.Expect`): make the gold calls, call nothing (the
irrelevance categories, and the turns whose gold is empty: a function is missing or a parameter
must be asked for), or call any offered function (``live_relevance``).
"""

from __future__ import annotations

from collections import Counter
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from helmdeck_dspy.catalog.models import Pack, Pipeline, RoutingGuide
from helmdeck_dspy.bench.bfcl.spec import CategoryKind, Expect

OPTIONAL_MARK = ""
"""An acceptable value of ``""`` means the argument may be omitted."""

ANY_VALUE: dict[str, bool] = {"$any": True}
"""An acceptable value that every value matches (a gold task's argument whose value is not fixed)."""


class GoldCall(BaseModel):
    """One ground-truth function call: the name and, per argument, the acceptable values."""

    model_config = ConfigDict(frozen=True)

    name: str
    args: dict[str, list[Any]] = Field(default_factory=dict)

    def is_optional(self, arg: str) -> bool:
        """Whether ``arg`` may be left out of a correct call."""
        return any(isinstance(v, str) and v == OPTIONAL_MARK for v in self.args.get(arg, ()))


class BfclQuestion(BaseModel):
    """One planning task: the request, the offered functions (as catalog packs) and the gold calls."""

    model_config = ConfigDict(frozen=True)

    id: str
    category: str
    intent: str
    functions: tuple[Pack, ...]
    pipelines: tuple[Pipeline, ...] = Field(default=(), description="A gold task's catalog pipelines; BFCL has none.")
    gold: tuple[GoldCall, ...]
    alternatives: tuple[tuple[GoldCall, ...], ...] = Field(
        default=(), description="Other call lists that are also right (a gold task's alternatives); BFCL has none.")
    expect: Expect = "calls"
    question_id: str = Field(default="", description="The BFCL question id ('' = same as id).")
    turn: int | None = Field(default=None, description="0-based turn of a multi_turn question.")

    @property
    def source_id(self) -> str:
        """The BFCL question this task comes from."""
        return self.question_id or self.id

    @property
    def gold_tools(self) -> list[str]:
        """The distinct function names the gold calls use, in first-use order."""
        return list(dict.fromkeys(c.name for c in self.gold))

    @cached_property
    def catalog(self) -> RoutingGuide:
        """The task's own functions (and pipelines) as a catalog."""
        return RoutingGuide(packs=self.functions, pipelines=self.pipelines)


class CategoryNote(BaseModel):
    """A category of the data folder and how it went: loaded, skipped, or not loadable."""

    model_config = ConfigDict(frozen=True)

    category: str
    kind: CategoryKind
    status: Literal["loaded", "skipped", "no_answer_file", "failed"]
    detail: str = Field(default="", description="Why it was not loaded (a skip reason or the error).")
    questions: int = Field(default=0, description="BFCL questions loaded.")
    tasks: int = Field(default=0, description="Planning tasks made from them (one per turn for multi_turn).")


class PoolStats(BaseModel):
    """What pooling every loaded function into one catalog did to the definitions."""

    conflicts: int = Field(description="Later definitions of an already pooled name that differed (dropped).")
    gold_replaced: int = Field(description="Tasks with a gold function whose pooled definition is another task's version.")
    gold_replaced_by_category: dict[str, int] = Field(default_factory=dict)


class BfclSet(BaseModel):
    """Tasks loaded from one or more categories, and a note for every category seen."""

    model_config = ConfigDict(frozen=True)

    questions: tuple[BfclQuestion, ...]
    files: dict[str, tuple[str, str]] = Field(description="category -> (question file, answer file or '')")
    notes: tuple[CategoryNote, ...] = ()

    @property
    def categories(self) -> list[str]:
        """The loaded categories, in load order."""
        return list(self.files)

    @cached_property
    def pooling(self) -> tuple[RoutingGuide, PoolStats]:
        """The pooled catalog and its :class:`PoolStats` (computed once)."""
        kept: dict[str, Pack] = {}
        conflicts = 0
        for q in self.questions:
            for fn in q.functions:
                first = kept.setdefault(fn.name, fn)
                if first is not fn and first.wire_json != fn.wire_json:
                    conflicts += 1
        replaced: Counter[str] = Counter()
        for q in self.questions:
            own = {f.name: f for f in q.functions}
            if any(kept[g].wire_json != own[g].wire_json for g in q.gold_tools if g in own):
                replaced[q.category] += 1
        stats = PoolStats(conflicts=conflicts, gold_replaced=sum(replaced.values()),
                          gold_replaced_by_category=dict(replaced))
        return RoutingGuide(packs=tuple(kept.values())), stats

    def pool(self) -> tuple[RoutingGuide, int]:
        """Every function of every task in one catalog, first definition of a name wins.

        Returns:
            The pooled catalog and how many later definitions of an already-seen name differed
            from the kept one (they are dropped); :meth:`pool_stats` has the effect on gold tools.
        """
        guide, stats = self.pooling
        return guide, stats.conflicts

    def pool_stats(self) -> PoolStats:
        """How many definitions the pool dropped and how many tasks' gold definitions it replaced."""
        return self.pooling[1]

    def limited(self, n: int | None, start: int = 0) -> BfclSet:
        """The tasks of the first ``n`` BFCL questions of each category after its first ``start``
        (all of them when ``n`` is None and ``start`` is 0)."""
        if n is None and not start:
            return self
        order: dict[str, dict[str, None]] = {}
        for q in self.questions:
            order.setdefault(q.category, {})[q.source_id] = None
        seen = {c: set(list(ids)[start:None if n is None else start + n]) for c, ids in order.items()}
        keep = [q for q in self.questions if q.source_id in seen[q.category]]
        counts = Counter(q.category for q in keep)
        notes = tuple(
            n.model_copy(update={"questions": len(seen.get(n.category, ())), "tasks": counts[n.category]})
            if n.status == "loaded" else n
            for n in self.notes
        )
        return BfclSet(questions=tuple(keep), files=self.files, notes=notes)
