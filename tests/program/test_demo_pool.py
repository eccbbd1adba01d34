"""Per-request demos from a pool: nearest by BM25, never the excluded one, shown with their own tools."""

import json

from helmdeck_dspy.catalog.models import Pack, RoutingGuide
from helmdeck_dspy.program.demo_pool import compiled_pool
from helmdeck_dspy.program.adapter import PlanAdapter
from helmdeck_dspy.program.spec import PromptSpec
from helmdeck_dspy.program.answer_schema import plan_schema
from helmdeck_dspy.program.demo_pool import DemoPool, PoolDemo, best_match, fit_decline_gate, signature_line
from helmdeck_dspy.program.sections import DEMO_TOOLS_HEADER
from helmdeck_dspy.signatures.plan import signature_for
from helmdeck_dspy.tasks import PlanTask

AREA = Pack(name="geometry.area", description="Area of a shape. Many shapes.", parameters={
    "type": "object", "properties": {"base": {"type": "number"}, "unit": {"type": "string"}}, "required": ["base"]})
WEATHER = Pack(name="weather.now", description="Current weather", parameters={
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
POOL = DemoPool(k=2, demos=(
    PoolDemo(id="a", intent="area of a triangle with base 6", tools=(AREA,), steps=({"tool": "geometry.area", "args": {"base": 6}},)),
    PoolDemo(id="w", intent="weather in Paris right now", tools=(WEATHER,), steps=({"tool": "weather.now", "args": {"city": "Paris"}},)),
    PoolDemo(id="n", intent="write me a poem about a triangle", tools=(WEATHER,), steps=()),
))


def test_nearest_ranks_by_request_words_and_skips_excluded_ids():
    assert [d.id for d in POOL.nearest("what is the area of a triangle")] == ["a", "n"]
    assert [d.id for d in POOL.nearest("what is the area of a triangle", exclude=frozenset({"a"}))] == ["n", "w"]
    assert POOL.model_copy(update={"k": 0}).nearest("area") == []


def test_a_decline_slot_shows_the_nearest_declining_demo_when_the_nearest_hold_none():
    slot = POOL.model_copy(update={"decline_slot": True})
    assert [d.id for d in slot.nearest("weather in Paris, area of a triangle base 6")] == ["a", "n"]
    assert [d.id for d in POOL.nearest("weather in Paris, area of a triangle base 6")] == ["a", "w"]
    assert [d.id for d in slot.nearest("what is the area of a triangle")] == ["a", "n"]  # one already declines
    assert [d.id for d in slot.model_copy(update={"k": 1}).nearest("weather in Paris")] == ["w"]
    assert [d.id for d in slot.nearest("weather", exclude=frozenset({"n"}))] == ["w", "a"]  # no decline left


def test_slot_only_declines_fill_the_slot_and_leave_the_other_picks_as_they_were():
    served = DemoPool(k=2, demos=POOL.demos[:2])
    extra = PoolDemo(id="x", intent="weather poem for a triangle in Paris", tools=(AREA,), steps=())
    slot = served.model_copy(update={"decline_slot": True, "declines": (extra,)})
    mixed = "weather in Paris, area of a triangle base 6"
    assert [d.id for d in slot.nearest(mixed)] == ["a", "x"]
    assert [d.id for d in slot.model_copy(update={"decline_slot": False}).nearest(mixed)] == [
        d.id for d in served.nearest(mixed)] == ["a", "w"]


def test_a_gated_decline_slot_opens_only_below_the_gate():
    gated = POOL.model_copy(update={"decline_slot": True, "decline_below": 5.0})
    mixed = "weather in Paris, area of a triangle base 6"
    assert [d.id for d in gated.nearest(mixed, catalog_match=4.9)] == ["a", "n"]
    assert [d.id for d in gated.nearest(mixed, catalog_match=5.0)] == ["a", "w"]  # not below: shut
    assert [d.id for d in gated.nearest(mixed)] == ["a", "w"]  # no match given: a gated slot stays shut


def test_best_match_scores_a_catalog_that_serves_the_request_above_one_that_does_not():
    catalog = RoutingGuide(packs=(AREA, WEATHER))
    assert best_match(catalog, "area of a triangle") > best_match(catalog, "book a flight to Rome") == 0.0
    assert best_match(RoutingGuide(packs=()), "area") == 0.0


def test_the_gate_is_fitted_below_every_task_a_tool_serves():
    catalog = RoutingGuide(packs=(AREA, WEATHER))

    def task(intent: str, tool: str | None) -> PlanTask:
        return PlanTask.model_validate({
            "id": "t-" + "-".join(intent.split()).lower(), "split": "dev", "intent": intent,
            "category": "single-action" if tool else "gap", "complexity": "single-action",
            "steps": [{"tool": tool, "args": {}}] if tool else []})

    serving = [task("area of a triangle", "geometry.area"), task("weather now in Oslo", "weather.now")]
    declining = task("book a flight to Rome", None)
    gate = fit_decline_gate([*serving, declining], catalog)
    assert gate == min(best_match(catalog, t.intent) for t in serving) > best_match(catalog, declining.intent)
    assert fit_decline_gate(serving, catalog) is None  # nothing declines below it: no gate
    assert fit_decline_gate([declining], catalog) is None  # nothing served: nothing to fit


def test_signature_line_marks_optional_arguments():
    assert signature_line(AREA) == "geometry.area(base: number, unit?: string) — Area of a shape"


def test_pool_demos_are_rendered_with_their_own_tools_in_the_answer_format():
    catalog = RoutingGuide(packs=(WEATHER,))
    def render(fit_decision: bool) -> list[dict[str, str]]:
        options = PromptSpec(pool_demos=POOL.nearest("triangle poem"),
                                answer_schema=plan_schema(catalog, "full_steps", fit_decision))
        return PlanAdapter(options).format(signature_for("full_steps"), [], {"user_intent": "hi", "catalog": catalog.render()})

    messages = render(True)
    users = [m["content"] for m in messages if m["role"] == "user"]
    answers = [json.loads(m["content"]) for m in messages if m["role"] == "assistant"]
    assert users[0].startswith(DEMO_TOOLS_HEADER) and "weather.now(city: string)" in users[0]
    assert answers[0] == {"tool_fits": False, "steps": []}
    assert answers[1] == {"tool_fits": True, "steps": [{"tool": "geometry.area", "args": {"base": 6}}]}
    assert "EXAMPLE" not in users[-1] and "hi" in users[-1] and "tool_fits to false" in users[-1]
    without = render(False)  # no fit decision: an empty steps list says no, in demos and in the format shown
    assert [json.loads(m["content"]) for m in without if m["role"] == "assistant"][0] == {"steps": []}
    assert "tool_fits" not in without[0]["content"] and "tool_fits" not in without[-1]["content"]


def test_compiled_demos_answer_in_the_schema_format_under_constrained_decoding():
    from helmdeck_dspy.signatures.types import PlanStep

    catalog = RoutingGuide(packs=(WEATHER,))
    demo = {"user_intent": "weather in Oslo?", "steps": [PlanStep(order=1, tool="weather.now", args={"city": "Oslo"},
                                                                  rationale="r")],
            "complexity": "single-action", "more_steps_likely": False, "reasoning": "x"}

    def answer(schema, variant="full_steps") -> str:
        options = PromptSpec(variant=variant, answer_schema=schema)
        messages = PlanAdapter(options).format(signature_for(variant), [demo], {"user_intent": "hi", "catalog": catalog.render()})
        return [m["content"] for m in messages if m["role"] == "assistant"][0]

    assert answer(plan_schema(catalog, "full_steps")) == '{"tool_fits": true, "steps": [{"tool": "weather.now", "args": {"city": "Oslo"}}]}'
    assert answer(plan_schema(catalog, "single_pick"), "single_pick").endswith('"more_steps_likely": false}')
    assert '"rationale": "r"' in answer(None)  # free decoding keeps the signature's own format


def test_a_pool_demo_that_runs_a_pipeline_shows_it_as_the_answer_format_calls_it():
    from helmdeck_dspy.catalog.models import Pipeline
    from helmdeck_dspy.domain import PIPELINE_RUN_TOOL

    deck = Pipeline(id="builtin.deck", name="Deck", description="Builds a slide deck from a topic. Then more.")
    demo = PoolDemo(id="d", intent="make a deck about owls", tools=(WEATHER,), pipelines=(deck,),
                    steps=({"tool": PIPELINE_RUN_TOOL, "args": {"id": "builtin.deck", "inputs": {"topic": "owls"}}},))
    catalog = RoutingGuide(packs=(WEATHER,), pipelines=(deck,))

    options = PromptSpec(pool_demos=(demo,), answer_schema=plan_schema(catalog, "full_steps", False))
    messages = PlanAdapter(options).format(signature_for("full_steps"), [], {"user_intent": "hi", "catalog": catalog.render()})
    tools, answer = messages[1]["content"], json.loads(messages[2]["content"])
    assert f'{PIPELINE_RUN_TOOL}(id: "builtin.deck", inputs?: object) — Builds a slide deck from a topic' in tools
    assert answer == {"steps": [{"tool": PIPELINE_RUN_TOOL, "args": {"id": "builtin.deck", "inputs": {"topic": "owls"}}}]}

    class Program:
        demo_pool = DemoPool(demos=(demo,), k=1)

    assert [d.id for d in compiled_pool(Program(), catalog).demos] == ["d"]
    assert compiled_pool(Program(), RoutingGuide(packs=(WEATHER,))).demos == ()  # the pipeline was not selected

    no = PoolDemo(id="no", intent="sing me a song", tools=(AREA,), steps=())
    selected, whole = RoutingGuide(packs=(WEATHER,)), RoutingGuide(packs=(WEATHER, AREA))

    class Declining:
        demo_pool = DemoPool(demos=(no,), k=2, decline_slot=True)

    assert compiled_pool(Program(), selected, whole).demos == ()
    Program.demo_pool = DemoPool(demos=(no,), k=2)
    assert compiled_pool(Program(), selected, whole).declines == ()  # without the slot, its tools must be selected
    slot_only = compiled_pool(Declining(), selected, whole)
    assert slot_only.demos == () and [d.id for d in slot_only.declines] == ["no"]  # for the slot alone
    assert compiled_pool(Declining(), selected, RoutingGuide(packs=(WEATHER,))).declines == ()  # another catalog
    Declining.demo_pool = DemoPool(demos=(no,), k=2, decline_slot=True, decline_below=3.5)
    assert compiled_pool(Declining(), selected, whole).decline_below == 3.5  # the gate goes with the pool
