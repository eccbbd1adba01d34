"""The planner presets a study row can reproduce besides the shipped planner (re-exported by
:mod:`~helmdeck_dspy.bench.study.spec`, where a row's :attr:`~.spec.StudyConfig.preset` names them)."""

from __future__ import annotations

from typing import Any

from helmdeck_dspy.planning.options import PostChecks

BEFORE_ISSUE_22 = "before-issue-22"
"""The comparison row that reproduces the planner before issue 22 (:func:`before_issue_22`)."""


def before_issue_22() -> dict[str, Any]:
    """Planner options that reproduce the planner before issue 22: helmdeck's instructions and
    demos whatever the catalog, no argument checks, no pipeline-chain guard, no near-miss names,
    no placeholder filling and no recheck (the benchmarks' comparison row; the product never
    runs it)."""
    return {"checks": PostChecks(fit_catalog=False, coerce_args=False, pipeline_chains=False, map_names=False),
            "fill_placeholders": False, "recheck_top": 0}
