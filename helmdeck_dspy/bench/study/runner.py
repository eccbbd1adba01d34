"""Answering a study: every (case, config) pair without a record, block by block, each config's
exchanges (an end-to-end or multi-turn study: its checked runs) appended to ``<config>.jsonl``
beside the spec (see :mod:`~helmdeck_dspy.bench.study.spec`)."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helmdeck_dspy.bench.bfcl.baseline import record_plain
from helmdeck_dspy.bench.study.questions import load_cases
from helmdeck_dspy.bench.study.spec import (
    BEFORE_ISSUE_22,
    Case,
    StudyConfig,
    StudySpec,
    StudySpecError,
    before_issue_22,
)

if TYPE_CHECKING:
    from helmdeck_dspy.budgets import BudgetTable

Answer = Callable[[Any, StudyConfig], None]
"""Answers one case under one config and records it."""


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
    """Start a ``local:`` model's server with the spec's context window and engine before the LM is
    built (which then reuses it); nothing for other LM specs or when the spec sets neither."""
    from helmdeck_dspy.engines.lm_spec import LOCAL_PREFIX

    if (spec.context is not None or spec.engine is not None) and spec.lm.startswith(LOCAL_PREFIX):
        from helmdeck_dspy.local.endpoint import managed_server
        from helmdeck_dspy.local.engines import default_engine
        from helmdeck_dspy.local.server import ServerOptions

        options = ServerOptions(engine=spec.engine or default_engine())
        if spec.context is not None:
            options = options.model_copy(update={"n_ctx": spec.context})
        managed_server(spec.lm.removeprefix(LOCAL_PREFIX), options)


def runnable(config: StudyConfig) -> bool:
    """Whether a row can still make calls: the model alone, or a planner row no retired lever or
    mixed preset keeps from being reproduced."""
    return config.plain or (not config.retired and config.preset is not None)


def pending_pairs(spec: StudySpec, cases: Sequence[Case], only: set[str] | None = None) -> list[tuple[Any, StudyConfig]]:
    """The (case, config) pairs without a record yet: block by block of ``spec.block`` cases, each
    config in turn over the block's cases."""
    configs = [c for c in spec.config if (only is None or c.name in only) and c.answers_from is None and runnable(c)]
    from helmdeck_dspy.bench.study.compiled import program_sha

    if spec.loops:
        from helmdeck_dspy.bench.e2e.run import finished

        done = {c.name: finished(spec.trace_path(c)) for c in configs}
    else:
        done = {c.name: done_ids(spec.trace_path(c), program_sha(spec, c)) for c in configs}
    qs = list(cases)
    seen: dict[str, int] = {}
    rank = {}
    for q in qs:
        rank[q.id] = seen[q.category] = seen.get(q.category, -1) + 1
    blocks = [qs[i:i + spec.block] for i in range(0, len(qs), spec.block)]
    return [(q, c) for block in blocks for c in configs for q in block
            if c.applies_to(q, rank[q.id]) and q.id not in done[c.name]]


def run_arms(
    spec: StudySpec, *, lm: Any = None, only: set[str] | None = None,
    progress: Callable[[str, Any], None] | None = None,
) -> dict[str, int]:
    """Answer every (case, config) pair without a record; returns calls made per config (an
    end-to-end study: tasks run).

    Args:
        spec: The run.
        lm: A ready ``dspy.LM`` (default: built from ``spec.lm`` with the spec's sampling, cache off).
        only: Run these configs only.
        progress: Called before each case with the config name and the case.

    Raises:
        ToolSourceError: An end-to-end study's server that cannot start.
    """
    from helmdeck_dspy.engines.lm_spec import LOCAL_PREFIX, make_lm
    from helmdeck_dspy.planning.request import SEEDED_ENDPOINTS

    cases = load_cases(spec)
    configs = [c for c in spec.config if only is None or c.name in only]
    pending = pending_pairs(spec, cases, only)
    made = {c.name: 0 for c in configs}
    if not pending:
        return made
    if lm is None:
        start_local(spec)
        seeded = spec.lm.startswith((LOCAL_PREFIX, *SEEDED_ENDPOINTS))  # a seed only where the endpoint takes one
        lm = make_lm(spec.lm, api_base=spec.api_base, cache=False, num_retries=0, timeout=spec.timeout_s,
                     sampling={"temperature": spec.temperature, **({"seed": spec.seed} if seeded else {})})
    answer = (_run_e2e(spec, lm) if spec.e2e is not None else _run_multi_turn(spec, lm) if spec.multi_turn is not None
              else _ask(spec, lm, cases, configs))
    for case, c in pending:
        if progress is not None:
            progress(c.name, case)
        answer(case, c)
        made[c.name] += 1
    return made


