"""Plan accuracy against BFCL gold calls.

A predicted call matches a gold call when the function names are equal, every argument the gold
call requires is present with an acceptable value, every optional argument that is present has an
acceptable value, and no argument outside the gold call's list is given. Values compare after
light normalisation, in the spirit of BFCL's checker: strings ignore case, whitespace and common
punctuation; an integer is accepted where the gold value is the equal float (and vice versa); lists
compare element by element; a dict compares key by key against the gold dict's acceptable lists.

In the parallel categories the order of calls is free: predicted and gold calls are paired by a
maximum bipartite matching. A plan is *exact* when every gold call is matched and nothing else was
called. Steps naming ``unknown`` (the guard's demotion) or a pipeline never match.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, Field

from helmdeck_dspy.evaluation.bfcl.load import OPTIONAL_MARK, BfclQuestion, GoldCall

ORDER_FREE_PREFIXES = ("parallel", "live_parallel")
_STRIP = re.compile(r"[\s,./\-_*^'\"!?;:()]+")


class Call(BaseModel):
    """One predicted function call."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class CallScore(BaseModel):
    """How one plan compares with one question's gold calls."""

    question_id: str
    exact: bool
    matched_calls: int
    gold_calls: int
    predicted_calls: int
    names_matched: int = Field(description="Gold calls whose function was called at all.")
    problems: list[str] = Field(default_factory=list, description="Why calls did not match (first few).")


class AccuracySummary(BaseModel):
    """Plan accuracy over a set of questions."""

    n: int
    exact: int
    exact_rate: float
    call_recall: float = Field(description="Matched gold calls / gold calls.")
    call_precision: float = Field(description="Matched calls / predicted calls.")
    name_recall: float = Field(description="Gold calls whose function was called at all / gold calls.")


def normalise_string(text: str) -> str:
    """A string as BFCL compares it: lower case, without spaces and punctuation."""
    return _STRIP.sub("", text.lower())


