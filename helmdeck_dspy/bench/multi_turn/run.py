"""One multi-turn question run under one arm and checked: :func:`run_question`.

The question's classes are instantiated once (:class:`~.executor.ApiState`); its user turns then run
in order, each in one :func:`~helmdeck_dspy.planning.execution.run_loop` of the arm's agent, made
once for the question over its functions, with the instances' state carried from turn to turn. The
model alone's agent keeps one conversation (:class:`~.alone.TurnAlone`: an agent with
``begin_turn``); the planner, which holds no conversation, gets the earlier turns as the request's
context (:func:`earlier_turns`: each earlier request with the calls made for it, results cut short,
newest kept first when they do not all fit). A turn that reaches the step or time limit ends the
question, force-terminated and failed, as BFCL ends an entry at its step limit. The run is then
checked by the package's checker (:func:`~.check.check_run`) and returned as a
:class:`QuestionResult`, which a study appends to its row's ``<config>.jsonl``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from helmdeck_dspy.bench.e2e.run import KEPT_CHARS, StepRecord
from helmdeck_dspy.bench.multi_turn import FROZEN
from helmdeck_dspy.bench.multi_turn.check import FORCE_TERMINATED, Verdict, call_string, check_run, turns_passed
from helmdeck_dspy.bench.multi_turn.executor import ApiState
from helmdeck_dspy.bench.multi_turn.load import MultiTurnQuestion
from helmdeck_dspy.bench.multi_turn.package import bfcl_package
from helmdeck_dspy.io.jsonl import iter_jsonl

FORCED = ("max_steps", "time_cap")
"""Why a turn's loop stopped when the question is force-terminated."""
CONTEXT_CHARS = 4000
"""How much of the earlier turns the planner's context holds."""
CONTEXT_RESULT_CHARS = 200
"""How much of each earlier call's result it keeps."""
CONTEXT_LEAD = "Earlier in this conversation (oldest first), each request with the calls made for it:"


class TurnRecord(BaseModel):
    """One user turn of a run."""

    request: str
    steps: list[StepRecord] = Field(default_factory=list)
    answer_of_step: list[int] = Field(default_factory=list, description="The turn's plan call (from 0) each step "
                                      "came from: the answers the checker is given.")
    plan_calls: int = 0
    stopped_because: str
    failure: str | None = Field(default=None, description="The last plan call's failure cause, if it failed.")
    answers: list[dict[str, Any]] = Field(default_factory=list, description="The model alone's answers in this turn.")


class QuestionResult(BaseModel):
    """One question under one arm for one model: did the package's checker pass it, and how it went."""

    task_id: str
    category: str
    split: str
    arm: str
    model: str
    lm: str
    success: bool
    error_type: str | None = Field(default=None, description="The checker's error type (BFCL's) when it failed.")
    error_message: str | None = None
    details: str | None = None
    turns: list[TurnRecord]
    question_turns: int | None = Field(default=None, description="The question's user turns (a force-terminated run "
                                       "records fewer).")
    turns_passed: int | None = Field(default=None, description="Leading turns the package's checker passes "
                                     "(:func:`~.check.turns_passed`): how far the run got before its first failing turn.")
    plan_calls: int
    tool_errors: int
    stopped_because: str = Field(description="The last turn's loop's stop, or force_terminated.")
    seconds: float
    package: str = Field(description="The BFCL package it was run and checked with (name==version).")
    data_sha256: str = Field(description="The frozen hash of the question's half.")
    started_at: str

    @property
    def calls(self) -> int:
        return sum(len(t.steps) for t in self.turns)


def earlier_turns(turns: list[TurnRecord]) -> str | None:
    """The planner's context for the next turn (see the module docstring); None before the second."""
    blocks: list[str] = []
    for turn in reversed(turns):
        calls = [{"name": s.tool, "arguments": s.args, "result": s.result[:CONTEXT_RESULT_CHARS],
                  **({"error": True} if s.error else {})} for s in turn.steps]
        block = f"Request: {turn.request}\nCalls: {json.dumps(calls, ensure_ascii=False)}"
        if blocks and sum(map(len, blocks)) + len(block) > CONTEXT_CHARS:
            break
        blocks.append(block[:CONTEXT_CHARS])
    return "\n\n".join([CONTEXT_LEAD, *reversed(blocks)]) if blocks else None


