"""A study as one call: compile what its compile arms lack, answer what it has not answered yet,
score every row, write the tables beside the spec, and record the compile arms' test scores.

:func:`run_study` is what ``helmdeck-dspy bench study`` (and ``bench plan``, step by step) runs; its
parts are :mod:`~helmdeck_dspy.bench.study.compiled` (the compile arms),
:func:`~helmdeck_dspy.bench.study.runner.run_arms` (the calls) and
:func:`~helmdeck_dspy.bench.study.table.score_study` (the rows).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path

from pydantic import BaseModel, Field

from helmdeck_dspy.bench.progress import Bars, SilentBars
from helmdeck_dspy.bench.study.spec import StudySpec, load_study_spec
from helmdeck_dspy.bench.study.table import StudyRow
from helmdeck_dspy.errors import UsageValueError


class StudyReport(BaseModel):
    """What a study run did and the rows it scored."""

    spec: StudySpec
    compiled: list[str] = Field(default_factory=list, description="Compile arms compiled in this run.")
    made: dict[str, int] = Field(default_factory=dict, description="Calls made per config in this run.")
    rows: list[StudyRow] = Field(default_factory=list, description="Every config, overall and per category.")
    written: list[Path] = Field(default_factory=list, description="table.md, table.json, exact.png (none when "
                                                                  "no question was answered yet).")
    tested: list[str] = Field(default_factory=list, description="Compile arms whose manifest entry got its test "
                                                                "scores.")
    shipped: list[str] | None = Field(default=None, description="What was shipped (None: shipping not asked).")


def check_configs(spec: StudySpec, only: Collection[str] | None) -> None:
    """Raise :class:`UsageValueError` (``argument`` ``--only``) when ``only`` names a config the spec lacks."""
    unknown = sorted(set(only or ()) - {c.name for c in spec.config})
    if unknown:
        raise UsageValueError(f"no config {unknown[0]!r} in {spec.path}", "--only")


def left(spec: StudySpec, only: Collection[str] | None = None) -> tuple[list[str], dict[str, int]]:
    """What a study has left (for the configs ``only`` names): the compile arms to compile, and the
    LM calls per config (a compile arm's answers count once it is compiled)."""
    from collections import Counter

    from helmdeck_dspy.bench.study.compiled import compile_arms
    from helmdeck_dspy.bench.study.questions import load_cases
    from helmdeck_dspy.bench.study.runner import pending_pairs

    chosen = set(only) if only else None
    calls = Counter(c.name for _, c in pending_pairs(spec, load_cases(spec), chosen))
    return [c.name for c in compile_arms(spec, chosen)], dict(calls)


def pending(spec: StudySpec, only: Collection[str] | None = None) -> int:
    """What a study has left: its compiles and LM calls (for the configs ``only`` names)."""
    compiles, calls = left(spec, only)
    return len(compiles) + sum(calls.values())


def run_study(
    spec: StudySpec | str | Path,
    *,
    only: Collection[str] | None = None,
    score_only: bool = False,
    ship: bool = False,
    compiled_root: str | Path | None = None,
    notify: Callable[[str], None] | None = None,
    bars: Bars | None = None,
) -> StudyReport:
    """Compile every compile arm of ``spec`` whose program is missing or stale, answer every
    (question, config) pair without a record (resumable), then score the rows, write ``table.md``,
    ``table.json`` and ``exact.png`` beside the spec and the compile arms' test scores into their
    manifest entries.

    Args:
        spec: A study spec or its ``study.toml``.
        only: Run only these configs (scoring covers them all).
        score_only: Make no LM call: score the trace files there are.
        ship: Copy every compile arm that beats its paired row beyond the interval into
            ``compiled_root`` as the model's own program, with its test scores.
        compiled_root: Where ``ship`` writes (None: the bundled ``compiled/``).
        notify: Called with one-line messages: compiles, calls to make, calls made, files written.
        bars: Progress of the compiles and the calls (None: none shown).

    Raises:
        StudySpecError: the spec file is unusable.
        UsageValueError: ``only`` names a config the spec lacks.
    """
    from helmdeck_dspy.bench.provenance import note_row
    from helmdeck_dspy.bench.study.compiled import compile_arm, compile_arms, record_test_scores
    from helmdeck_dspy.bench.study.compiled import ship as ship_winners
    from helmdeck_dspy.bench.study.questions import load_cases
    from helmdeck_dspy.bench.study.report import write_study
    from helmdeck_dspy.bench.study.runner import pending_pairs, run_arms
    from helmdeck_dspy.bench.study.table import score_study
    from helmdeck_dspy.budgets import budget_for

    spec = spec if isinstance(spec, StudySpec) else load_study_spec(spec)
    check_configs(spec, only)
    chosen = set(only) if only else None
    tell = notify or (lambda _msg: None)
    show = bars or SilentBars()
    report = StudyReport(spec=spec)
    if not score_only:
        compiles = compile_arms(spec, chosen)
        todo = pending_pairs(spec, load_cases(spec), chosen)
        if compiles or todo:
            note_row(spec.folder, budget_for(spec.model))
        for i, config in enumerate(compiles, 1):
            tell(f"compile [{i}/{len(compiles)}] {config.name}: {config.optimizer}, {config.variant}")
            with show.calls() as on_call:
                compile_arm(spec, config, notify=tell, on_call=on_call)
            report.compiled.append(config.name)
        if compiles:  # a program compiled again makes its row's answers stale
            todo = pending_pairs(spec, load_cases(spec), chosen)
        tell(f"study: {len(todo)} {'task runs' if spec.loops else 'calls'} to make ({spec.lm})")
        with show.stage("calls", len(todo)) as step:
            report.made = run_arms(spec, only=chosen, progress=lambda _config, _question: step(1))
        tell("made " + ", ".join(f"{k} {v}" for k, v in report.made.items()))
    report.rows = score_study(spec)
    if not report.rows:
        tell(f"study: no answered question yet in {spec.folder}; nothing written")
        return report
    report.written = write_study(spec, report.rows)
    tell(f"wrote {', '.join(str(p) for p in report.written)}")
    report.tested = record_test_scores(spec, report.rows)
    if report.tested:
        tell("test scores in the compiled programs' manifests: " + ", ".join(report.tested))
    if ship:
        report.shipped = ship_winners(spec, report.rows, Path(compiled_root) if compiled_root else None)
        tell("shipped: " + (", ".join(report.shipped) if report.shipped else
                            "nothing: no compile arm beats its paired row beyond its interval"))
    return report
