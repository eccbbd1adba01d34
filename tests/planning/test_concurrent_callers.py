"""Two requests planned at once with different tools never see each other's tools.

The interleaving is forced, not hoped for: a DSPy callback holds the first request at the start
of the plan module (after its prompt settings are chosen, before they are read) until the second
request has reached the same point. DSPy catches and logs what a callback raises, so the callback
asserts nothing: it records whether the two met there, and the test asserts that they did. Each LM
request the loopback endpoint receives is then checked: its messages and its answer schema name
only its own caller's tools.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import dspy
import pytest

from helmdeck_dspy.engines.lm_spec import make_lm
from helmdeck_dspy.errors import FrozenProgramError
from helmdeck_dspy.planning.planner import Planner
from helmdeck_dspy.serve.catalogs import read_tools_catalog
from tests.fault_server import FaultServer, ok

MODEL = "local/qwen2.5-coder-0.5b-instruct"  # its row answers under the schema over a tool list: the schema is checked too


def _tool(name: str, description: str, prop: str) -> dict[str, Any]:
    return {"name": name, "description": description,
            "inputSchema": {"type": "object", "properties": {prop: {"type": "string"}}, "required": [prop]}}


WEATHER = [_tool("weather_now", "Current weather for a city.", "city"),
           _tool("fax_send", "Send a fax to a number.", "number")]
GIT = [_tool("git_branch", "Create a git branch in a repository.", "branch"),
       _tool("coffee_order", "Order a coffee of a given size.", "size")]
NAMES = {"weather": {t["name"] for t in WEATHER}, "git": {t["name"] for t in GIT}}
INTENTS = {"weather": "What is the weather in Oslo right now?", "git": "Create the branch release-2 in the repo.",
           "warm-up": "Before anything else, create the branch warm-up in the repo."}  # read as the git caller's


class HoldFirst(dspy.utils.callback.BaseCallback):
    """Holds the first plan module call (after ``skip`` others) at its start until another has started
    too, for at most ``wait_s``.

    DSPy catches and logs an exception raised in a callback, and the held call then goes on as if
    nothing happened, so this records what it saw and the test asserts on it afterwards: ``met`` is
    True once the second call reached the module while the first was held there, False when the
    first gave up waiting, None before the first arrived; ``seen`` counts the plan module calls.
    With ``record``, each change is also written there as JSON (for a server in another process).
    """

    def __init__(self, skip: int = 0, wait_s: float = 20, record: str | Path | None = None) -> None:
        self.skip = skip
        self.wait_s = wait_s
        self.record = Path(record) if record else None
        self.first_inside = threading.Event()
        self.second_inside = threading.Event()
        self.met: bool | None = None
        self.seen = 0
        self._lock = threading.Lock()

    def on_module_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        if type(instance).__name__ not in ("FullSteps", "SinglePick"):
            return
        with self._lock:
            self.seen += 1
            turn = self.seen - self.skip
            self._write()
        if turn == 1:
            self.first_inside.set()
            met = self.second_inside.wait(self.wait_s)
            with self._lock:
                self.met = met
                self._write()
        elif turn == 2:
            self.second_inside.set()

    def _write(self) -> None:
        if self.record is not None:
            self.record.write_text(json.dumps({"seen": self.seen, "met": self.met}), encoding="utf-8")


def assert_met(met: bool | None, seen: int, expected_seen: int) -> None:
    """The two concurrent calls met at the start of the plan module, which saw ``expected_seen`` calls."""
    assert met is True, ("the second request never reached the plan module while the first was held there"
                         if met is False else "no request reached the plan module")
    assert seen == expected_seen, seen


def _request_names(body: dict[str, Any]) -> tuple[str, set[str]]:
    """Which caller an LM request belongs to (by its request text) and every tool name it carries."""
    text = json.dumps(body)
    caller = "weather" if INTENTS["weather"] in text else "git"
    return caller, {name for names in NAMES.values() for name in names if name in text}


def test_concurrent_plans_never_carry_the_other_callers_tools() -> None:
    answer = json.dumps({"tool_fits": True, "steps": []})
    with FaultServer([ok(answer)]) as server:
        lm = make_lm("llamacpp/m", api_base=server.url, cache=False, num_retries=0)
        base = Planner.for_model(MODEL, lm=lm, history=None, use_filter=False, cache=False)
        hold = HoldFirst()
        errors: list[BaseException] = []

        def plan(who: str, tools: list[dict[str, Any]]) -> None:
            try:
                planner = base.replace(catalog=read_tools_catalog(tools))  # as the server does per request
                with dspy.context(callbacks=[hold]):
                    planner.plan(INTENTS[who])
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        first = threading.Thread(target=plan, args=("weather", WEATHER))
        first.start()
        assert hold.first_inside.wait(20)
        second = threading.Thread(target=plan, args=("git", GIT))
        second.start()
        first.join(30)
        second.join(30)
        assert not first.is_alive() and not second.is_alive()
        assert not errors, errors
        assert_met(hold.met, hold.seen, 2)
        check_requests([r.body for r in server.requests])


def check_requests(bodies: list[dict[str, Any]]) -> None:
    """Each of the two concurrent LM requests (the last two) names only its own caller's tools, in
    its messages and its schema."""
    assert len(bodies) >= 2
    bodies = bodies[-2:]
    assert {_request_names(b)[0] for b in bodies} == {"weather", "git"}
    for body in bodies:
        caller, names = _request_names(body)
        assert names <= NAMES[caller], f"the {caller} request carried {sorted(names - NAMES[caller])}"
        schema = body["response_format"]["schema"]
        assert NAMES[caller] <= set(json.dumps(schema).split('"')), "its own tools are missing from its schema"


class AssignDuringCall(dspy.utils.callback.BaseCallback):
    """Tries, while a request is inside the plan module, to set state on the module and its predictor."""

    def __init__(self) -> None:
        self.raised: list[BaseException] = []

    def on_module_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        if type(instance).__name__ in ("FullSteps", "SinglePick"):
            for target, name in ((instance, "render"), (instance, "demo_pool"), (instance.plan, "demos")):
                try:
                    setattr(target, name, None)
                except FrozenProgramError as exc:
                    self.raised.append(exc)


def test_the_loaded_program_is_read_only_during_a_request() -> None:
    answer = json.dumps({"tool_fits": True, "steps": []})
    with FaultServer([ok(answer)]) as server:
        lm = make_lm("llamacpp/m", api_base=server.url, cache=False, num_retries=0)
        planner = Planner.for_model(MODEL, lm=lm, history=None, use_filter=False, cache=False)
        demos = list(planner.program.plan.demos)
        spy = AssignDuringCall()
        with dspy.context(callbacks=[spy]):
            planner.plan(INTENTS["weather"])
        assert len(server.requests) == 1  # the request went through
    assert len(spy.raised) == 3 and "read-only" in str(spy.raised[0])
    assert list(planner.program.plan.demos) == list(demos)  # nothing was changed
    with pytest.raises(FrozenProgramError):
        planner.program.demo_pool = None  # nor outside a request
