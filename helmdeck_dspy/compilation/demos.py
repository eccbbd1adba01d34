"""The ``fit`` optimizer (no LM): choose demos that fit the tier's prompt budget.

Demos come from the train tasks. The rendered prompt — instructions, demos, the tier's selected
catalog, a typical intent and the output reserve — must fit the tier's input budget and its
prompt-token target. Demos are taken round-robin over the complexity classes (and the special
categories), shortest first, so a small budget still covers several kinds of plan.
"""

from __future__ import annotations

from typing import Any

from helmdeck_dspy.compilation.tier_setup import TierSetup
from helmdeck_dspy.io.tokens import count_message_tokens
from helmdeck_dspy.program.strategies import strategy_named
from helmdeck_dspy.tasks import PlanTask

MAX_DEMO_CONTEXT_CHARS = 600
"""Tasks with a longer pasted context make poor demos: they cost the budget and teach little."""

DEMO_ORDER = ("pack-chain", "pipeline-direct", "single-action", "supersedes", "gap", "adversarial")
"""The classes a round of demo picking goes through, in order."""


def fit_demos(setup: TierSetup, program: Any, train: list[PlanTask]) -> list[Any]:
    """Choose demos: cover complexity classes round-robin, shortest first, within the budget.

    Args:
        setup: The tier being compiled.
        program: The module whose prompt is measured (its demos are cleared first).
        train: The tasks demos are drawn from.

    Returns:
        The chosen ``dspy.Example`` demos, at most ``setup.config.max_demos``.
    """
    strategy = strategy_named(setup.spec.strategy)
    program.plan.demos = []
    base = setup.prompt_tokens(program)
    limit = setup.budget.input_tokens - setup.budget.output_tokens
    if setup.config.prompt_token_target:
        limit = min(limit, setup.config.prompt_token_target)
    room = limit - base
    candidates: dict[str, list[tuple[int, str, Any]]] = {}
    for task in train:
        if task.context and len(task.context) > MAX_DEMO_CONTEXT_CHARS:
            continue
        ex = setup.example(task)
        cost = count_message_tokens("", strategy.demo_messages(setup.spec, [ex]))
        key = ex.complexity if task.category not in ("gap", "adversarial", "supersedes") else task.category
        candidates.setdefault(key, []).append((cost, task.id, ex))
    for items in candidates.values():
        items.sort(key=lambda c: (c[0], c[1]))
    chosen: list[Any] = []
    spent = 0
    while len(chosen) < setup.config.max_demos:
        progressed = False
        for key in DEMO_ORDER:
            left = candidates.get(key)
            if not left or len(chosen) >= setup.config.max_demos:
                continue
            cost, _, ex = left.pop(0)
            if spent + cost <= room:
                chosen.append(ex)
                spent += cost
                progressed = True
        if not progressed:
            break
    return chosen
