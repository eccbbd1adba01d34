"""The plan metric: one 0–1 score of a guarded plan against a gold task.

Used by eval (replay) and compile (as the DSPy metric), after the one decode → guard path of
:mod:`helmdeck_dspy.evaluation.scoring`. Components:

- ``f1``: order-aware tool F1 — precision and recall of the longest common subsequence of step
  keys (a pipeline run's key is its pipeline id, so running the wrong pipeline is a wrong step);
- ``exact``: the key sequence equals the gold one (or an accepted alternative);
- ``pipeline_ok``: every pipeline the gold plan runs is run (not decomposed into its packs);
- ``valid_rate``: share of steps that survived the guards (no invented tools, no self-calls).

``score = 0.5 f1 + 0.2 exact + 0.15 pipeline_ok + 0.15 valid_rate``, the best over the gold plan
and its alternatives. A gap task (no gold steps) scores 1 when no valid step is planned, else 0.
A parse failure scores 0. For ``single_pick`` the expected plan is the one next gold step.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from helmdeck_dspy.domain import PIPELINE_RUN_TOOL, UNKNOWN_TOOL
from helmdeck_dspy.planning.guards import GuardedStep
from helmdeck_dspy.tasks import GoldStep, PlanTask

W_F1, W_EXACT, W_PIPELINE, W_VALID = 0.5, 0.2, 0.15, 0.15


class PlanScore(BaseModel):
    """A plan's score against its gold task, with the parts."""

    score: float
    f1: float = 0.0
    exact: bool = False
    pipeline_ok: bool = False
    valid_rate: float = 0.0
    args_match: float | None = None
    parsed: bool = True


def step_key(tool: str, args: dict | None, pipeline_ids: frozenset[str] | None = None) -> str:
    """A step's identity: ``pipeline:<id>`` for pipeline runs (or a bare pipeline id), else the tool."""
    if tool == PIPELINE_RUN_TOOL:
        return f"pipeline:{(args or {}).get('id', '')}"
    if pipeline_ids and tool in pipeline_ids:
        return f"pipeline:{tool}"
    return tool


def _lcs(a: Sequence[str], b: Sequence[str]) -> int:
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b, 1):
            cur.append(prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1]))
        prev = cur
    return prev[-1]


def _args_match(pred: list[GuardedStep], gold: list[GoldStep], pipeline_ids: frozenset[str] | None) -> float | None:
    wanted = [(g.key, k, v) for g in gold for k, v in g.args.items() if not (g.tool == PIPELINE_RUN_TOOL and k == "id")]
    if not wanted:
        return None
    by_key: dict[str, list[dict]] = {}
    for s in pred:
        by_key.setdefault(step_key(s.tool, s.args, pipeline_ids), []).append(s.args)
    hits = 0
    for key, name, value in wanted:
        for args in by_key.get(key, []):
            got = args.get(name)
            if name in args and (value is None or str(got).strip().lower() == str(value).strip().lower()):
                hits += 1
                break
    return hits / len(wanted)


def _score_against(pred: list[GuardedStep], gold: list[GoldStep], pipeline_ids: frozenset[str] | None) -> PlanScore:
    if not pred:
        return PlanScore(score=0.0)  # nothing planned for a task that needs steps
    pred_keys = [step_key(s.tool, s.args, pipeline_ids) for s in pred]
    gold_keys = [g.key for g in gold]
    valid = [s for s in pred if s.tool != UNKNOWN_TOOL]
    valid_rate = len(valid) / len(pred) if pred else 0.0
    lcs = _lcs(pred_keys, gold_keys)
    p = lcs / len(pred_keys) if pred_keys else 0.0
    r = lcs / len(gold_keys) if gold_keys else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    exact = pred_keys == gold_keys
    gold_pipes = {k for k in gold_keys if k.startswith("pipeline:")}
    pipeline_ok = gold_pipes <= set(pred_keys)
    score = W_F1 * f1 + W_EXACT * exact + W_PIPELINE * pipeline_ok + W_VALID * valid_rate
    return PlanScore(
        score=round(score, 6), f1=f1, exact=exact, pipeline_ok=pipeline_ok, valid_rate=valid_rate,
        args_match=_args_match(pred, gold, pipeline_ids),
    )


def expected_plans(task: PlanTask, variant: str = "full_steps", done: int = 0) -> list[list[GoldStep]]:
    """The plans that count as right: all of them, or for single_pick the next step of each."""
    plans = [task.steps, *task.alternatives]
    if variant == "single_pick":
        return [p[done : done + 1] for p in plans]
    return plans


def score_plan(
    task: PlanTask,
    steps: list[GuardedStep] | None,
    *,
    variant: str = "full_steps",
    done: int = 0,
    pipeline_ids: frozenset[str] | None = None,
) -> PlanScore:
    """Score guarded ``steps`` (None = the completion did not parse) against ``task``.

    Args:
        task: The gold task.
        steps: The plan after the guards, or None for a parse failure.
        variant: ``single_pick`` scores the one next step; ``full_steps`` the whole plan.
        done: Steps already executed (single_pick loop), so the next gold step is ``steps[done]``.
        pipeline_ids: The catalog's pipeline ids, so a bare pipeline id as a tool counts as a run.
    """
    if steps is None:
        return PlanScore(score=0.0, parsed=False)
    best: PlanScore | None = None
    for gold in expected_plans(task, variant, done):
        if not gold:
            valid = [s for s in steps if s.tool != UNKNOWN_TOOL]
            candidate = PlanScore(
                score=0.0 if valid else 1.0, f1=0.0 if valid else 1.0, exact=not steps, pipeline_ok=True,
                valid_rate=(len(valid) / len(steps)) if steps else 1.0,
            )
        else:
            candidate = _score_against(steps, gold, pipeline_ids)
        if best is None or candidate.score > best.score:
            best = candidate
    assert best is not None
    return best
