"""How far the `draft` strategy of issue 38 could go on the dev sets, from answers already recorded.

`draft` shows the tools as `plain` does (the model-alone request; the selection's entries only when
the whole list does not fit), decodes freely, reads the answer through the planner's checks, and
decodes again under the schema only when an answer fails them, keeping the draft's decision and
number of calls. Where the whole list fits (every dev question here), its first call is the
model alone's request byte for byte (tests/planning/test_plain_strategy.py), so at temperature 0
its first answer is the recorded model-alone answer. Where that answer passes the checks, draft
keeps it: its score is the `plain-checked` row's. Only the answers that fail the checks (no JSON
list, a name that maps to no tool, an argument missing, outside its enum or of a type that cannot
be coerced) would be decoded again; counting each of them as exact after the repair bounds draft
from above without a model call.

Run: `.venv/bin/python experiments/draft/bound.py` (prints the table in bound.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

from helmdeck_dspy.bench.study.questions import load_questions
from helmdeck_dspy.bench.study.spec import load_study_spec
from helmdeck_dspy.bench.bfcl.plans import request_records
from helmdeck_dspy.bench.bfcl.gold_tasks import as_call
from helmdeck_dspy.bench.bfcl.score import calls_from_steps, score_calls
from helmdeck_dspy.evaluation.scoring import guard_completion
from helmdeck_dspy.planning.arguments import argument_problems
from helmdeck_dspy.planning.guards import guard_steps

HERE = Path(__file__).resolve().parent
DEV = (  # (dev set, spec, the model-alone row)
    ("BFCL dev, 0.5B", "bfcl/qwen2.5-coder-0.5b/study.toml", "plain"),
    ("BFCL dev, 1.5B", "bfcl/qwen2.5-coder-1.5b/study.toml", "plain"),
    ("MCP dev, 1.5B", "mcp/qwen2.5-coder-1.5b/study.toml", "plain"),
)
def failed_checks(guarded, catalog) -> str | None:
    """Why an answer fails the checks the draft strategy applied, or None (the rule of its
    ``planning/draft.py``, retired with it after commit 663e608)."""
    if guarded.parse.plan is None:
        return "no call list"
    steps = guard_steps(guarded.parse.plan.steps, catalog.id_set, catalog.pipeline_ids, catalog.arg_schemas,
                        map_names=True)
    if any(s.demoted for s in steps):
        return "unknown name"
    return "bad argument" if any(argument_problems(s.arg_notes) for s in steps) else None


def bound(spec_path: Path, row: str) -> dict[str, object]:
    spec = load_study_spec(spec_path)
    questions = {q.id: q for q in load_questions(spec).questions}
    config = next(c for c in spec.config if c.name == row)
    exact = failing = failing_exact = 0
    why: dict[str, int] = {}
    for task_id, calls in request_records(spec.trace_path(config), on_error="skip").items():
        q = questions.get(task_id)
        if q is None:
            continue
        rec, catalog = calls[-1], spec.catalog_of(config) or q.catalog
        guarded = guard_completion(rec.content, rec.finish_reason, rec.reasoning_content, variant="full_steps",
                                   catalog_ids=catalog.id_set, pipeline_ids=catalog.pipeline_ids,
                                   schemas=catalog.arg_schemas, map_names=True, call_list=True)
        calls_made = [] if guarded.steps is None else [as_call(c) for c in calls_from_steps(guarded.steps)]
        right = score_calls(q, calls_made, failed=guarded.steps is None).exact
        exact += right
        cause = failed_checks(guarded, catalog)
        if cause is not None:
            failing += 1
            failing_exact += right
            why[cause] = why.get(cause, 0) + 1
    n = len(questions)
    return {"n": n, "exact": exact, "failing": failing, "ceiling": exact - failing_exact + failing, "why": why}


def main() -> int:
    print("# How far draft could go on the dev sets (no model call: the recorded model-alone answers; bound.py)\n")
    print("| dev set | n | plain-checked exact | answers failing the checks | draft at most | most over plain-checked |")
    print("|---|---|---|---|---|---|")
    for name, spec, row in DEV:
        b = bound(HERE.parent / spec, row)
        causes = ", ".join(f"{k} {v}" for k, v in sorted(b["why"].items())) or "none"
        gain = 100 * (b["ceiling"] - b["exact"]) / b["n"]
        print(f"| {name} | {b['n']} | {b['exact']} | {b['failing']} ({causes}) | {b['ceiling']} | +{gain:.1f} points |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
