"""Running the real planner over gold tasks and recording every exchange as trace records.

- :func:`simulate` — against the simulated tier LM (``source = "sim:<profile>"``);
- :func:`record` — against any LM spec: a live model, ``replay:`` or ``sim:`` (``source = "live"``
  for a live model).

Both plan each task (the first ``n``, cycling when ``n`` exceeds them) for every requested prompt
variant and write all records to ``out`` atomically. While they run, each exchange is appended
as one complete line to ``partial_path(out)`` (``OUT.partial.jsonl`` beside the output), so a run
killed half-way keeps every exchange recorded so far in a readable trace file (at most its last
line torn, which readers report and skip); a finished run removes it.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from helmdeck_dspy.domain import VARIANTS
from helmdeck_dspy.engines.profile import SimProfile, list_profiles, load_profile
from helmdeck_dspy.planning.lm import make_lm, trace_source
from helmdeck_dspy.tasks import PlanTask
from helmdeck_dspy.traces.io import read_traces
from helmdeck_dspy.traces.record import write_traces


def resolve_profiles(names: Iterable[str]) -> list[SimProfile]:
    """Profile names or paths; ``all`` means every bundled profile."""
    out: list[SimProfile] = []
    for name in names:
        out += [load_profile(n) for n in list_profiles()] if name == "all" else [load_profile(name)]
    return out


def _run(
    runs: list[tuple[Any, str, str]],
    tasks: list[PlanTask],
    out: str | Path,
    *,
    variants: Iterable[str],
    n: int | None,
    max_tokens: int | None,
    budgets: str | Path | None,
    progress: Callable[[int], None] | None,
) -> int:
    """``runs``: (LM, model id for the budget lookup, the records' ``source``)."""
    from helmdeck_dspy.planning.planner import Planner  # imports dspy

    chosen = list(itertools.islice(itertools.cycle(tasks), n)) if n else list(tasks)
    variants = list(variants)
    scratch = partial_path(out)
    scratch.unlink(missing_ok=True)  # a previous interrupted run's exchanges are not this run's
    for lm, model, source in runs:
        for variant in variants:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                planner = Planner.for_model(
                    model, lm=lm, variant=variant, max_tokens=max_tokens, record_path=scratch,
                    budgets=budgets, record_source=source,
                )
            for i, task in enumerate(chosen):
                # Repeated tasks (n > len(tasks)) get a distinct request so the model is asked anew.
                intent = task.intent if i < len(tasks) else f"{task.intent} (again, #{i // len(tasks)})"
                planner.plan(intent, context=task.context, task_id=task.id)
                if progress is not None:
                    progress(1)
    records = list(read_traces(scratch)) if scratch.exists() else []
    for i, rec in enumerate(records):
        rec.id = f"{rec.source.split(':', 1)[-1]}-{i:05d}"
    write_traces(records, out)
    scratch.unlink(missing_ok=True)
    return sum(1 for r in records if r.call == "plan")


def partial_path(out: str | Path) -> Path:
    """Where a run appends its exchanges until it finishes (see the module docstring)."""
    target = Path(out)
    return target.with_name(f"{target.name}.partial.jsonl")


def simulate(
    profiles: list[SimProfile],
    tasks: list[PlanTask],
    out: str | Path,
    *,
    variants: Iterable[str] = VARIANTS,
    n: int | None = None,
    max_tokens: int | None = None,
    seed: int = 0,
    model: str | None = None,
    budgets: str | Path | None = None,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Plan the tasks with each simulated profile; returns the number of plan records written."""
    import dspy

    from helmdeck_dspy.engines.sim import SimEngine, sim_model_name  # imports dspy

    runs = [
        (dspy.LM(sim_model_name(p, seed), engine=SimEngine(p, seed=seed), cache=False), model or p.model, f"sim:{p.name}")
        for p in profiles
    ]
    return _run(runs, tasks, out, variants=variants, n=n, max_tokens=max_tokens, budgets=budgets, progress=progress)


def record(
    model: str,
    lm_spec: str | None,
    tasks: list[PlanTask],
    out: str | Path,
    *,
    variants: Iterable[str] = VARIANTS,
    n: int | None = None,
    max_tokens: int | None = None,
    api_base: str | None = None,
    budgets: str | Path | None = None,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Plan the tasks with ``lm_spec`` (default: ``model`` itself, live); returns the plan records written."""
    spec = lm_spec or model
    source = trace_source(spec)
    return _run(
        [(make_lm(spec, api_base=api_base), model, source)], tasks, out, variants=variants, n=n,
        max_tokens=max_tokens, budgets=budgets, progress=progress,
    )
