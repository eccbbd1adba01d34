"""A question's API instances, and each call of a run as a method call on them.

The instances are made as the package's ``execute_multi_turn_func_call`` makes them: each class
the question names, instantiated from the package, then (unless BFCL lists it as stateless)
loaded with a deep copy of its part of the question's ``initial_config`` by ``_load_scenario``.
They live for the whole question, so the state one turn leaves is the next turn's start. A call
runs as ``method(**arguments)``, never through ``eval``; its result becomes text as BFCL makes it
(a string as it is, a dict as JSON, anything else ``str``), and an exception becomes BFCL's
``Error during execution: ...`` text, as an error outcome. A result that is a dict with an
``error`` key is the API reporting a failure (``cd`` into a missing folder): its text as BFCL
gives it, marked as an error so the loop treats it as it treats a failed tool call. A name the
question does not offer runs nothing.
"""

from __future__ import annotations

import copy
import inspect
import json
import time
from collections.abc import Callable
from typing import Any

from helmdeck_dspy.bench.multi_turn.load import MultiTurnQuestion
from helmdeck_dspy.bench.multi_turn.package import CONFIG_MODULE, api_class, bfcl_module
from helmdeck_dspy.planning.execution import StepOutcome
from helmdeck_dspy.planning.guards import GuardedStep

ERROR_LEAD = "Error during execution: "
"""How BFCL's executor words a call that raised (the model sees the same text)."""


def result_text(value: Any) -> str:
    """A call's result as BFCL turns it into text."""
    if type(value) is str:
        return value
    if type(value) is dict:
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


class ApiState:
    """The instances of one question's classes (see the module docstring)."""

    def __init__(self, question: MultiTurnQuestion) -> None:
        stateless = set(bfcl_module(CONFIG_MODULE).STATELESS_CLASSES)
        offered = {p.name for p in question.functions}
        self.instances: dict[str, Any] = {}
        self.methods: dict[str, Callable[..., Any]] = {}
        for cls in question.involved_classes:
            instance = api_class(cls)()
            if cls not in stateless:
                instance._load_scenario(copy.deepcopy(question.initial_config.get(cls, {})), long_context=False)
            self.instances[cls] = instance
            for name, method in inspect.getmembers(instance, predicate=inspect.ismethod):
                if not name.startswith("_") and name in offered:
                    self.methods[name] = method  # a later class's method of the same name wins, as in BFCL

    def execute(self, step: GuardedStep) -> StepOutcome:
        """Run one step as a method call (the ``execute`` callback of :func:`run_loop`)."""
        method = self.methods.get(step.tool)
        if method is None:
            return StepOutcome(text=f"{ERROR_LEAD}no function {step.tool!r} is available", error=True)
        t0 = time.perf_counter()
        try:
            value = method(**step.args)
        except Exception as exc:  # noqa: BLE001 - any failure of the API is the call's result, as in BFCL
            return StepOutcome(text=f"{ERROR_LEAD}{exc}", error=True, seconds=round(time.perf_counter() - t0, 4))
        return StepOutcome(text=result_text(value), error=isinstance(value, dict) and "error" in value,
                           seconds=round(time.perf_counter() - t0, 4))
