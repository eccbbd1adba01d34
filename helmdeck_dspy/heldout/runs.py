"""Running a held-out comparison: compile what is missing, record what is missing, in spec order.

Every step resumes. A compiled config's programs are skipped when their manifest entry was made
from the same inputs; a compile cut off half-way gets the answers it had from DSPy's response
cache and goes on. A scoring run cut off half-way continues from its ``.partial.jsonl`` and sends
only the requests not yet answered (those are never answered from a cache: every scoring record
is a call made to the live model).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from helmdeck_dspy.heldout.spec import HeldOutConfig, HeldOutSpec
from helmdeck_dspy.traces.runs import partial_path

Step = tuple[str, str, str]
"""(kind, config id, variant or "both"): ``compile`` or ``record``."""


def pending_steps(spec: HeldOutSpec, only: list[str] | None = None) -> list[Step]:
    """The steps still to do for the configs ``only`` names (default: all), in spec order."""
    from helmdeck_dspy.program.store import model_key, model_program_path, read_manifest

    steps: list[Step] = []
    for config in spec.config:
        if only and config.id not in only:
            continue
        if config.optimizer is not None:
            listed = read_manifest(spec.compile_root(config))["programs"]
            for v in spec.variants:
                if model_key(spec.model, v) not in listed or not model_program_path(spec.model, v, spec.compile_root(config)).is_file():
                    steps.append(("compile", config.id, v))
        files = spec.trace_files(config)
        todo = sorted({v for v, p in files.items() if not p.is_file() or partial_path(p).exists()})
        if not config.per_variant and todo:
            steps.append(("record", config.id, "both" if len(todo) > 1 else todo[0]))
        else:
            steps += [("record", config.id, v) for v in todo]
    return steps


def compile_config(spec: HeldOutSpec, config: HeldOutConfig, variant: str, *, notify: Callable[[str], None] | None = None,
                   on_call: Callable | None = None) -> None:
    """Compile ``config``'s program for ``variant`` into its compile root (skipped when already done)."""
    from helmdeck_dspy.compilation.compiler import compile_program
    from helmdeck_dspy.compilation.settings import load_optimizer_settings

    settings = load_optimizer_settings().model_copy(update={"valset": spec.valset})
    compile_program(None, variant, model=spec.model, optimizer=config.optimizer or "fit", lm_spec=spec.lm,
                    teacher_lm_spec=spec.teacher, out_root=spec.compile_root(config), seed=spec.seed,
                    temperature=spec.temperature, resume=True, settings=settings, notify=notify, on_call=on_call)


def record_config(spec: HeldOutSpec, config: HeldOutConfig, variant: str, *, notify: Callable[[str], None] | None = None,
                  progress: Callable[[int], None] | None = None) -> Path:
    """Record ``config``'s scoring run for ``variant`` (or ``both``) on the spec's split; returns the file."""
    from helmdeck_dspy.planning.resilience.policy import RetryPolicy
    from helmdeck_dspy.tasks import load_tasks
    from helmdeck_dspy.traces.runs import record

    variants = spec.variants if variant == "both" else [variant]
    out = spec.trace_files(config)[variants[0]]
    record(spec.model, spec.lm, load_tasks(spec.split), out, variants=variants, temperature=spec.temperature,
           seed=spec.seed, retry=RetryPolicy(max_attempts=2, timeout_s=spec.timeout_s),
           program=spec.program_for(config, variants[0]),
           progress=progress, notify=notify)
    return out