def _budgets(spec: StudySpec, table: BudgetTable, config: StudyConfig) -> tuple[str, BudgetTable]:
    """The model a config plans for, and the budget table with the config's changes."""
    model = config.budget_model or spec.model
    return model, table.changed_for(model, config.budget) if config.budget else table


def _planner_choices(spec: StudySpec, config: StudyConfig) -> dict[str, Any]:
    """The planner options a config sets (None and the defaults: the budget row's and the planner's)."""
    return {"program": spec.program_choice(config), "answer_strategy": config.strategy,
            **(before_issue_22() if config.preset == BEFORE_ISSUE_22 else {}),
            "fit_decision": config.fit_decision, "probe_decision": config.probe_decision, **config.options}


def _ask(spec: StudySpec, lm: Any, cases: Sequence[Any], configs: list[StudyConfig]) -> Answer:
    """Asks one question under a config: the model alone's plain exchange, or one planner call."""
    from helmdeck_dspy.engines.lm_spec import run_settings
    from helmdeck_dspy.planning.planner import Planner  # imports dspy
    from helmdeck_dspy.planning.resilience.policy import RetryPolicy

    retry = RetryPolicy(max_attempts=1, timeout_s=spec.timeout_s)
    table = spec.budget_table()
    settings = run_settings(spec.lm) or {}
    pooled = None
    if any(c.pool for c in configs):
        from helmdeck_dspy.bench.bfcl.models import BfclSet

        pooled = BfclSet(questions=tuple(cases), files={}).pool()[0]

    def answer(q: Any, c: StudyConfig) -> None:
        catalog = pooled if c.pool and pooled is not None else (spec.catalog_of(c) or q.catalog)
        model, budgets = _budgets(spec, table, c)
        run = {**settings, "lever_config": c.name}
        path = spec.trace_path(c)
        if c.plain:
            record_plain(lm, spec.lm, q.intent, q.id, catalog, path, budgets.lookup(model), run)
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            planner = Planner.for_model(
                model, lm=lm, catalog=catalog, variant=c.variant, budgets=budgets, record_path=path, retry=retry,
                record_run=run, history=None, use_filter=False, cache=False, **_planner_choices(spec, c))
        planner.plan(q.intent, task_id=q.id)

    return answer


def _run_e2e(spec: StudySpec, lm: Any) -> Answer:
    """Runs one end-to-end task under a config in a fresh sandbox and appends its checked result to
    the config's file: the model alone's loop, or the planner's (its plan calls recorded under
    ``traces/<config>.jsonl``; its variant the budget row's unless the config names one)."""
    from helmdeck_dspy.bench.e2e.arms import AloneAgent
    from helmdeck_dspy.bench.e2e.run import StudySetup, run_framework_task, run_task

    assert spec.e2e is not None
    source = spec.e2e
    setup = StudySetup(npm_dir=source.npm_dir.absolute(), sqlite_command=source.sqlite_command.absolute())
    table = spec.budget_table()

    endpoints: dict[str, str] = {}

    def answer(task: Any, c: StudyConfig) -> None:
        if c.framework is not None:
            if c.framework not in endpoints:
                endpoints[c.framework] = _framework_url(spec, lm, c.framework)
            result = run_framework_task(task, c.name, base_url=endpoints[c.framework], setup=setup, model=spec.model,
                                        lm=spec.lm, max_steps=source.max_steps, time_cap_s=source.time_cap_s)
        else:
            model, agent = _loop_agent(spec, lm, table, c, AloneAgent)
            result = run_task(task, c.name, agent, setup=setup, model=model, lm=spec.lm, max_steps=source.max_steps,
                              time_cap_s=source.time_cap_s)
        _append(spec, c, result)

    return answer


def _framework_url(spec: StudySpec, lm: Any, how: str) -> str:
    """Where a framework row's agent sends its model calls: the study LM's own OpenAI-compatible
    server (``raw``), or ``helmdeck-dspy serve --openai`` in front of that same server, started on a
    free loopback port for the rest of the run and stopped when the process ends (``endpoint``)."""
    import atexit
    import re
    import subprocess
    import sys
    import threading

    from helmdeck_dspy.engines.streaming import endpoint_of

    raw = endpoint_of(lm)
    if raw is None:
        raise StudySpecError(str(spec.folder), "a framework row needs an LM with an OpenAI-compatible server (local:NAME)")
    if how == "raw":
        return raw
    cli = str(Path(sys.executable).with_name("helmdeck-dspy"))
    args = [cli, "serve", "--openai", "--port", "0", "--lm", str(lm.model), "--api-base", raw, "--no-history", "--no-cache",
            "--timeout", str(spec.timeout_s), *(["--budgets", str(spec.folder / spec.budgets)] if spec.budgets else [])]
    server = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
    atexit.register(server.terminate)
    line = server.stderr.readline() if server.stderr is not None else ""
    found = re.search(r"(http://\S+/v1)", line)
    if found is None:
        server.terminate()
        raise StudySpecError(str(spec.folder), f"serve --openai did not start: {line.strip() or 'no output'}")
    threading.Thread(target=lambda: [None for _ in server.stderr or ()], daemon=True).start()  # never a full pipe
    return found.group(1)