def value_matches(value: Any, acceptable: Any) -> bool:
    """Whether a predicted ``value`` equals one gold ``acceptable`` value (see module docstring)."""
    if isinstance(acceptable, bool) or isinstance(value, bool):
        return isinstance(value, bool) and isinstance(acceptable, bool) and value == acceptable
    if isinstance(acceptable, (int, float)):
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                return False
        return isinstance(value, (int, float)) and math.isclose(float(value), float(acceptable), rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(acceptable, str):
        return isinstance(value, str) and normalise_string(value) == normalise_string(acceptable)
    if isinstance(acceptable, list):
        if isinstance(value, tuple):
            value = list(value)
        return isinstance(value, list) and len(value) == len(acceptable) and all(
            value_matches(v, a) for v, a in zip(value, acceptable)
        )
    if isinstance(acceptable, dict):
        if not isinstance(value, dict):
            return False
        gold = {k: v if isinstance(v, list) else [v] for k, v in acceptable.items()}
        return set(value) <= set(gold) and all(_arg_ok(value, k, options) for k, options in gold.items())
    return value == acceptable


def _is_mark(option: Any) -> bool:
    return isinstance(option, str) and option == OPTIONAL_MARK


def _arg_ok(args: Mapping[str, Any], name: str, options: list[Any]) -> bool:
    if name not in args:
        return any(_is_mark(o) for o in options)
    return any(value_matches(args[name], o) for o in options if not _is_mark(o))


def call_problem(call: Call, gold: GoldCall) -> str | None:
    """None when ``call`` matches ``gold``, else the first reason it does not."""
    if call.name != gold.name:
        return f"called {call.name!r}, expected {gold.name!r}"
    for arg in call.args:
        if arg not in gold.args:
            return f"{gold.name}: unexpected argument {arg!r}"
    for arg, options in gold.args.items():
        if not _arg_ok(call.args, arg, options):
            if arg not in call.args:
                return f"{gold.name}: missing required argument {arg!r}"
            shown = [o for o in options if not _is_mark(o)][:3]
            return f"{gold.name}: {arg}={call.args[arg]!r} not among {shown!r}"
    return None


def _max_matching(ok: list[list[bool]]) -> int:
    """Size of a maximum matching in a bipartite graph given as a gold x predicted adjacency matrix."""
    owner: dict[int, int] = {}

    def augment(g: int, seen: set[int]) -> bool:
        for p, edge in enumerate(ok[g]):
            if edge and p not in seen:
                seen.add(p)
                if p not in owner or augment(owner[p], seen):
                    owner[p] = g
                    return True
        return False

    return sum(augment(g, set()) for g in range(len(ok)))


def score_calls(question: BfclQuestion, predicted: Iterable[Call], *, order_free: bool | None = None) -> CallScore:
    """Compare ``predicted`` calls with the question's gold calls.

    Args:
        question: The BFCL question (its category decides ordering unless ``order_free`` is given).
        predicted: The plan's calls, in plan order.
        order_free: Pair calls regardless of order (default: for ``parallel*`` categories).
    """
    calls = list(predicted)
    gold = list(question.gold)
    if order_free is None:
        order_free = question.category.startswith(ORDER_FREE_PREFIXES)
    problems: list[str] = []
    if order_free:
        ok = [[call_problem(c, g) is None for c in calls] for g in gold]
        matched = _max_matching(ok)
        for g, row in zip(gold, ok):
            if not any(row):
                near = [call_problem(c, g) for c in calls if c.name == g.name]
                problems.append(near[0] if near and near[0] else f"no call to {g.name}")
    else:
        matched = 0
        for i, g in enumerate(gold):
            problem = call_problem(calls[i], g) if i < len(calls) else f"no call to {g.name}"
            if problem is None:
                matched += 1
            else:
                problems.append(problem)
    called = {c.name for c in calls}
    return CallScore(
        question_id=question.id,
        exact=matched == len(gold) and len(calls) == len(gold),
        matched_calls=matched,
        gold_calls=len(gold),
        predicted_calls=len(calls),
        names_matched=sum(1 for g in gold if g.name in called),
        problems=problems[:5],
    )


def calls_from_steps(steps: Iterable[Any]) -> list[Call]:
    """Plan steps (``GuardedStep``/``PlanStep`` objects or dicts with ``tool`` and ``args``) as calls."""
    out = []
    for s in steps:
        tool = s.get("tool") if isinstance(s, dict) else getattr(s, "tool", None)
        args = s.get("args") if isinstance(s, dict) else getattr(s, "args", None)
        if isinstance(tool, str) and tool:
            out.append(Call(name=tool, args=args if isinstance(args, dict) else {}))
    return out


def summarise(scores: list[CallScore]) -> AccuracySummary:
    """Sum per-question call scores into rates (0 when there is nothing to divide by)."""
    n = len(scores)
    gold = sum(s.gold_calls for s in scores)
    predicted = sum(s.predicted_calls for s in scores)
    matched = sum(s.matched_calls for s in scores)
    exact = sum(s.exact for s in scores)
    return AccuracySummary(
        n=n,
        exact=exact,
        exact_rate=round(exact / n, 4) if n else 0.0,
        call_recall=round(matched / gold, 4) if gold else 0.0,
        call_precision=round(matched / predicted, 4) if predicted else 0.0,
        name_recall=round(sum(s.names_matched for s in scores) / gold, 4) if gold else 0.0,
    )


def _example_value(options: list[Any]) -> tuple[bool, Any]:
    for o in options:
        if not _is_mark(o):
            if isinstance(o, dict):
                return True, {k: v for k, (has, v) in ((k, _example_value(vs if isinstance(vs, list) else [vs]))
                                                       for k, vs in o.items()) if has}
            return True, o
    return False, None


def example_call(gold: GoldCall) -> Call:
    """One concrete call that matches ``gold``: the first acceptable value of each argument,
    optional arguments with no other value left out (an oracle plan for checking the scorer)."""
    args = {}
    for name, options in gold.args.items():
        has, value = _example_value(options)
        if has:
            args[name] = value
    return Call(name=gold.name, args=args)
