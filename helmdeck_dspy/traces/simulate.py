"""``traces simulate``: run the real planner against the simulated tier LM over gold tasks and
record every exchange as trace records (``source = "sim:<profile>"``)."""

from __future__ import annotations

import itertools
import tempfile
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path

from helmdeck_dspy.engines.profile import SimProfile, list_profiles, load_profile
from helmdeck_dspy.tasks import PlanTask
from helmdeck_dspy.traces.record import read_traces, write_traces

VARIANTS = ("full_steps", "single_pick")


def resolve_profiles(names: Iterable[str]) -> list[SimProfile]:
    """Profile names or paths; ``all`` means every bundled profile."""
    out: list[SimProfile] = []
    for name in names:
        out += [load_profile(n) for n in list_profiles()] if name == "all" else [load_profile(name)]
    return out


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
    """Plan each task (the first ``n``, cycling when ``n`` exceeds them) for every profile and
    variant; write all records to ``out`` atomically. Returns the number of plan records."""
    from helmdeck_dspy.engines.sim import SimEngine, sim_model_name
    from helmdeck_dspy.planner import Planner

    import dspy

    chosen = list(itertools.islice(itertools.cycle(tasks), n)) if n else list(tasks)
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp) / "records.jsonl"
        for profile in profiles:
            lm = dspy.LM(sim_model_name(profile, seed), engine=SimEngine(profile, seed=seed), cache=False)
            for variant in variants:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    planner = Planner.for_model(
                        model or profile.model, lm=lm, variant=variant, max_tokens=max_tokens, record_path=scratch,
                        budgets=budgets, record_source=f"sim:{profile.name}",
                    )
                for i, task in enumerate(chosen):
                    # Repeated tasks (n > len(tasks)) get a distinct request so the simulator varies.
                    intent = task.intent if i < len(tasks) else f"{task.intent} (again, #{i // len(tasks)})"
                    planner.plan(intent, context=task.context, task_id=task.id)
                    if progress is not None:
                        progress(1)
        records = list(read_traces(scratch)) if scratch.exists() else []
        for i, rec in enumerate(records):
            rec.id = f"{rec.source.split(':', 1)[-1]}-{i:05d}"
        write_traces(records, out)
    return sum(1 for r in records if r.call == "plan")
