"""A study's compile arms (``optimizer`` rows): compile what is missing, write each one's test scores
into its manifest entry, and ship the winners.

A compile arm's program is compiled for the spec's model and the row's variant into
``programs/NAME/`` beside the spec. It is done when its entry was made from the same inputs
(:func:`~helmdeck_dspy.compilation.compiler.compiled_entry`: the spec's LMs, seed, temperature and
valset, the optimizer settings, the budget row, the tasks) and its file is intact; a compile cut
off half-way gets the answers it had from DSPy's response cache and goes on. The row's answers
count only when they were planned by the program the row has now (``run.program`` SHA-256), so a
program compiled again is answered again; every answer is a live call.

Once a compile arm and the row it is paired with are scored, its entry gets its test scores before
(the paired row) and after (:class:`~helmdeck_dspy.compilation.manifest.HeldOut`), whether it won
or not. ``ship`` copies an arm that beats its paired row beyond the interval (the paired plan-score
difference's 95% interval above 0) into the compiled root as the model's own program; when several
do for one variant, the largest difference wins.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from helmdeck_dspy.bench.study.spec import StudyConfig, StudySpec
from helmdeck_dspy.bench.study.table import StudyRow

if TYPE_CHECKING:
    from helmdeck_dspy.compilation.manifest import CompileResult, HeldOut, HeldOutScore
    from helmdeck_dspy.compilation.request import CompileRequest


def compile_request(spec: StudySpec, config: StudyConfig) -> CompileRequest:
    """What compiling ``config``'s program asks for (``config`` is a compile arm: it names an optimizer)."""
    assert config.optimizer is not None, f"config {config.name} compiles nothing"
    from helmdeck_dspy.compilation.request import CompileOptions, CompileRequest
    from helmdeck_dspy.compilation.settings import load_optimizer_settings

    options = CompileOptions(model=spec.model, optimizer=config.optimizer, lm=spec.lm, teacher_lm=spec.teacher,
                             out_root=spec.compile_root(config), seed=spec.seed, temperature=spec.temperature,
                             settings=load_optimizer_settings().model_copy(update={"valset": spec.valset}))
    return CompileRequest(variant=config.variant, options=options)


def compile_arms(spec: StudySpec, only: set[str] | None = None) -> list[StudyConfig]:
    """The compile arms (of ``only``) whose program is missing or was compiled from other inputs."""
    from helmdeck_dspy.compilation.compiler import compiled_entry

    return [c for c in spec.config if c.optimizer is not None and (only is None or c.name in only)
            and compiled_entry(compile_request(spec, c)) is None]


def compile_arm(spec: StudySpec, config: StudyConfig, *, notify: Callable[[str], None] | None = None,
                on_call: Callable | None = None) -> None:
    """Compile ``config``'s program into its compile root (resuming a compile cut off)."""
    from helmdeck_dspy.compilation.compiler import compile_program

    compile_program(compile_request(spec, config), resume=True, notify=notify, on_call=on_call)


def program_sha(spec: StudySpec, config: StudyConfig) -> str | None:
    """The SHA-256 of a compile arm's program file now (None: not a compile arm, or not compiled yet)."""
    from helmdeck_dspy.io.datafiles import file_sha256

    path = Path(str(spec.program_choice(config)))
    return file_sha256(path) if config.optimizer is not None and path.is_file() else None


def entry(spec: StudySpec, config: StudyConfig) -> CompileResult | None:
    """The manifest entry of a compile arm's program (None: not compiled yet)."""
    from helmdeck_dspy.compilation.manifest import CompileResult
    from helmdeck_dspy.program.store import model_key, read_manifest

    if config.optimizer is None:
        return None
    found = read_manifest(spec.compile_root(config))["programs"].get(model_key(spec.model, config.variant))
    return CompileResult.model_validate(found) if isinstance(found, dict) else None


