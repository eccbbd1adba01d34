"""Running the end-to-end study: every task, in a fresh sandbox, under each arm; one line a result.

:func:`run_e2e` appends a :class:`TaskResult` to ``OUT/results.jsonl`` as each (model, arm, task)
finishes, so an interrupted run resumes where it stopped (a task cut off midway runs again, in a
new sandbox). Plan calls of the planner arm are recorded as trace records in
``OUT/traces/<model>.jsonl``; the model alone's turns are kept in its result lines. Nothing is
cached: every answer is a live one.
"""

from __future__ import annotations

import json
import random
import tempfile
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from helmdeck_dspy.bench.e2e.arms import ARMS, LEVER_ARMS, AloneAgent
from helmdeck_dspy.bench.e2e.checks import E2ETask, run_checks
from helmdeck_dspy.bench.e2e.sandbox import Site, build_sandbox, server_sources, world_digest
from helmdeck_dspy.bench.provenance import note_row
from helmdeck_dspy.errors import ArgumentError, ToolSourceError
from helmdeck_dspy.io.jsonl import iter_jsonl
from helmdeck_dspy.traces.record import append_line

MAX_STEPS = 8
TIME_CAP_S = 600.0
KEPT_CHARS = 2000
"""How much of each tool result a result line keeps."""


class StepRecord(BaseModel):
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    error: bool = False
    result: str = ""


class TaskResult(BaseModel):
    """One task under one arm for one model: did the tools do what was asked, and how it went."""

    task_id: str
    type: str
    kind: str
    arm: str
    model: str
    lm: str
    success: bool
    checks: list[bool]
    steps: list[StepRecord]
    plan_calls: int
    tool_errors: int
    stopped_because: str
    error: str | None = None
    seconds: float
    turns: list[dict[str, Any]] = Field(default_factory=list, description="The model alone's answers, in order.")
    started_at: str


class StudySetup(BaseModel):
    """Where the servers that are not in this environment live."""

    npm_dir: Path
    sqlite_command: Path


CHUNK = 10
ORDER_SEED = 7


def _chunks(tasks: Sequence[E2ETask]) -> list[list[E2ETask]]:
    order = list(tasks)
    random.Random(ORDER_SEED).shuffle(order)
    return [order[i:i + CHUNK] for i in range(0, len(order), CHUNK)]


def done_keys(path: Path) -> set[tuple[str, str, str]]:
    """The (model, arm, task) triples a results file already holds."""
    if not path.exists():
        return set()
    return {(v["model"], v["arm"], v["task_id"]) for _, v in iter_jsonl(path)}


def run_task(task: E2ETask, arm: str, make_agent: Callable[[Any], Any], *, setup: StudySetup, model: str, lm: str,
             max_steps: int = MAX_STEPS, time_cap_s: float = TIME_CAP_S) -> TaskResult:
    """Run ``task`` under ``arm`` in a new sandbox and check what the tools did.

    Args:
        make_agent: Builds the arm's planner for the servers' catalog.

    Raises:
        ToolSourceError: A server could not start (the study cannot go on without it).
    """
    from helmdeck_dspy.planning.execution import run_loop
    from helmdeck_dspy.run import McpExecutor, ToolSessions, allow_all

    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    with tempfile.TemporaryDirectory(prefix="helmdeck-e2e-") as tmp, Site() as site:
        root = build_sandbox(Path(tmp) / "sandbox")
        before = world_digest(root)
        servers = server_sources(root, setup.npm_dir, setup.sqlite_command)
        if servers.missing:
            raise ToolSourceError("e2e servers", "not installed: " + "; ".join(servers.missing))
        with ToolSessions(servers.sources, env=servers.env, cwd=str(root)) as tools:
            catalog = tools.catalog()
            agent = make_agent(catalog)
            loop = run_loop(agent, task.intent_for(site.url), McpExecutor(tools, catalog, approve=allow_all),
                            max_steps=max_steps, time_cap_s=time_cap_s)
        results = [(s.tool, o.text) for s, o in zip(loop.executed, loop.outcomes) if not o.error]
        checks = run_checks(task, root, results, before, world_digest(root))
    return TaskResult(
        task_id=task.id, type=task.type, kind=task.kind, arm=arm, model=model, lm=lm, success=all(checks),
        checks=checks, plan_calls=len(loop.plans), tool_errors=loop.tool_errors, stopped_because=loop.stopped_because,
        steps=[StepRecord(tool=s.tool, args=s.args, error=o.error, result=o.text[:KEPT_CHARS])
               for s, o in zip(loop.executed, loop.outcomes)],
        error=loop.error, seconds=loop.seconds, turns=getattr(agent, "turns", []), started_at=started)


def run_e2e(
    tasks: Sequence[E2ETask], *, model: str, lm_spec: str, out_dir: Path, setup: StudySetup,
    arms: Sequence[str] = ARMS, api_base: str | None = None, max_steps: int = MAX_STEPS,
    time_cap_s: float = TIME_CAP_S, progress: Callable[[TaskResult, int, int], None] | None = None,
) -> Path:
    """Run every task under every arm for ``model`` and append each result to ``OUT/results.jsonl``.

    Tasks run in a fixed shuffled order (every type early on), ten at a time, arm by arm within
    each ten: pairs accumulate as the run goes, and each arm's run of calls keeps the local
    server's prompt cache warm (the model alone's prompt is the same on every first call). A
    (model, arm, task) the file already holds is not run again.

    Returns:
        The results file.

    Raises:
        ArgumentError: An unknown arm.
        ToolSourceError: A server that cannot start.
    """
    from helmdeck_dspy.budgets import budget_for, load_budget_table
    from helmdeck_dspy.engines.lm_spec import make_lm
    from helmdeck_dspy.planning.planner import Planner
    from helmdeck_dspy.planning.prompt import sampling_for

    unknown = [a for a in arms if a not in (*ARMS, *LEVER_ARMS)]
    if unknown:
        raise ArgumentError(f"unknown arm {unknown[0]!r}; expected {', '.join((*ARMS, *LEVER_ARMS))}")
    out_dir.mkdir(parents=True, exist_ok=True)
    results = out_dir / "results.jsonl"
    traces = out_dir / "traces" / f"{model.replace('/', '_')}.jsonl"
    traces.parent.mkdir(exist_ok=True)
    done = done_keys(results)
    budget = budget_for(model, load_budget_table(None))
    lm = make_lm(lm_spec, api_base=api_base, cache=False, num_retries=0, timeout=time_cap_s)
    sampling = sampling_for(budget, str(getattr(lm, "model", "")))

    def agent_for(arm: str) -> Callable[[Any], Any]:
        if arm == "alone":
            return lambda catalog: AloneAgent(lm, catalog, budget, sampling)
        return lambda catalog: Planner.for_model(model, lm=lm, catalog=catalog, record_path=str(traces),
                                                 **LEVER_ARMS.get(arm, {}))

    todo = [(arm, t) for chunk in _chunks(tasks) for arm in arms for t in chunk if (model, arm, t.id) not in done]
    if todo:
        note_row(out_dir, budget)
    for i, (arm, task) in enumerate(todo, 1):
        result = run_task(task, arm, agent_for(arm), setup=setup, model=model, lm=lm_spec, max_steps=max_steps,
                          time_cap_s=time_cap_s)
        append_line(json.dumps(result.model_dump(mode="json"), ensure_ascii=False), results)  # one write: runs may share the file
        if progress is not None:
            progress(result, i, len(todo))
    return results

