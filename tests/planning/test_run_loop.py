"""run_loop: re-planning after a tool error and when a step stands for an earlier result; the
denial, time and server stops; results marked as errors in the next prompt."""

from __future__ import annotations

import pytest

from helmdeck_dspy.errors import ToolServerError
from helmdeck_dspy.planning.execution import StepOutcome, needs_earlier
from helmdeck_dspy.planning.guards import GuardedStep
from tests.planning.test_planner import NEMOTRON, SONNET, plan_json, planner, requests, step

SCRAPE = "web.scrape"
STORE = "helmdeck.memory_store"


def full(*steps):
    return plan_json([step(i, tool, args) for i, (tool, args) in enumerate(steps, 1)])


def test_a_tool_error_is_marked_and_the_planner_replans_from_it(tmp_path):
    p = planner(tmp_path, SONNET, full((SCRAPE, {"url": "bad"}), (STORE, {"key": "k"})),
                full((SCRAPE, {"url": "https://example.org"}), (STORE, {"key": "k"})))
    calls = []

    def execute(s):
        calls.append((s.tool, s.args))
        return StepOutcome(text="invalid url", error=True) if s.args.get("url") == "bad" else StepOutcome(text="fine")

    out = p.run_loop("scrape and store", execute)
    assert out.stopped_because == "done" and len(out.plans) == 2
    # the step after the failed one was not run from the first plan; the second plan ran whole
    assert calls == [(SCRAPE, {"url": "bad"}), (SCRAPE, {"url": "https://example.org"}), (STORE, {"key": "k"})]
    assert [s.error for s in out.executed] == [True, False, False] and out.tool_errors == 1
    second = requests(p)[1].messages[-1].text
    assert 'web.scrape {"url":"bad"} -> "error: invalid url"' in second


def test_a_step_standing_for_an_earlier_result_is_planned_again_with_the_result(tmp_path):
    p = planner(tmp_path, SONNET, full((SCRAPE, {"url": "https://example.org"}), (STORE, {"value": "{{page_text}}"})),
                full((STORE, {"value": "the page"})))
    sent = []
    out = p.run_loop("scrape and store", lambda s: sent.append(s.args) or "the page")
    assert sent == [{"url": "https://example.org"}, {"value": "the page"}]  # the placeholder was never sent
    assert out.stopped_because == "done" and len(out.plans) == 2
    assert '-> "the page"' in requests(p)[1].messages[-1].text


def test_a_placeholder_in_a_plans_first_step_is_sent_rather_than_planned_forever(tmp_path):
    p = planner(tmp_path, SONNET, full((STORE, {"value": "<output of step 1>"})))
    out = p.run_loop("store it", lambda s: "ok")
    assert len(out.executed) == 1 and len(out.plans) == 1 and out.stopped_because == "done"


def test_a_refused_call_stops_the_run(tmp_path):
    p = planner(tmp_path, SONNET, full((SCRAPE, {}), (STORE, {}), (SCRAPE, {})))
    out = p.run_loop("x", lambda s: StepOutcome(text="no", error=True, denied=True) if s.tool == STORE else "ok")
    assert out.stopped_because == "denied" and [s.tool for s in out.executed] == [SCRAPE, STORE]


def test_a_dead_server_ends_the_run_with_its_cause(tmp_path):
    p = planner(tmp_path, SONNET, full((SCRAPE, {}), (STORE, {})))

    def execute(s):
        raise ToolServerError("web", "the server closed the connection during a call")

    out = p.run_loop("x", execute)
    assert out.stopped_because == "server_error" and not out.executed
    assert out.error == "tool server 'web': the server closed the connection during a call"


def test_the_time_cap_stops_before_the_next_step(tmp_path):
    p = planner(tmp_path, SONNET, full((SCRAPE, {}), (STORE, {})))
    out = p.run_loop("x", lambda s: "ok", time_cap_s=1e-9)
    assert out.stopped_because == "time_cap" and not out.plans


def test_single_pick_replans_after_every_step_and_reports_each(tmp_path):
    p = planner(tmp_path, NEMOTRON, plan_json([step(1, SCRAPE)], more_steps_likely=True),
                plan_json([step(1, STORE)], more_steps_likely=False))
    seen = []
    out = p.run_loop("x", lambda s: f"did {s.tool}", on_plan=lambda r: seen.append("plan"),
                     on_step=lambda e, o: seen.append(f"{e.order}:{o.text}"))
    assert out.stopped_because == "done"
    assert seen == ["plan", f"1:did {SCRAPE}", "plan", f"2:did {STORE}"]
    assert len(out.outcomes) == len(out.executed) == 2


@pytest.mark.parametrize("value, stands_for_a_result", [
    ("{{file_content}}", True), ("${step1}", True), ("$step2", True), ("<output of step 1>", True),
    ("<content>", True), ("the result of step 1", True), ("hello world", False), ("a < b > c", False),
    ('{"x": 1}', False), ("Use step 2 of the recipe", False), ("main", False),
])
def test_what_counts_as_standing_for_an_earlier_result(value, stands_for_a_result):
    assert needs_earlier(GuardedStep(order=1, tool="t", args={"a": {"b": [value]}})) is stands_for_a_result


def test_a_failed_call_planned_again_unchanged_stops_the_run(tmp_path):
    again = full((SCRAPE, {"url": "bad"}))
    p = planner(tmp_path, SONNET, again, again, again)
    out = p.run_loop("x", lambda s: StepOutcome(text="invalid url", error=True))
    assert out.stopped_because == "stuck" and len(out.executed) == 1 and len(out.plans) == 2


def test_a_failed_call_is_sent_once_more_after_a_success_changed_the_world(tmp_path):
    commit, add = (STORE, {"note": "c"}), (SCRAPE, {"url": "a"})
    p = planner(tmp_path, SONNET, full(commit), full(add, commit))  # after the error: stage, then commit again
    staged: list[str] = []

    def execute(step):
        if step.tool == SCRAPE:
            staged.append("a")
            return StepOutcome(text="staged")
        return StepOutcome(text="committed") if staged else StepOutcome(text="nothing to commit", error=True)

    out = p.run_loop("x", execute)
    assert [(s.tool, s.error) for s in out.executed] == [(STORE, True), (SCRAPE, False), (STORE, False)]


def test_asking_again_for_the_call_that_last_succeeded_ends_the_run():
    """A model that calls ``git_log`` again and again: the repeat is not sent, the run ends ``repeated``;
    the same call after another call succeeded in between is sent (the world may have changed)."""
    from helmdeck_dspy.planning.execution import run_loop
    from helmdeck_dspy.planning.result import PlanResult

    class Scripted:
        variant = "single_pick"

        def __init__(self, *plans):
            self.plans = list(plans)

        def plan(self, intent, context=None, prior_steps=None):
            steps = [GuardedStep(order=i, tool=t, args=a) for i, (t, a) in enumerate(self.plans.pop(0), 1)]
            return PlanResult(steps=steps, more_steps_likely=True, prompt_variant_used="single_pick", model="m", tier="C")

    read, write = (SCRAPE, {"url": "a"}), (STORE, {"note": "c"})
    out = run_loop(Scripted([read], [read], [read]), "x", lambda s: StepOutcome(text="page"))
    assert out.stopped_because == "repeated" and [s.tool for s in out.executed] == [SCRAPE] and len(out.plans) == 2
    out = run_loop(Scripted([read, write, read], [read]), "x", lambda s: StepOutcome(text="ok"))
    assert [s.tool for s in out.executed] == [SCRAPE, STORE, SCRAPE] and out.stopped_because == "repeated"
