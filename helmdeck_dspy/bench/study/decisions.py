"""The decision points of a lever study's row: each answered request's first-answer decline
probability (``run.decision``, recorded with ``probe_decision``), whether that answer declined, and
whether declining was right, for :func:`~helmdeck_dspy.calibration.threshold.fit_threshold`."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from helmdeck_dspy.bench.study.questions import load_questions
from helmdeck_dspy.bench.study.spec import StudySpecError, load_study_spec
from helmdeck_dspy.bench.bfcl.plans import decode_record, request_records
from helmdeck_dspy.calibration.threshold import DecisionPoint
from helmdeck_dspy.planning.decision import DECISION_KEY


class RowDecisions(NamedTuple):
    """A row's decision points, with the model and the answer strategies they were recorded under."""

    model: str
    strategies: frozenset[str]
    points: list[DecisionPoint]


def decision_points(spec_path: str | Path, row: str) -> RowDecisions:
    """The decision points of the spec's row ``row`` (requests with no recorded probability are
    left out), with its model and strategies.

    Raises:
        StudySpecError: The spec does not load, or has no such row.
    """
    spec = load_study_spec(spec_path)
    config = next((c for c in spec.config if c.name == row), None)
    if config is None:
        raise StudySpecError(str(spec_path), f"no row {row!r}; rows: {[c.name for c in spec.config]}")
    questions = {q.id: q for q in load_questions(spec).questions}
    points, strategies = [], set()
    for task_id, calls in request_records(spec.trace_path(config), on_error="skip").items():
        q = questions.get(task_id)
        decision = (calls[0].run or {}).get(DECISION_KEY)
        if q is None or not isinstance(decision, dict) or "p_decline" not in decision:
            continue  # no probability read (``unavailable``: the endpoint gives none)
        strategies.add(str(((calls[0].run or {}).get("prompt") or {}).get("strategy")))
        first = decode_record(calls[0], spec.catalog_of(config) or q.catalog)  # the first answer, before any ask again
        points.append(DecisionPoint(dev_set=str(spec.folder), task_id=task_id, p_decline=decision["p_decline"],
                                    declined=first.cause is None and not first.calls, unserved=q.expect == "no_call"))
    return RowDecisions(spec.model, frozenset(strategies), points)
