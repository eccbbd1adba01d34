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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

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
    turns: list[dict[str, Any]] = Field(default_factory=list, description="The model's own turns, in order (the model "
                                       "alone's loop, or every turn of a conversation loop).")
    model_tokens: list[list[int]] = Field(default_factory=list, description="Prompt and completion tokens of each "
                                          "plan call or turn, in order, as its usage gave them (of a plan with "
                                          "several calls, its last); empty in results recorded before 2026-12-01.")
    started_at: str


def model_tokens(plans: list[Any]) -> list[list[int]]:
    """``[prompt, completion]`` tokens of each plan result whose usage holds both."""
    usages = [p.usage or {} for p in plans]
    return [[u["prompt_tokens"], u["completion_tokens"]] for u in usages
            if isinstance(u.get("prompt_tokens"), int) and isinstance(u.get("completion_tokens"), int)]


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


class World(NamedTuple):
    """A task's fresh sandbox while an arm acts in it: its folder, servers, site and digest before."""

    root: Path
    servers: Any
    site: Any
    before: str


@contextmanager
def task_world(task: E2ETask, setup: StudySetup) -> Iterator[World]:
    """A new sandbox for ``task`` (its world: :func:`~.public.build_world`), with its servers' setup
    and the loopback site; removed when the block ends.

    Raises:
        ToolSourceError: A server is not installed (the study cannot go on without it).
        DataFileError: A public benchmark's task without that benchmark's data.
    """
    with tempfile.TemporaryDirectory(prefix="helmdeck-e2e-") as tmp, Site() as site:
        root = build_world(task.world, Path(tmp) / "sandbox")
        before = world_digest(root)
        servers = world_servers(task.world, task.servers, root, setup.npm_dir, setup.sqlite_command)
        if servers.missing:
            raise ToolSourceError("e2e servers", "not installed: " + "; ".join(servers.missing))
        yield World(root, servers, site, before)


def checked(task: E2ETask, world: World, arm: str, model: str, lm: str, started: str,
            calls: list[tuple[str, dict[str, Any], bool, str]], **how: Any) -> TaskResult:
    """The result of ``task`` under ``arm``: what the tools did (``calls``: tool, arguments, failed,
    whole result), checked in ``world``."""
    results = [(tool, text) for tool, _, error, text in calls if not error]
    steps = [StepRecord(tool=tool, args=args, error=error, result=text[:KEPT_CHARS]) for tool, args, error, text in calls]
    checks = run_checks(task, world.root, results, world.before, world_digest(world.root))
    return TaskResult(task_id=task.id, type=task.type, kind=task.kind, split=task.split, arm=arm, model=model, lm=lm,
                      success=all(checks), checks=checks, steps=steps, tool_errors=sum(s.error for s in steps),
                      started_at=started, **how)


def run_task(task: E2ETask, arm: str, make_agent: Callable[[Any], Any], *, setup: StudySetup, model: str, lm: str,
             max_steps: int, time_cap_s: float) -> TaskResult:
    """Run ``task`` under ``arm``'s loop (:func:`~helmdeck_dspy.planning.execution.run_loop`) in a
    new sandbox and check what the tools did.

    Args:
        make_agent: Builds the arm's planner for the servers' catalog.

    Raises:
        ToolSourceError: A server could not start (the study cannot go on without it).
        DataFileError: A public benchmark's task without that benchmark's data.
    """
    from helmdeck_dspy.planning.execution import run_loop
    from helmdeck_dspy.run import McpExecutor, ToolSessions, allow_all

    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    with task_world(task, setup) as world:
        with ToolSessions(world.servers.sources, env=world.servers.env, cwd=str(world.root)) as tools:
            catalog = tools.catalog()
            agent = make_agent(catalog)
            executor = McpExecutor(tools, catalog, approve=allow_all,  # the reference servers' hints are trusted
                                   trusted=frozenset(s.label for s in tools.sources),
                                   allow_new_writes=True)  # unsafe, in a sandbox: a re-plan may add writes (every arm)
            loop = run_loop(agent, task.intent_for(world.site.url), executor, max_steps=max_steps,
                            time_cap_s=time_cap_s)
        calls = [(s.tool, s.args, o.error, o.text) for s, o in zip(loop.executed, loop.outcomes)]
        plans = [*getattr(agent, "unreturned", []), *loop.plans]
        return checked(task, world, arm, model, lm, started, calls, plan_calls=len(plans), model_tokens=model_tokens(plans),
                       stopped_because=loop.stopped_because, error=loop.error, seconds=loop.seconds,
                       turns=getattr(agent, "turns", []))


def run_framework_task(task: E2ETask, arm: str, *, base_url: str, setup: StudySetup, model: str, lm: str,
                       max_steps: int, time_cap_s: float) -> TaskResult:
    """Run ``task`` with the OpenAI Agents SDK's own loop, its model at ``base_url``
    (:mod:`~helmdeck_dspy.bench.e2e.framework`), in a new sandbox, and check what the tools did."""
    from helmdeck_dspy.bench.e2e.framework import run_framework

    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    with task_world(task, setup) as world:
        run = run_framework(task.intent_for(world.site.url), world.servers.sources, world.servers.env,
                            str(world.root), base_url=base_url, model=model, max_turns=max_steps,
                            time_cap_s=time_cap_s)
        calls = [(s.tool, s.args, s.error, s.text) for s in run.steps]
        return checked(task, world, arm, model, lm, started, calls, plan_calls=run.turns,
                       stopped_because=run.stopped_because, error=run.error, seconds=run.seconds,
                       turns=[{"content": run.final[:KEPT_CHARS]}] if run.final else [])
