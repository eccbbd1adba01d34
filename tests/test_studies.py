"""Every committed study re-scores from its traces to the table committed beside it (issue 41: one
engine, one spec format; the held-out comparison included). A study with answers and no table, or
a table its traces no longer give (a run stopped before it wrote one, a scorer changed without the
tables), fails here: ``helmdeck-dspy bench study --score-only SPEC`` writes it again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helmdeck_dspy.bench.study.spec import SPEC_NAME, load_study_spec
from helmdeck_dspy.bench.study.table import score_study
from tests.conftest import PROJECT_ROOT

SPECS = sorted((PROJECT_ROOT / "experiments").rglob(SPEC_NAME))


def test_the_committed_studies_are_found():
    assert len(SPECS) >= 10
    assert not list((PROJECT_ROOT / "experiments").rglob("levers.toml"))  # the old name, migrated (issue 51)


@pytest.mark.parametrize("path", SPECS, ids=lambda p: str(p.parent.relative_to(PROJECT_ROOT / "experiments")))
def test_a_committed_study_re_scores_to_its_table(path: Path):
    spec = load_study_spec(path)
    if any(d for d in spec.data_dirs() if not d.is_dir()):
        pytest.skip(f"its BFCL data is absent: {[str(d) for d in spec.data_dirs()]}")
    rows = [r.model_dump(mode="json") for r in score_study(spec)]
    table = path.parent / "table.json"
    if not rows:
        return  # nothing answered yet: no table to agree with
    assert table.is_file(), f"{path}: answered rows but no table.json"
    committed = {(r["config"], r["scope"]): r for r in json.loads(table.read_text(encoding="utf-8"))["rows"]}
    scored = {(r["config"], r["scope"]): r for r in rows}
    assert sorted(committed) == sorted(scored), f"{path}: rows differ from table.json's"
    changed = [key for key in scored if scored[key] != committed[key]]
    assert not changed, f"{path}: {changed[:3]} re-score to other figures than table.json's"
