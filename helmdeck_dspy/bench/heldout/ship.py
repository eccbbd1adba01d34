"""Test scores into the manifests, and shipping the winners.

Every compiled config's manifest entry gets its test scores before (the baseline) and after
(:class:`~helmdeck_dspy.compilation.manifest.HeldOut`) once both runs are scored, whether it won
or not. A program that beats the baseline (the paired plan-score difference's 95% interval above
0) is copied with that entry into the compiled root as the model's own program. When several
configs beat the baseline for a variant, the largest difference wins. Nothing else is touched:
without a winner, ``Planner.for_model`` keeps using what the compiled root already holds.
"""

from __future__ import annotations

import os
from pathlib import Path

from helmdeck_dspy.compilation.manifest import (
    HeldOut,
    HeldOutScore,
    beside,
    record_test,
)
from helmdeck_dspy.bench.heldout.spec import HeldOutSpec
from helmdeck_dspy.bench.heldout.table import RowScore
from helmdeck_dspy.io.atomic import atomic_writer
from helmdeck_dspy.io.resources import compiled_dir
from helmdeck_dspy.program.store import model_program_path
from helmdeck_dspy.tasks import load_tasks, tasks_sha256


def winners(spec: HeldOutSpec, rows: list[RowScore]) -> dict[str, RowScore]:
    """The best compiled config per variant among those that beat the baseline."""
    best: dict[str, RowScore] = {}
    for row in rows:
        if spec.get(row.config).optimizer is None or not row.beats_baseline or row.diff is None:
            continue
        if row.variant not in best or row.diff > (best[row.variant].diff or 0):
            best[row.variant] = row
    return best


def _score(row: RowScore) -> HeldOutScore:
    assert row.strict is not None and row.strict_ci and row.score is not None and row.score_ci
    return HeldOutScore(program=row.program or row.config, n=row.n, strict_rate=row.strict, strict_ci=row.strict_ci,
                        plan_score=row.score, plan_score_ci=row.score_ci)


def _held_out(spec: HeldOutSpec, rows: list[RowScore], row: RowScore, root: Path) -> HeldOut:
    """``row``'s test scores against the baseline's, its trace files named relative to ``root`` (the
    compiled root whose manifest holds them)."""
    base = next(r for r in rows if r.variant == row.variant and r.config == spec.baseline)
    files = sorted({os.path.relpath(spec.trace_files(spec.get(r.config))[row.variant].resolve(), root.resolve())
                    for r in (base, row)})
    return HeldOut(split=spec.split, tasks_sha256=tasks_sha256(load_tasks(spec.split)), lm=spec.lm, traces=files,
                   before=_score(base), after=_score(row), diff=row.diff or 0.0, diff_ci=row.diff_ci or (0.0, 0.0))


def record_test_scores(spec: HeldOutSpec, rows: list[RowScore]) -> list[str]:
    """Write each scored compiled config's test scores into its own manifest entry; returns
    ``config id/variant`` for each entry written."""
    written = []
    for row in rows:
        config = spec.get(row.config)
        entry = spec.manifest_entry(config, row.variant)
        if entry is None or row.diff is None or row.score is None:
            continue
        root = spec.compile_root(config)
        test = _held_out(spec, rows, row, root)
        if entry.test != test:
            entry.test = test
            record_test(entry, root)
        written.append(f"{row.config}/{row.variant}")
    return written


def ship(spec: HeldOutSpec, rows: list[RowScore], root: Path | None = None) -> list[str]:
    """Copy each variant's winner into ``root`` (default: the bundled ``compiled/``); returns the keys written."""
    written = []
    root = root or compiled_dir()
    for variant, row in winners(spec, rows).items():
        config = spec.get(row.config)
        source_root = spec.compile_root(config)
        entry = spec.manifest_entry(config, variant)
        assert entry is not None  # a scored compiled config has its entry
        entry.test = _held_out(spec, rows, row, root)
        target = model_program_path(spec.model, variant, root)
        source = model_program_path(spec.model, variant, source_root)
        for kept, origin in ((target, source), (beside(target, "run"), beside(source, "run"))):
            if origin.is_file():  # the program, and its compile run's facts
                with atomic_writer(kept, "wb") as handle:
                    handle.write(origin.read_bytes())
        record_test(entry.model_copy(update={"path": target.relative_to(root).as_posix()}), root)
        written.append(entry.key)
    return written