def _run_multi_turn(spec: StudySpec, lm: Any) -> Answer:
    """Runs one BFCL multi-turn question under a config, its turns in order over fresh instances of its
    classes, and appends the checked result to the config's file (as :func:`_run_e2e` does)."""
    from helmdeck_dspy.bench.multi_turn.alone import TurnAlone, TurnChecked
    from helmdeck_dspy.bench.multi_turn.run import run_question

    assert spec.multi_turn is not None
    source = spec.multi_turn
    table = spec.budget_table()

    def answer(question: Any, c: StudyConfig) -> None:
        model, agent = _loop_agent(spec, lm, table, c, TurnAlone, conversation=TurnChecked)
        result = run_question(question, c.name, agent, model=model, lm=spec.lm, max_steps=source.max_steps,
                              time_cap_s=source.time_cap_s)
        _append(spec, c, result)

    return answer


def _loop_agent(spec: StudySpec, lm: Any, table: BudgetTable, c: StudyConfig, alone: Any,
                conversation: Any = None) -> tuple[str, Any]:
    """The model a loop row plans for, and what builds its agent for a catalog: the model alone's
    (``alone``, a class like :class:`~helmdeck_dspy.bench.e2e.arms.AloneAgent`) or the planner (its
    plan calls recorded under ``traces/<config>.jsonl``; its variant the budget row's unless the
    config names one); with ``loop = "chat"`` or ``"chat-checked"``, either in one conversation per
    task (``conversation``'s, by default :class:`~helmdeck_dspy.planning.dialogue.ChatAgent`; a
    multi-turn study's planner: :class:`~helmdeck_dspy.bench.multi_turn.alone.TurnChecked`, the model
    alone's conversation; ``chat-checked``: the planner checks every turn, the first included, and
    makes no plan of its own; ``chat-bare``, multi-turn only: as ``chat``, every answer kept in the
    conversation as its calls in one-line JSON; ``fallback``, e2e only: the re-plan loop, and the
    ``chat-checked`` conversation where its first plan has nothing to run)."""
    from helmdeck_dspy.planning.dialogue import ChatAgent, task_agent
    from helmdeck_dspy.planning.planner import Planner
    from helmdeck_dspy.planning.request import sampling_for

    model, budgets = _budgets(spec, table, c)
    budget = budgets.lookup(model)
    traces = spec.folder / "traces" / f"{c.name}.jsonl"
    traces.parent.mkdir(parents=True, exist_ok=True)

    def agent(catalog: Any) -> Any:
        sampling = sampling_for(budget, str(getattr(lm, "model", "")), lm_kwargs=getattr(lm, "kwargs", None))
        planner = None if c.plain else Planner.for_model(
            model, lm=lm, catalog=catalog, budgets=budgets, record_path=str(traces),
            variant=c.variant if "variant" in c.model_fields_set else None, cache=False, **_planner_choices(spec, c))
        bare = c.loop == "chat-bare"
        if c.loop != "replan" and conversation is not None:  # the model alone's own conversation, the planner in it
            return alone(lm, catalog, budget, sampling, bare=bare) if planner is None else conversation(
                lm, catalog, budget, sampling, planner, planner_first=c.loop != "chat-checked", bare=bare)
        if c.loop == "fallback":
            return task_agent(planner, "fallback")
        if c.loop != "replan":  # one conversation per task in the model's chat format (planning.dialogue)
            return ChatAgent(lm, catalog, budget, sampling, planner=planner, planner_first=c.loop == "chat")
        return alone(lm, catalog, budget, sampling) if planner is None else planner

    return model, agent


def _append(spec: StudySpec, c: StudyConfig, result: Any) -> None:
    """A loop row's checked result, appended to its file as the case finishes."""
    from helmdeck_dspy.traces.record import append_line

    append_line(json.dumps(result.model_dump(mode="json"), ensure_ascii=False), spec.trace_path(c))
