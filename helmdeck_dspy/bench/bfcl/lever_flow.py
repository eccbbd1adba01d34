"""A lever run as one call: answer what a ``levers.toml`` has not answered yet, score every row,
write the tables beside the spec.

:func:`run_lever_spec` is what ``helmdeck-dspy bench levers`` runs; :func:`~helmdeck_dspy.bench.bfcl.levers.run_levers`
(the calls) and :func:`~helmdeck_dspy.bench.bfcl.lever_table.score_levers` (the rows) are its parts.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path

from pydantic import BaseModel, Field

from helmdeck_dspy.bench.bfcl.lever_table import LeverRow
from helmdeck_dspy.bench.bfcl.levers import LeverSpec, load_lever_spec
from helmdeck_dspy.bench.progress import Bars, SilentBars
from helmdeck_dspy.errors import UsageValueError


class LeverReport(BaseModel):
    """What a lever run did and the rows it scored."""

    spec: LeverSpec
    made: dict[str, int] = Field(default_factory=dict, description="Calls made per config in this run.")
    rows: list[LeverRow] = Field(default_factory=list, description="Every config, overall and per category.")
    written: list[Path] = Field(default_factory=list, description="table.md, table.json, exact.png (none when "
                                                                  "no question was answered yet).")


def check_configs(spec: LeverSpec, only: Collection[str] | None) -> None:
    """Raise :class:`UsageValueError` (``argument`` ``--only``) when ``only`` names a config the spec lacks."""
    unknown = sorted(set(only or ()) - {c.name for c in spec.config})
    if unknown:
        raise UsageValueError(f"no config {unknown[0]!r} in {spec.path}", "--only")


def run_lever_spec(
    spec: LeverSpec | str | Path,
    *,
    only: Collection[str] | None = None,
    score_only: bool = False,
    notify: Callable[[str], None] | None = None,
    bars: Bars | None = None,
) -> LeverReport:
    """Answer every (question, config) pair of ``spec`` without a record (resumable), then score
    the rows and write ``table.md``, ``table.json`` and ``exact.png`` beside the spec.

    Args:
        spec: A lever spec or its ``levers.toml``.
        only: Run only these configs (scoring covers them all).
        score_only: Make no LM call: score the trace files there are.
        notify: Called with one-line messages: calls to make, calls made, files written.
        bars: Progress of the calls (None: none shown).

    Raises:
        LeverSpecError: the spec file is unusable.
        UsageValueError: ``only`` names a config the spec lacks.
    """
    from helmdeck_dspy.bench.bfcl.lever_report import write_levers
    from helmdeck_dspy.bench.bfcl.lever_table import score_levers
    from helmdeck_dspy.bench.bfcl.levers import load_questions, pending_pairs, run_levers
    from helmdeck_dspy.bench.provenance import note_row
    from helmdeck_dspy.budgets import budget_for

    spec = spec if isinstance(spec, LeverSpec) else load_lever_spec(spec)
    check_configs(spec, only)
    chosen = set(only) if only else None
    tell = notify or (lambda _msg: None)
    made: dict[str, int] = {}
    if not score_only:
        todo = pending_pairs(spec, load_questions(spec), chosen)
        if todo:
            note_row(spec.folder, budget_for(spec.model))
        tell(f"levers: {len(todo)} calls to make ({spec.lm})")
        with (bars or SilentBars()).stage("levers", len(todo)) as step:
            made = run_levers(spec, only=chosen, progress=lambda _config, _question: step(1))
        tell("made " + ", ".join(f"{k} {v}" for k, v in made.items()))
    rows = score_levers(spec)
    if not rows:
        tell(f"levers: no answered question yet in {spec.folder}; nothing written")
        return LeverReport(spec=spec, made=made)
    written = write_levers(spec, rows)
    tell(f"wrote {', '.join(str(p) for p in written)}")
    return LeverReport(spec=spec, made=made, rows=rows, written=written)
