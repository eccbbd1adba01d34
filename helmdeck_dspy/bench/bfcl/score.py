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

A gold task converted from the project's own tasks may fix no value for an argument (:data:`ANY_VALUE`
matches anything) and may have alternative call lists: the best-matching list counts.

A task whose right plan calls nothing (``expect == "no_call"``: the irrelevance categories and the
multi_turn turns with empty gold) is right when a plan came back and calls nothing, steps the
guard demoted to ``unknown`` aside (helmdeck's gap case; a failed answer is not an abstention);
one that wants any call (``any_call``: live_relevance) is right when the plan calls at least one
offered function. Call recall, call precision and name recall are sums over the tasks that have
gold calls; the abstention rate over ``no_call`` tasks is the irrelevance rate.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, Field

from helmdeck_dspy.domain import UNKNOWN_TOOL
from helmdeck_dspy.bench.bfcl.models import ANY_VALUE, OPTIONAL_MARK, BfclQuestion, GoldCall
from helmdeck_dspy.bench.bfcl.spec import Expect

ORDER_FREE_PREFIXES = ("parallel", "live_parallel")
_STRIP = re.compile(r"[\s,./\-_*^'\"!?;:()]+")


class Call(BaseModel):
    """One predicted function call."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class CallScore(BaseModel):
    """How one plan compares with one question's gold calls."""

    question_id: str
    category: str = ""
    expect: Expect = "calls"
    exact: bool
    matched_calls: int
    gold_calls: int
    predicted_calls: int
    names_matched: int = Field(description="Gold calls whose function was called at all.")
    abstained: bool = Field(default=False, description="A plan was made and calls nothing (steps demoted to 'unknown' aside).")
    failed: bool = Field(default=False, description="No plan came back (the answer did not decode, or the call failed).")
    problems: list[str] = Field(default_factory=list, description="Why calls did not match (first few).")


class AccuracySummary(BaseModel):
    """Plan accuracy over a set of questions."""

    n: int
    exact: int
    exact_rate: float
    call_recall: float = Field(description="Matched gold calls / gold calls (tasks with gold calls).")
    call_precision: float = Field(description="Matched calls / predicted calls (tasks with gold calls).")
    name_recall: float = Field(description="Gold calls whose function was called at all / gold calls.")
    no_call_n: int = Field(default=0, description="Tasks whose right plan calls nothing.")
    abstained: int = Field(default=0, description="Of those, plans that called nothing (failed plans not counted).")
    irrelevance_rate: float | None = Field(default=None, description="abstained / no_call_n (None without such tasks).")
    any_call_n: int = Field(default=0, description="Tasks where any call of an offered function is right.")
    any_called: int = Field(default=0, description="Of those, plans that called one.")
    abstained_with_gold: int = Field(default=0, description="Tasks with gold calls whose plan called nothing.")
    failed: int = Field(default=0, description="Tasks where no plan came back.")


def normalise_string(text: str) -> str:
    """A string as BFCL compares it: lower case, without spaces and punctuation."""
    return _STRIP.sub("", text.lower())


def value_matches(value: Any, acceptable: Any) -> bool:
    """Whether a predicted ``value`` equals one gold ``acceptable`` value (see module docstring)."""
    if acceptable == ANY_VALUE:
        return True
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


def score_calls(question: BfclQuestion, predicted: Iterable[Call], *, order_free: bool | None = None,
                failed: bool = False) -> CallScore:
    """Compare ``predicted`` calls with the question's gold calls.

    Args:
        question: The BFCL question (its category decides ordering unless ``order_free`` is given).
        predicted: The plan's calls, in plan order.
        order_free: Pair calls regardless of order (default: for ``parallel*`` categories).
        failed: No plan came back: calling nothing then is a failure, not a right abstention.
    """
    calls = list(predicted)
    if question.expect != "calls":
        return _expectation_score(question, calls, failed)
    if order_free is None:
        order_free = question.category.startswith(ORDER_FREE_PREFIXES)
    scores = [_score_against(question, list(gold), calls, order_free, failed)
              for gold in (question.gold, *question.alternatives)]
    return max(scores, key=lambda s: (s.exact, s.matched_calls - abs(s.predicted_calls - s.gold_calls)))


def _score_against(question: BfclQuestion, gold: list[GoldCall], calls: list[Call], order_free: bool,
                   failed: bool) -> CallScore:
    """``calls`` against one list of gold calls."""
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
        category=question.category,
        exact=matched == len(gold) and len(calls) == len(gold),
        matched_calls=matched,
        gold_calls=len(gold),
        predicted_calls=len(calls),
        names_matched=sum(1 for g in gold if g.name in called),
        abstained=not failed and not (called - {UNKNOWN_TOOL}),
        failed=failed,
        problems=problems[:5],
    )


def _expectation_score(question: BfclQuestion, calls: list[Call], failed: bool) -> CallScore:
    """A no_call or any_call task: only whether the plan called an offered function matters."""
    real = [c for c in calls if c.name != UNKNOWN_TOOL]
    offered = {f.name for f in question.functions}
    if question.expect == "no_call":
        right = not real and not failed
        problems = ["no plan came back"] if failed else [f"called {c.name!r} where no call fits" for c in real]
    else:
        right = any(c.name in offered for c in real)
        problems = [] if right else ["no call to any offered function"]
    return CallScore(question_id=question.id, category=question.category, expect=question.expect, exact=right,
                     matched_calls=0, gold_calls=0, predicted_calls=len(calls), names_matched=0,
                     abstained=not real and not failed, failed=failed, problems=problems[:5])


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
    with_gold = [s for s in scores if s.expect == "calls"]
    gold = sum(s.gold_calls for s in with_gold)
    predicted = sum(s.predicted_calls for s in with_gold)
    matched = sum(s.matched_calls for s in with_gold)
    exact = sum(s.exact for s in scores)
    no_call = [s for s in scores if s.expect == "no_call"]
    any_call = [s for s in scores if s.expect == "any_call"]
    abstained = sum(s.exact for s in no_call)
    return AccuracySummary(
        n=n,
        exact=exact,
        exact_rate=round(exact / n, 4) if n else 0.0,
        call_recall=round(matched / gold, 4) if gold else 0.0,
        call_precision=round(matched / predicted, 4) if predicted else 0.0,
        name_recall=round(sum(s.names_matched for s in with_gold) / gold, 4) if gold else 0.0,
        no_call_n=len(no_call),
        abstained=abstained,
        irrelevance_rate=round(abstained / len(no_call), 4) if no_call else None,
        any_call_n=len(any_call),
        any_called=sum(s.exact for s in any_call),
        abstained_with_gold=sum(s.abstained for s in with_gold),
        failed=sum(s.failed for s in scores),
    )


def summarise_by_category(scores: list[CallScore]) -> dict[str, AccuracySummary]:
    """:func:`summarise` per category, in first-seen order."""
    groups: dict[str, list[CallScore]] = {}
    for s in scores:
        groups.setdefault(s.category, []).append(s)
    return {c: summarise(g) for c, g in groups.items()}


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
