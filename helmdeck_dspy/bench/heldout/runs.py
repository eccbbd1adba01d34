"""Running a held-out comparison: compile what is missing, record what is missing, in spec order.

Every step resumes. A compiled config's program is done when its manifest entry was made from the
same inputs (:func:`~helmdeck_dspy.compilation.compiler.compiled_entry`: the spec's LMs, seed,
temperature and valset, the optimizer settings, the budget row, the tasks) and its file is
intact; a compile cut off half-way gets the answers it had from DSPy's response cache and goes
on. A scoring run is done when its file exists and its records were planned by the program the
config names now (their ``run.program`` SHA-256; records that predate it are taken as they are).
One cut off half-way continues from its ``.partial.jsonl`` and sends only the requests not yet
answered (those are never answered from a cache: every scoring record is a call made to the live
model).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from helmdeck_dspy.bench.heldout.spec import HeldOutConfig, HeldOutSpec
from helmdeck_dspy.recording.trace_sets import partial_path

if TYPE_CHECKING:
    from helmdeck_dspy.compilation.request import CompileRequest

Step = tuple[str, str, str]
"""(kind, config id, variant or "both"): ``compile`` or ``record``."""


def pending_steps(spec: HeldOutSpec, only: list[str] | None = None, variants: list[str] | None = None) -> list[Step]:
    """The steps still to do for the configs ``only`` names and the ``variants`` (default: all),
    in spec order."""
    from helmdeck_dspy.compilation.compiler import compiled_entry

    steps: list[Step] = []
    for config in spec.config:
        if only and config.id not in only:
            continue
        chosen = [v for v in spec.variants if not variants or v in variants]
        compiling = [v for v in (chosen if config.optimizer is not None else [])
                     if compiled_entry(compile_request(spec, config, v)) is None]
        steps += [("compile", config.id, v) for v in compiling]
        todo = sorted(v for v in chosen if v in compiling or needs_record(spec, config, v))
        if not config.per_variant and todo:
            steps.append(("record", config.id, "both" if len(todo) > 1 else todo[0]))
        else:
            steps += [("record", config.id, v) for v in todo]
    return steps


def needs_record(spec: HeldOutSpec, config: HeldOutConfig, variant: str) -> bool:
    """Whether ``config``'s scoring run for ``variant`` is missing, cut off, or stale."""
    path = spec.trace_files(config)[variant]
    return not path.is_file() or partial_path(path).exists() or _stale(spec, config, variant, path)


def _stale(spec: HeldOutSpec, config: HeldOutConfig, variant: str, path: Path) -> bool:
    """Whether ``path``'s ``variant`` records were planned by another program than the one
    ``config`` names now."""
    import warnings

    from helmdeck_dspy.budgets import budget_for
    from helmdeck_dspy.program.store import resolve_program
    from helmdeck_dspy.traces.io import read_jsonl_traces

    stamped = next(((r.run or {}).get("program") for r in read_jsonl_traces(path, on_error="skip")
                    if r.call == "plan" and r.prompt_variant == variant), None)
    if not isinstance(stamped, dict) or "sha256" not in stamped:
        return False
    tier = budget_for(spec.model).tier
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, ref = resolve_program(spec.model, tier, variant, None, spec.program_for(config, variant))
    return ref.sha256 != stamped["sha256"]


def compile_request(spec: HeldOutSpec, config: HeldOutConfig, variant: str) -> CompileRequest:
    """What compiling ``config``'s program for ``variant`` asks for: the spec's model, LMs, seed,
    temperature and valset, the config's optimizer, into the config's compile root."""
    from helmdeck_dspy.compilation.request import CompileOptions, CompileRequest
    from helmdeck_dspy.compilation.settings import load_optimizer_settings

    options = CompileOptions(model=spec.model, optimizer=config.optimizer, lm=spec.lm, teacher_lm=spec.teacher,
                             out_root=spec.compile_root(config), seed=spec.seed, temperature=spec.temperature,
                             settings=load_optimizer_settings().model_copy(update={"valset": spec.valset}))
    return CompileRequest(variant=variant, options=options)


def compile_config(spec: HeldOutSpec, config: HeldOutConfig, variant: str, *, notify: Callable[[str], None] | None = None,
                   on_call: Callable | None = None) -> None:
    """Compile ``config``'s program for ``variant`` into its compile root (skipped when already done)."""
    from helmdeck_dspy.compilation.compiler import compile_program

    compile_program(compile_request(spec, config, variant), resume=True, notify=notify, on_call=on_call)


def record_config(spec: HeldOutSpec, config: HeldOutConfig, variant: str, *, notify: Callable[[str], None] | None = None,
                  progress: Callable[[int], None] | None = None) -> Path:
    """Record ``config``'s scoring run for ``variant`` (or ``both``) on the spec's split; returns the file."""
    from helmdeck_dspy.planning.options import PlannerOptions
    from helmdeck_dspy.planning.resilience.policy import RetryPolicy
    from helmdeck_dspy.recording.trace_sets import record
    from helmdeck_dspy.tasks import load_tasks

    variants = spec.variants if variant == "both" else [variant]
    out = spec.trace_files(config)[variants[0]]
    if not any(needs_record(spec, config, v) for v in variants):
        if notify is not None:
            notify(f"{out}: already recorded with this program")
        return out
    options = PlannerOptions(retry=RetryPolicy(max_attempts=2, timeout_s=spec.timeout_s),
                             program=spec.program_for(config, variants[0]))
    record(spec.model, spec.lm, load_tasks(spec.split), out, options=options, variants=variants,
           temperature=spec.temperature, seed=spec.seed, progress=progress, notify=notify)
    return out
