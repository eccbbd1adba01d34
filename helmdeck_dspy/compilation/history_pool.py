"""Plans from plan history as demo-pool entries: the self-learning loop, kept private.

A plan-history row holds no words of the request or its arguments, only keyed hashes
(:mod:`helmdeck_dspy.planning.history`), so a row cannot become a demo by itself. The words come
from trace files the planner recorded on this install (``plan --record FILE``, ``Planner(record_path=...)``).
A recorded plan joins the pool when history holds a row for it: the same keyed intent hash, the
same tools in order and the same keyed argument hashes, that is, a plan this install accepted.
As for the train tasks (:func:`~helmdeck_dspy.program.demo_pool.plan_demo`), only plans whose
steps all name packs or run pipelines of the compile's catalog are kept; each intent is kept once
(its latest plan).

``compile --knn-demos K --history-traces FILE`` adds these to the train split's pool.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.evaluation.scoring import guard_completion
from helmdeck_dspy.planning.chains import recorded_chains
from helmdeck_dspy.planning.history import HistoryStore, args_sha, intent_sha
from helmdeck_dspy.program.demo_pool import PoolDemo, plan_demo
from helmdeck_dspy.traces.io import load_traces


def history_demos(traces: Iterable[str | Path], store: HistoryStore, catalog: RoutingGuide,
                  caller: str | None = None) -> tuple[PoolDemo, ...]:
    """The recorded plans in ``traces`` that ``store`` lists as accepted (for ``caller``; every
    caller when None), as pool demos over ``catalog``.

    Raises:
        TraceFileError: A trace file is missing or has a malformed line (file and line named).
    """
    accepted = {(row.intent_sha, tuple((s.tool, s.args_sha) for s in row.steps)) for row in store.rows(caller)}
    schemas = {p.name: p.parameters for p in catalog.packs if p.parameters}
    found: dict[str, PoolDemo] = {}
    for path in traces:
        for rec in load_traces(path):
            if rec.call != "plan" or not rec.intent or rec.error:
                continue
            guarded = guard_completion(
                rec.content, rec.finish_reason, rec.reasoning_content, variant=rec.prompt_variant or "full_steps",
                catalog_ids=catalog.id_set, pipeline_ids={p.id for p in catalog.pipelines},
                tool_calls=rec.tool_calls, refusal=rec.refusal, schemas=schemas,
                chains=recorded_chains(rec.run, catalog.pipeline_chains),
            )
            steps = guarded.steps or []
            sha = intent_sha(rec.intent, store.keyed)
            if (sha, tuple((s.tool, args_sha(s.args, store.keyed) if s.args else None) for s in steps)) not in accepted:
                continue
            demo = plan_demo(f"history-{sha}", rec.intent, ((s.tool, s.args) for s in steps), catalog)
            if demo is not None:
                found.pop(sha, None)  # the latest plan for an intent, in file order
                found[sha] = demo
    return tuple(found.values())


def demos_sha256(demos: Iterable[PoolDemo]) -> str:
    """A hash of demos' requests and plans (what a compile's result depends on)."""
    text = "\n".join(f"{d.intent}\t{d.steps}" for d in demos)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
