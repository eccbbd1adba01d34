"""Test scores into the manifests, and shipping the winners.

Every compiled config's manifest entry gets its test scores before (the baseline) and after
(:class:`~helmdeck_dspy.compilation.manifest.HeldOut`) once both runs are scored, whether it won
or not. A program that beats the baseline (the paired plan-score difference's 95% interval above
0) is copied with that entry into the compiled root as the model's own program. When several
configs beat the baseline for a variant, the largest difference wins. Nothing else is touched:
without a winner, ``Planner.for_model`` keeps using the tier program.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from helmdeck_dspy.compilation.manifest import (
    CompileResult,
    HeldOut,
    HeldOutScore,
    update_manifest,
)
from helmdeck_dspy.heldout.spec import HeldOutSpec
from helmdeck_dspy.heldout.table import RowScore
from helmdeck_dspy.io.atomic import atomic_writer
from helmdeck_dspy.io.datafiles import file_sha256
from helmdeck_dspy.program.store import model_key, model_program_path, read_manifest
from helmdeck_dspy.tasks import load_tasks


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


def _held_out(spec: HeldOutSpec, rows: list[RowScore], row: RowScore, split_sha: str) -> HeldOut:
    base = next(r for r in rows if r.variant == row.variant and r.config == spec.baseline)
    files = sorted({_shown(spec.trace_files(spec.get(r.config))[row.variant]) for r in (base, row)})
    return HeldOut(split=spec.split, tasks_sha256=split_sha, lm=spec.lm, traces=files, before=_score(base),
                   after=_score(row), diff=row.diff or 0.0, diff_ci=row.diff_ci or (0.0, 0.0))


def _shown(path: Path) -> str:
    """A trace file as the manifest names it: relative to the working directory when under it (the
    repository root, for the committed comparisons), else absolute."""
    path = path.resolve()
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


def _split_sha(spec: HeldOutSpec) -> str:
    return hashlib.sha256("\n".join(t.model_dump_json() for t in load_tasks(spec.split)).encode()).hexdigest()


def record_test_scores(spec: HeldOutSpec, rows: list[RowScore]) -> list[str]:
    """Write each scored compiled config's test scores into its own manifest entry; returns
    ``config id/variant`` for each entry written."""
    written = []
    split_sha = None
    for row in rows:
        config = spec.get(row.config)
        if config.optimizer is None or row.diff is None or row.score is None:
            continue
        root = spec.compile_root(config)
        listed = read_manifest(root)["programs"]
        key = model_key(spec.model, row.variant)
        if key not in listed:
            continue
        split_sha = split_sha or _split_sha(spec)
        entry = CompileResult.model_validate(listed[key])
        test = _held_out(spec, rows, row, split_sha)
        if entry.test != test:
            entry.test = test
            update_manifest(entry, root)
        written.append(f"{row.config}/{row.variant}")
    return written


def ship(spec: HeldOutSpec, rows: list[RowScore], root: Path | None = None) -> list[str]:
    """Copy each variant's winner into ``root`` (default: the bundled ``compiled/``); returns the keys written."""
    written = []
    split_sha = _split_sha(spec)
    for variant, row in winners(spec, rows).items():
        source_root = spec.compile_root(spec.get(row.config))
        key = model_key(spec.model, variant)
        entry = CompileResult.model_validate(read_manifest(source_root)["programs"][key])
        entry.test = _held_out(spec, rows, row, split_sha)
        target = model_program_path(spec.model, variant, root)
        with atomic_writer(target, "wb") as handle:
            handle.write(model_program_path(spec.model, variant, source_root).read_bytes())
        entry.program_sha256 = file_sha256(target)
        update_manifest(entry, root)
        written.append(key)
    return written
