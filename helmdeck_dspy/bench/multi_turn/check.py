"""Scoring a run with the package's own multi-turn checker.

:func:`check_run` hands ``multi_turn_checker`` (``eval_checker/multi_turn_eval/multi_turn_checker.py``)
what BFCL's evaluation hands it: per turn, per model answer, the calls as Python call strings
(:func:`call_string`, the form BFCL's handlers decode function calls into), with the question's
ground truth and entry. The checker does the rest, as in BFCL: it executes the run's calls and,
turn by turn, the ground-truth calls on fresh instances of the question's classes (its own
``execute_multi_turn_func_call``), and after each turn with ground-truth calls requires a non-empty
answer, the same state of every instance (its ``state_checker``) and every ground-truth result
among the run's results so far (its ``response_checker``). A question is right when every turn
passes. :func:`turns_passed` asks the same checker of each run's leading turns, to say how far a run got
before its first failing turn (the question's first turns only, with their ground truth).

The checker keeps its instances in its module's globals under a name made of the model name and
the question id; each check uses a model name of its own and removes its instances afterwards, so
checks never share state. Two kinds of call are left out of what it executes, as neither changes
any state: a call of a function the question does not offer (BFCL would ``eval`` the name; here it
ran nothing and failed) and one whose argument names are not Python names (it failed when run).
A question cut off at the step or time limit is not checked: BFCL fails a force-terminated entry.
"""

from __future__ import annotations

import json
import keyword
import uuid
from typing import Any

from pydantic import BaseModel

from helmdeck_dspy.bench.multi_turn import CATEGORY
from helmdeck_dspy.bench.multi_turn.load import MultiTurnQuestion
from helmdeck_dspy.bench.multi_turn.package import CHECKER_MODULE, UTILS_MODULE, bfcl_module

FORCE_TERMINATED = "multi_turn:force_terminated"
DETAIL_CHARS = 2000


class Verdict(BaseModel):
    """The checker's answer: right or not, and BFCL's error type and message when not."""

    valid: bool
    error_type: str | None = None
    error_message: str | None = None
    details: str | None = None


def _name(value: Any) -> bool:
    return isinstance(value, str) and value.isidentifier() and not keyword.iskeyword(value)


def call_string(tool: str, args: dict[str, Any]) -> str | None:
    """``tool(arg=value, ...)`` with each value as its Python literal (None: not writable as a call)."""
    if not _name(tool) or not all(_name(k) for k in args):
        return None
    return f"{tool}({','.join(f'{k}={v!r}' for k, v in args.items())})"


def check_run(question: MultiTurnQuestion, answers: list[list[list[str]]]) -> Verdict:
    """Check a run: ``answers`` holds, per turn, per model answer that made calls, its call strings."""
    checker = bfcl_module(CHECKER_MODULE)
    kept = vars(bfcl_module(UTILS_MODULE))
    model_name = f"helmdeck_{uuid.uuid4().hex}"
    try:
        out = checker.multi_turn_checker(answers, [list(t) for t in question.ground_truth], question.entry(),
                                         CATEGORY, model_name)
    except Exception as exc:  # noqa: BLE001 - a checker failure is the question's result, not the study's end
        return Verdict(valid=False, error_type="checker_error", error_message=f"{type(exc).__name__}: {exc}"[:500])
    finally:
        for key in [k for k in kept if k.startswith(model_name)]:
            del kept[key]
    if out.get("valid"):
        return Verdict(valid=True)
    details = out.get("details")
    shown = {k: v for k, v in details.items() if k in ("differences", "missing_items")} if isinstance(details, dict) else {}
    return Verdict(valid=False, error_type=str(out.get("error_type")), error_message=str(out.get("error_message")),
                   details=json.dumps(shown, default=str)[:DETAIL_CHARS] if shown else None)


def turns_passed(question: MultiTurnQuestion, answers: list[list[list[str]]]) -> int:
    """How many of the run's leading turns pass the checker, checked as a question of those turns
    only (the first ``n`` turns' answers against the first ``n`` turns' ground truth), up to the first
    that fails; ``answers`` as for :func:`check_run` (a force-terminated run: its turns before the cut)."""
    passed = 0
    for n in range(1, min(len(answers), len(question.ground_truth)) + 1):
        if not check_run(question.model_copy(update={"ground_truth": question.ground_truth[:n]}), answers[:n]).valid:
            break
        passed = n
    return passed
