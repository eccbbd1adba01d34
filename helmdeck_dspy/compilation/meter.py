"""Counting a compile's LM calls as they happen: :class:`CallMeter`.

A DSPy callback sees every LM call, whoever makes it (the program, an optimizer's copies of the
LM, the teacher). A call is *live* when DSPy's usage tracker gained an entry for it (DSPy adds
usage only for answers that did not come from its response cache) and *cached* otherwise, so a
resumed compile shows how much it replayed rather than passing cached answers off as calls made.
Calls are split by role: the ``teacher`` LM's, and the task model's (everything else).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dspy.utils.callback import BaseCallback
from pydantic import BaseModel


class RoleCalls(BaseModel):
    """One role's calls: answered by the model, from the cache, or failed; live tokens."""

    live: int = 0
    cached: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class CallMeter(BaseCallback):
    """Counts LM calls by role (see module docstring) and calls ``on_call(meter)`` after each.

    Args:
        tracker: The ``dspy.track_usage()`` tracker active around the compile.
        teacher_model: The teacher LM's model name (its ``.model``), or None without one.
        on_call: Called after every call, e.g. to move a progress bar.
        estimate: The requests expected in all (a progress bar's total).
    """

    def __init__(self, tracker: Any, teacher_model: str | None = None,
                 on_call: Callable[[CallMeter], None] | None = None, estimate: int = 0) -> None:
        super().__init__()
        self.estimate = estimate
        self.tracker = tracker
        self.teacher_model = teacher_model
        self.on_call = on_call
        self.roles: dict[str, RoleCalls] = {"task": RoleCalls(), "teacher": RoleCalls()}
        self._open: dict[str, tuple[str, int]] = {}

    def _entries(self, model: str) -> list[dict[str, Any]]:
        return self.tracker.usage_data.get(model, []) if self.tracker is not None else []

    def on_lm_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        model = str(getattr(instance, "model", ""))
        self._open[call_id] = (model, len(self._entries(model)))

    def on_lm_end(self, call_id: str, outputs: Any, exception: Exception | None = None) -> None:
        opened = self._open.pop(call_id, None)
        if opened is None:
            return
        model, before = opened
        role = self.roles["teacher" if self.teacher_model and model == self.teacher_model else "task"]
        entries = self._entries(model)
        if exception is not None:
            role.failed += 1
        elif len(entries) > before:
            role.live += 1
            usage = entries[-1]
            role.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            role.completion_tokens += int(usage.get("completion_tokens") or 0)
        else:
            role.cached += 1
        if self.on_call is not None:
            self.on_call(self)

    @property
    def calls(self) -> int:
        """Every call so far, live, cached or failed."""
        return sum(r.live + r.cached + r.failed for r in self.roles.values())

    @property
    def live(self) -> int:
        return sum(r.live for r in self.roles.values())

    @property
    def cached(self) -> int:
        return sum(r.cached for r in self.roles.values())

    def summary(self) -> str:
        """``live N, cached M`` (with failures when any): the progress bar's note."""
        failed = sum(r.failed for r in self.roles.values())
        return f"live {self.live}, cached {self.cached}" + (f", failed {failed}" if failed else "")
