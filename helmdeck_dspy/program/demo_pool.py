"""Demos chosen per request: the pool's examples nearest the request, each shown with its own tools.

A fixed demo compiled over one catalog misleads a planner working over another (it names tools
the catalog does not have). A :class:`DemoPool` holds worked examples that each carry the tools
they use; :meth:`DemoPool.nearest` picks the ``k`` whose requests are closest to the new one by
BM25 over the request words (the idea of DSPy's ``KNNFewShot``, without embeddings), never one
whose ``id`` is excluded (the question being scored). The adapter shows each chosen demo with its
own tools in compact form (``name(arg: type, ...)``), then the answer it should get, in the answer
format of the request.

A pool is chosen at compile time, the way ``dspy.KNNFewShot`` is: ``compile --knn-demos K`` builds
one from the train split with :func:`pool_from_tasks` and saves it in the program file, and the
manifest records ``knn_demos`` (``--history-traces`` adds accepted plans from plan history:
:mod:`helmdeck_dspy.compilation.history_pool`). A pool built over one catalog is catalog-specific: the planner
shows a compiled pool's demo only when every tool and pipeline it uses is in the planner's catalog.

A pool can keep a slot for a demo that declines (``--decline-slot``): when none of a request's
``k`` nearest declines, the last gives way to the nearest that does. ``--decline-gate`` opens that
slot only for requests the catalog matches weakly: :func:`best_match` below the gate that
:func:`fit_decline_gate` fits on the compile's gold tasks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from helmdeck_dspy.catalog.models import Pack, Pipeline, RoutingGuide
from helmdeck_dspy.catalog.ranking.bm25 import bm25_scores, rank_bm25
from helmdeck_dspy.catalog.text import token_set, tokenize
from helmdeck_dspy.domain import PIPELINE_RUN_TOOL

if TYPE_CHECKING:
    from helmdeck_dspy.tasks import PlanTask

GAP_DEMO_TOOLS = 2
"""Tools shown with a pool demo that no tool serves: the catalog's closest ones by BM25 (which do not fit)."""


class PoolDemo(BaseModel):
    """One worked example: a request, the tools it was answered over, and the right steps."""

    model_config = ConfigDict(frozen=True)

    id: str
    intent: str
    tools: tuple[Pack, ...] = Field(description="The tools shown with the demo (its own catalog, or the part it uses).")
    pipelines: tuple[Pipeline, ...] = Field(default=(), description="The catalog pipelines the demo runs, shown "
                                            "with its tools.")
    steps: tuple[dict[str, Any], ...] = Field(description='The right steps: {"tool", "args"} each; empty when no tool fits.')

    @property
    def entry_ids(self) -> frozenset[str]:
        """The catalog ids the demo shows: its tools' names and its pipelines' ids."""
        return frozenset(t.name for t in self.tools) | frozenset(p.id for p in self.pipelines)


def _with_lead(call: str, description: str) -> str:
    """``call — first sentence of description`` (without its full stop), or ``call`` alone."""
    lead = description.split(". ")[0].strip().rstrip(".")
    return f"{call} — {lead}" if lead else call


def signature_line(pack: Pack) -> str:
    """A tool in one line: ``name(arg: type, opt?: type) — first sentence of its description``."""
    schema = pack.parameters or {}
    raw = schema.get("properties")
    props: dict[str, Any] = raw if isinstance(raw, dict) else {}
    required = set(schema.get("required") or ())
    args = ", ".join(f"{name}{'' if name in required else '?'}: {spec.get('type', 'any') if isinstance(spec, dict) else 'any'}"
                     for name, spec in props.items())
    return _with_lead(f"{pack.name}({args})", pack.description)


def pipeline_line(pipeline: Pipeline) -> str:
    """A pipeline in one line: a call of the run tool with its id."""
    call = f'{PIPELINE_RUN_TOOL}(id: "{pipeline.id}", inputs?: object)'
    return _with_lead(call, pipeline.description)


class DemoPool(BaseModel):
    """Worked examples to draw per-request demos from (see the module docstring)."""

    model_config = ConfigDict(frozen=True)

    demos: tuple[PoolDemo, ...]
    k: int = Field(default=2, ge=0, description="Demos shown per request.")
    decline_slot: bool = Field(default=False, description="When none of the k nearest declines (has no steps), "
                               "the last of them gives way to the nearest demo that does (k of 2 or more).")
    decline_below: float | None = Field(default=None, description="The decline slot's gate: it opens only for a "
                                        "request whose best catalog match (best_match) scores below this "
                                        "(fitted at compile time: fit_decline_gate); None: always open.")
    declines: tuple[PoolDemo, ...] = Field(default=(), description="Demos that decline which only the decline slot "
                                           "draws on, besides those in ``demos`` (the planner's: a compiled pool's "
                                           "declining demos whose tools the selection dropped).")

    @cached_property
    def _index(self) -> tuple[list[Counter[str]], list[int]]:
        return _bm25_index(self.demos)

    @cached_property
    def _slot_index(self) -> tuple[list[Counter[str]], list[int]]:
        return _bm25_index((*self.demos, *self.declines))

    def nearest(self, intent: str, exclude: frozenset[str] = frozenset(), catalog_match: float | None = None) -> list[PoolDemo]:
        """The ``k`` demos whose requests score highest against ``intent`` (pool order on ties);
        ``catalog_match`` is the request's :func:`best_match` in the planner's catalog, which a gated
        decline slot needs (without it a gated slot stays shut)."""
        if self.k == 0 or not self.demos:
            return []
        order = _by_score(self.demos, self._index, intent, exclude)
        picked = order[: self.k]
        if self.decline_slot and self.k >= 2 and self._gate_open(catalog_match) and all(d.steps for d in picked):
            if self.declines:
                order = _by_score((*self.demos, *self.declines), self._slot_index, intent, exclude)
            decline = next((d for d in order if not d.steps), None)
            if decline is not None:
                picked = picked[: self.k - 1] + [decline]
        return picked

    def _gate_open(self, catalog_match: float | None) -> bool:
        if self.decline_below is None:
            return True
        return catalog_match is not None and catalog_match < self.decline_below


