"""One end-to-end task run and checked: :func:`run_task` starts the servers in a fresh sandbox,
drives a planner (or the model alone, :class:`~helmdeck_dspy.bench.e2e.arms.AloneAgent`) through
the loop, and checks what the tools did; :func:`select_tasks` picks a study's tasks.

A study with ``[e2e]`` (:mod:`~helmdeck_dspy.bench.study`) appends each :class:`TaskResult` to its
row's ``<config>.jsonl`` as the task finishes, so a stopped run resumes where it was (a task cut
off midway runs again, in a new sandbox). Nothing is cached: every answer is a live one.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from helmdeck_dspy.bench.e2e.checks import E2ETask, load_e2e_tasks, run_checks
from helmdeck_dspy.bench.e2e.public import build_world, world_servers
from helmdeck_dspy.bench.e2e.sandbox import Site, world_digest
from helmdeck_dspy.errors import ToolSourceError
from helmdeck_dspy.io.jsonl import iter_jsonl

if TYPE_CHECKING:
    from helmdeck_dspy.bench.study.spec import E2ESource

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
    split: str | None = Field(default=None, description="The task's half (None in results recorded before tasks "
                              "could fix theirs: task_split's).")
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


ORDER_SEED = 7
"""The tasks run in one fixed shuffled order, so a partial run has every type early on."""


def select_tasks(source: E2ESource, folder: Path, types: tuple[str, ...] = ()) -> list[E2ETask]:
    """A study's tasks, in their run order: ``source``'s file (relative to ``folder``), split and
    ``only``, of ``types`` (empty: every type).

    Raises:
        TaskFileError: The tasks file is unusable.
    """
    from helmdeck_dspy.io.resources import bundled_dir

    path = folder / source.tasks if source.tasks else bundled_dir() / "e2e" / "tasks.jsonl"
    tasks = [t for t in load_e2e_tasks(path)[0]
             if (not source.only or t.id in source.only or t.type in source.only)
             and (source.split == "all" or t.split == source.split) and (not types or t.type in types)]
    random.Random(ORDER_SEED).shuffle(tasks)
    return tasks


def finished(path: Path) -> set[str]:
    """The task ids a row's results file already holds."""
    return {v["task_id"] for _, v in iter_jsonl(path)} if path.exists() else set()


def load_results(path: Path) -> dict[str, TaskResult]:
    """A row's results by task id (the last line of a task wins)."""
    return {r.task_id: r for r in (TaskResult.model_validate(v) for _, v in iter_jsonl(path))} if path.exists() else {}


def run_task(task: E2ETask, arm: str, make_agent: Callable[[Any], Any], *, setup: StudySetup, model: str, lm: str,
             max_steps: int, time_cap_s: float) -> TaskResult:
    """Run ``task`` under ``arm`` in a new sandbox (its world: :func:`~.public.build_world`) and
    check what the tools did.

    Args:
        make_agent: Builds the arm's planner for the servers' catalog.

    Raises:
        ToolSourceError: A server could not start (the study cannot go on without it).
        DataFileError: A public benchmark's task without that benchmark's data.
    """
    from helmdeck_dspy.planning.execution import run_loop
    from helmdeck_dspy.run import McpExecutor, ToolSessions, allow_all

    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    with tempfile.TemporaryDirectory(prefix="helmdeck-e2e-") as tmp, Site() as site:
        root = build_world(task.world, Path(tmp) / "sandbox")
        before = world_digest(root)
        servers = world_servers(task.world, task.servers, root, setup.npm_dir, setup.sqlite_command)
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
        task_id=task.id, type=task.type, kind=task.kind, split=task.split, arm=arm, model=model, lm=lm, success=all(checks),
        checks=checks, plan_calls=len(loop.plans), tool_errors=loop.tool_errors, stopped_because=loop.stopped_because,
        steps=[StepRecord(tool=s.tool, args=s.args, error=o.error, result=o.text[:KEPT_CHARS])
               for s, o in zip(loop.executed, loop.outcomes)],
        error=loop.error, seconds=loop.seconds, turns=getattr(agent, "turns", []), started_at=started)