def _score(row: StudyRow, program: str) -> HeldOutScore:
    from helmdeck_dspy.compilation.manifest import HeldOutScore

    assert row.plan_score is not None and row.plan_score_low is not None and row.plan_score_high is not None
    assert row.strict.rate is not None and row.strict.low is not None and row.strict.high is not None
    return HeldOutScore(program=program, n=row.n, strict_rate=row.strict.rate, strict_ci=(row.strict.low, row.strict.high),
                        plan_score=row.plan_score, plan_score_ci=(row.plan_score_low, row.plan_score_high))


def _held_out(spec: StudySpec, rows: dict[str, StudyRow], config: StudyConfig, root: Path) -> HeldOut | None:
    """``config``'s test scores against its paired row's, its trace files named relative to ``root``
    (the compiled root whose manifest holds them); None until both are scored."""
    from helmdeck_dspy.bench.study.questions import load_spec_tasks
    from helmdeck_dspy.compilation.manifest import HeldOut
    from helmdeck_dspy.tasks import tasks_sha256

    mine, base = rows.get(config.name), rows.get(spec.baseline_of(config))
    if mine is None or base is None or mine.plan_score_diff is None or mine.plan_score is None:
        return None
    paired = next(c for c in spec.config if c.name == base.config)
    files = sorted(os.path.relpath(spec.trace_path(c).resolve(), root.resolve()) for c in (paired, config))
    low, high = mine.plan_score_diff_low or 0.0, mine.plan_score_diff_high or 0.0
    return HeldOut(split=spec.split or "", tasks_sha256=tasks_sha256(load_spec_tasks(spec)), lm=spec.lm, traces=files,
                   before=_score(base, paired.program or paired.name), after=_score(mine, config.name),
                   diff=mine.plan_score_diff, diff_ci=(low, high))


def record_test_scores(spec: StudySpec, rows: list[StudyRow]) -> list[str]:
    """Write each scored compile arm's test scores into its own manifest entry; returns the arms written."""
    from helmdeck_dspy.compilation.manifest import record_test

    overall = {r.config: r for r in rows if r.scope == "all"}
    written = []
    for config in spec.config:
        found = entry(spec, config)
        test = None if found is None else _held_out(spec, overall, config, spec.compile_root(config))
        if found is None or test is None:
            continue
        if found.test != test:
            found.test = test
            record_test(found, spec.compile_root(config))
        written.append(config.name)
    return written


def beats(row: StudyRow) -> bool:
    """Better than its paired row beyond the interval: the paired plan-score difference's lower end is above 0."""
    return row.plan_score_diff_low is not None and row.plan_score_diff_low > 0


def ship(spec: StudySpec, rows: list[StudyRow], root: Path | None = None) -> list[str]:
    """Copy each variant's best winning compile arm into ``root`` (default: the bundled ``compiled/``)
    with its test scores; returns the manifest keys written."""
    from helmdeck_dspy.compilation.manifest import beside, record_test
    from helmdeck_dspy.io.atomic import atomic_writer
    from helmdeck_dspy.io.resources import compiled_dir
    from helmdeck_dspy.program.store import model_program_path

    root = root or compiled_dir()
    overall = {r.config: r for r in rows if r.scope == "all"}
    best: dict[str, tuple[float, StudyConfig]] = {}
    for config in spec.config:
        row = overall.get(config.name)
        if config.optimizer is None or row is None or not beats(row) or row.plan_score_diff is None:
            continue
        if config.variant not in best or row.plan_score_diff > best[config.variant][0]:
            best[config.variant] = (row.plan_score_diff, config)
    written = []
    for variant, (_, config) in best.items():
        found = entry(spec, config)
        assert found is not None  # a scored compile arm has its entry
        found.test = _held_out(spec, overall, config, root)
        target = model_program_path(spec.model, variant, root)
        source = model_program_path(spec.model, variant, spec.compile_root(config))
        for kept, origin in ((target, source), (beside(target, "run"), beside(source, "run"))):
            if origin.is_file():  # the program, and its compile run's facts
                with atomic_writer(kept, "wb") as handle:
                    handle.write(origin.read_bytes())
        record_test(found.model_copy(update={"path": target.relative_to(root).as_posix()}), root)
        written.append(found.key)
    return written