def answers_of(turns: list[TurnRecord], offered: set[str]) -> list[list[list[str]]]:
    """What the checker is given: per turn, per answer with calls, the call strings of what ran."""
    out: list[list[list[str]]] = []
    for turn in turns:
        by_answer: dict[int, list[str]] = {}
        for step, answer in zip(turn.steps, turn.answer_of_step):
            text = call_string(step.tool, step.args) if step.tool in offered else None
            if text is not None:
                by_answer.setdefault(answer, []).append(text)
        out.append([by_answer[k] for k in sorted(by_answer)])
    return out


def run_question(question: MultiTurnQuestion, arm: str, make_agent: Callable[[Any], Any], *, model: str, lm: str,
                 max_steps: int, time_cap_s: float) -> QuestionResult:
    """Run ``question`` under ``arm`` (``make_agent`` builds the arm's agent for the question's
    functions) and check it (see the module docstring)."""
    from helmdeck_dspy.planning.execution import run_loop

    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    state = ApiState(question)
    agent = make_agent(question.catalog)
    begin = getattr(agent, "begin_turn", None)
    turns: list[TurnRecord] = []
    seconds, tool_errors, plan_calls, stopped = 0.0, 0, 0, "done"
    for text in question.turns:
        answered = len(getattr(agent, "turns", []))
        if begin is not None:
            begin(text)
        plans: list[int] = []
        owner: list[int] = []
        loop = run_loop(agent, text, state.execute, max_steps=max_steps, time_cap_s=time_cap_s,
                        context=None if begin is not None else earlier_turns(turns),
                        on_plan=lambda _result: plans.append(len(plans)),
                        on_step=lambda _step, _outcome: owner.append(len(plans) - 1))
        turns.append(TurnRecord(
            request=text, answer_of_step=owner, plan_calls=len(loop.plans), stopped_because=loop.stopped_because,
            failure=loop.plans[-1].failure_cause if loop.plans and not loop.plans[-1].ok else None,
            steps=[StepRecord(tool=s.tool, args=s.args, error=o.error, result=o.text[:KEPT_CHARS])
                   for s, o in zip(loop.executed, loop.outcomes)],
            answers=list(getattr(agent, "turns", []))[answered:]))
        seconds += loop.seconds
        tool_errors += loop.tool_errors
        plan_calls += len(loop.plans)
        stopped = loop.stopped_because
        if stopped in FORCED:
            stopped = "force_terminated"
            break
    answers = answers_of(turns, set(state.methods))
    forced = stopped == "force_terminated"
    verdict = (Verdict(valid=False, error_type=FORCE_TERMINATED, error_message=f"turn {len(turns) - 1} reached "
                       f"the {'step' if turns[-1].stopped_because == 'max_steps' else 'time'} limit")
               if forced else check_run(question, answers))
    passed = len(turns) if verdict.valid else turns_passed(question, answers[:-1] if forced else answers)
    return QuestionResult(
        task_id=question.id, category=question.category, split=question.split, arm=arm, model=model, lm=lm,
        success=verdict.valid, error_type=verdict.error_type, error_message=verdict.error_message,
        details=verdict.details, turns=turns, question_turns=len(question.turns), turns_passed=passed,
        plan_calls=plan_calls, tool_errors=tool_errors, stopped_because=stopped, seconds=round(seconds, 3),
        package=bfcl_package().pin, data_sha256=FROZEN.get(question.split, ""), started_at=started)


def load_results(path: Path) -> dict[str, QuestionResult]:
    """A row's results by question id (the last line of a question wins)."""
    return {r.task_id: r for r in (QuestionResult.model_validate(v) for _, v in iter_jsonl(path))} if path.exists() else {}
