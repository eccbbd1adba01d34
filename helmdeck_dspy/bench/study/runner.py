"""Answering a study: every (question, config) pair without a record, block by block, each config's
exchanges appended to ``<config>.jsonl`` beside the spec (see :mod:`~helmdeck_dspy.bench.study.spec`)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from helmdeck_dspy.bench.bfcl.baseline import record_plain
from helmdeck_dspy.bench.bfcl.models import BfclQuestion, BfclSet
from helmdeck_dspy.bench.study.questions import load_questions
from helmdeck_dspy.bench.study.spec import StudyConfig, StudySpec


def done_ids(path: Path, program_sha: str | None = None) -> set[str]:
    """Task ids that already have an answered plan record in a trace file (a transport failure, such
    as a timeout on a loaded machine, is asked again on resume; with ``program_sha``, so is an answer
    a program other than that one planned)."""
    from helmdeck_dspy.traces.io import load_traces

    if not path.exists():
        return set()
    return {r.task_id for r in load_traces(path, on_error="skip") if r.call == "plan" and r.task_id and not r.error
            and (program_sha is None or ((r.run or {}).get("program") or {}).get("sha256", program_sha) == program_sha)}


def start_local(spec: StudySpec) -> None:
    """Start a ``local:`` model's server with the spec's context window before the LM is built
    (which then reuses it); nothing for other LM specs or without ``context``."""
    from helmdeck_dspy.engines.lm_spec import LOCAL_PREFIX

    if spec.context is not None and spec.lm.startswith(LOCAL_PREFIX):
        from helmdeck_dspy.local.endpoint import managed_server
        from helmdeck_dspy.local.server import ServerOptions

        managed_server(spec.lm.removeprefix(LOCAL_PREFIX), ServerOptions(n_ctx=spec.context))


def runnable(config: StudyConfig) -> bool:
    """Whether a row can still make calls: the model alone, or a planner row no retired lever or
    mixed preset keeps from being reproduced."""
    return config.plain or (not config.retired and config.preset is not None)


def pending_pairs(spec: StudySpec, data: BfclSet, only: set[str] | None = None) -> list[tuple[BfclQuestion, StudyConfig]]:
    """The (question, config) pairs without a record yet: block by block of ``spec.block`` questions,
    each config in turn over the block's questions."""
    configs = [c for c in spec.config if (only is None or c.name in only) and c.answers_from is None and runnable(c)]
    from helmdeck_dspy.bench.study.compiled import program_sha

    done = {c.name: done_ids(spec.trace_path(c), program_sha(spec, c)) for c in configs}
    qs = list(data.questions)
    seen: dict[str, int] = {}
    rank = {}
    for q in qs:
        rank[q.id] = seen[q.category] = seen.get(q.category, -1) + 1
    blocks = [qs[i:i + spec.block] for i in range(0, len(qs), spec.block)]
    return [(q, c) for block in blocks for c in configs for q in block
            if c.applies_to(q, rank[q.id]) and q.id not in done[c.name]]


def run_arms(
    spec: StudySpec, *, lm: Any = None, only: set[str] | None = None,
    progress: Callable[[str, BfclQuestion], None] | None = None,
) -> dict[str, int]:
    """Answer every (question, config) pair without a record; returns calls made per config.

    Args:
        spec: The run.
        lm: A ready ``dspy.LM`` (default: built from ``spec.lm`` with the spec's sampling, cache off).
        only: Run these configs only.
        progress: Called before each call with the config name and the question.
    """
    from helmdeck_dspy.engines.lm_spec import LOCAL_PREFIX, make_lm, run_settings
    from helmdeck_dspy.planning.planner import Planner  # imports dspy
    from helmdeck_dspy.planning.prompt import SEEDED_ENDPOINTS
    from helmdeck_dspy.planning.resilience.policy import RetryPolicy

    data = load_questions(spec)
    configs = [c for c in spec.config if only is None or c.name in only]
    pending = pending_pairs(spec, data, only)
    made = {c.name: 0 for c in configs}
    if not pending:
        return made
    if lm is None:
        start_local(spec)
        seeded = spec.lm.startswith((LOCAL_PREFIX, *SEEDED_ENDPOINTS))  # a seed only where the endpoint takes one
        lm = make_lm(spec.lm, api_base=spec.api_base, cache=False, num_retries=0, timeout=spec.timeout_s,
                     sampling={"temperature": spec.temperature, **({"seed": spec.seed} if seeded else {})})
    retry = RetryPolicy(max_attempts=1, timeout_s=spec.timeout_s)
    table = spec.budget_table()
    settings = run_settings(spec.lm) or {}
    pooled = data.pool()[0] if any(c.pool for c in configs) else None
    for q, c in pending:
        if progress is not None:
            progress(c.name, q)
        catalog = pooled if c.pool and pooled is not None else (spec.catalog_of(c) or q.catalog)
        model = c.budget_model or spec.model
        run = {**settings, "lever_config": c.name}
        path = spec.trace_path(c)
        budgets = table.changed_for(model, c.budget) if c.budget else table
        if c.plain:
            record_plain(lm, spec.lm, q.intent, q.id, catalog, path, budgets.lookup(model), run)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                planner = Planner.for_model(
                    model, lm=lm, catalog=catalog, variant=c.variant, budgets=budgets, record_path=path, retry=retry,
                    record_run=run, history=None, use_filter=False, cache=False, program=spec.program_choice(c),
                    answer_strategy=c.answer_strategy,
                    preset=c.preset, fit_decision=c.fit_decision, probe_decision=c.probe_decision,
                )
            planner.plan(q.intent, task_id=q.id)
        made[c.name] += 1
    return made
