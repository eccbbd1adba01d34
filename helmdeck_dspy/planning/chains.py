"""Pipeline chains: a plan that spells out a pipeline's packs one by one runs the pipeline instead.

helmdeck's planning rules say a pipeline supersedes the packs it chains, even when the request
names those packs; small models still tend to list the packs. This guard applies the rule after
the model: when every pack a catalog pipeline stands for (:attr:`RoutingGuide.pipeline_chains`:
its ``supersedes``, else its ``chain``, else its steps' packs; two packs or more) is among a
plan's steps, those steps become one ``helmdeck__pipeline-run`` step for that pipeline, where the
first of them stood. The longest chain is taken first (a plan may hold more than one); the replaced
steps' args become the run's ``inputs`` (the first step's value wins on a shared key). Steps keep
their order otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from helmdeck_dspy.domain import PIPELINE_RUN_TOOL
from helmdeck_dspy.signatures.types import PlanStep

PIPELINE_CHAINS_KEY = "pipeline_chains"
"""``run`` key of a trace record whose planner ran the chain guard, so a re-scored record is
guarded as it was when planned."""


def recorded_chains(run: Mapping[str, Any] | None, chains: Mapping[str, frozenset[str]]) -> Mapping[str, frozenset[str]] | None:
    """The chains a recorded answer is re-guarded with: ``chains`` when the record's planner ran
    the guard (its ``run`` has :data:`PIPELINE_CHAINS_KEY`), else none."""
    return chains if (run or {}).get(PIPELINE_CHAINS_KEY) else None


def _longest_chain_within(tools: set[str], chains: Mapping[str, frozenset[str]]) -> tuple[str, frozenset[str]] | None:
    best: tuple[str, frozenset[str]] | None = None
    for pid, packs in chains.items():
        if packs <= tools and (best is None or len(packs) > len(best[1])):
            best = (pid, packs)
    return best


def collapse_chains(steps: list[PlanStep], chains: Mapping[str, frozenset[str]]) -> list[PlanStep]:
    """``steps`` with each pipeline's spelled-out chain replaced by a run of the pipeline (see the
    module docstring); the same list when no chain is complete."""
    while chains:
        found = _longest_chain_within({s.tool.strip() for s in steps}, chains)
        if found is None:
            return steps
        pid, packs = found
        replaced = [i for i, s in enumerate(steps) if s.tool.strip() in packs]
        inputs: dict[str, Any] = {}
        for i in replaced:
            for key, value in steps[i].args.items():
                inputs.setdefault(key, value)
        tools = ", ".join(dict.fromkeys(steps[i].tool.strip() for i in replaced))
        run = PlanStep(tool=PIPELINE_RUN_TOOL, args={"id": pid, "inputs": inputs},
                       rationale=f"{pid} chains {tools}, which the plan listed one by one")
        first = replaced[0]
        steps = [run if i == first else s for i, s in enumerate(steps) if i == first or i not in replaced]
    return steps