def _bm25_index(demos: tuple[PoolDemo, ...]) -> tuple[list[Counter[str]], list[int]]:
    tokens = [tokenize(d.intent) for d in demos]
    return [Counter(t) for t in tokens], [len(t) for t in tokens]


def _by_score(demos: tuple[PoolDemo, ...], index: tuple[list[Counter[str]], list[int]], intent: str,
              exclude: frozenset[str]) -> list[PoolDemo]:
    """``demos`` by BM25 score against ``intent``, highest first (pool order on ties), less ``exclude``."""
    scores = bm25_scores(*index, token_set(intent))
    return [demos[i] for i in sorted(range(len(demos)), key=lambda i: (-scores[i], i)) if demos[i].id not in exclude]


def best_match(catalog: RoutingGuide, intent: str) -> float:
    """How closely ``catalog`` matches ``intent``: the BM25 score of its best entry (0 for none)."""
    ranked = rank_bm25(catalog, intent)
    return ranked[0].score if ranked else 0.0


def plan_demo(demo_id: str, intent: str, steps: Iterable[tuple[str, dict[str, Any]]], catalog: RoutingGuide) -> PoolDemo | None:
    """A plan over ``catalog`` as a demo, shown with the packs it names and the pipelines it runs;
    None when it is empty or a step names a tool or pipeline ``catalog`` lacks."""
    packs = {p.name: p for p in catalog.packs}
    pipelines = {p.id: p for p in catalog.pipelines}
    steps = [(tool, dict(args or {})) for tool, args in steps]
    run = [str(args.get("id")) for tool, args in steps if tool == PIPELINE_RUN_TOOL]
    named = [tool for tool, _ in steps if tool != PIPELINE_RUN_TOOL]
    if not steps or not all(n in packs for n in named) or not all(i in pipelines for i in run):
        return None
    return PoolDemo(id=demo_id, intent=intent, tools=tuple(packs[n] for n in dict.fromkeys(named)),
                    pipelines=tuple(pipelines[i] for i in dict.fromkeys(run)),
                    steps=tuple({"tool": tool, "args": args} for tool, args in steps))


def pool_from_tasks(tasks: Iterable[PlanTask], catalog: RoutingGuide, k: int = 2) -> DemoPool:
    """Gold tasks over ``catalog`` as a pool: each task whose steps name the catalog's packs or run
    its pipelines (:func:`plan_demo`); each gap task, shown with the :data:`GAP_DEMO_TOOLS` packs
    closest to its request (and an empty plan). Tasks whose steps name other tools or pipelines are
    left out."""
    packs = {p.name: p for p in catalog.packs}
    only_packs = RoutingGuide(packs=catalog.packs)
    demos = []
    for task in tasks:
        if not task.steps:
            tools = tuple(packs[r.id] for r in rank_bm25(only_packs, task.intent)[:GAP_DEMO_TOOLS])
            demos.append(PoolDemo(id=task.id, intent=task.intent, tools=tools, steps=()))
        elif (demo := plan_demo(task.id, task.intent, ((s.tool, s.args) for s in task.steps), catalog)) is not None:
            demos.append(demo)
    return DemoPool(demos=tuple(demos), k=k)


def fit_decline_gate(tasks: Iterable[PlanTask], catalog: RoutingGuide) -> float | None:
    """The decline slot's gate fitted on gold ``tasks``: the lowest :func:`best_match` of a task
    that a tool serves, so that none of them is gated; None when no task that declines scores below
    it (a gate there would never open on the tasks it was fitted to)."""
    scored = [(best_match(catalog, t.intent), bool(t.steps)) for t in tasks]
    serving = [score for score, serves in scored if serves]
    if not serving:
        return None
    gate = min(serving)
    return gate if any(score < gate for score, serves in scored if not serves) else None


def compiled_pool(program: Any, catalog: RoutingGuide, whole: RoutingGuide | None = None) -> DemoPool | None:
    """The demo pool compiled into ``program`` (``compile --knn-demos``), keeping only the demos whose
    tools and pipelines are all in ``catalog`` (the selection): a pool is catalog-specific. With
    the pool's decline slot, a demo that declines needs its tools in ``whole`` (the planner's whole
    catalog) only, since its empty answer names none of them: those the selection dropped are kept
    for the slot alone (``DemoPool.declines``). None without a pool."""
    pool = getattr(program, "demo_pool", None)
    if pool is None:
        return None
    ids, whole_ids = catalog.id_set, (whole or catalog).id_set
    shown = tuple(d for d in pool.demos if d.entry_ids <= ids)
    slot_only = tuple(d for d in pool.demos if pool.decline_slot and not d.steps and not d.entry_ids <= ids
                      and d.entry_ids <= whole_ids)
    return DemoPool(demos=shown, declines=slot_only, k=pool.k, decline_slot=pool.decline_slot,
                    decline_below=pool.decline_below)
