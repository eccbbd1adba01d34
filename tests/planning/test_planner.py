"""The planner end to end, offline: replay LMs, real modules, real adapter, real guards."""

from __future__ import annotations

import json
import warnings

import pytest

from helmdeck_dspy.errors import HelmdeckError
from helmdeck_dspy.planning.history import HistoryStore
from helmdeck_dspy.planning.planner import Planner
from helmdeck_dspy.program.sections import CATALOG_HEADER
from helmdeck_dspy.traces.io import read_jsonl_traces

NEMOTRON = "openrouter/nvidia/nemotron-3-super-120b-a12b:free"
SONNET = "anthropic/claude-sonnet-4-6"
DEEPSEEK = "openrouter/deepseek/deepseek-v3.2"  # tier B with prefix cache, no strict JSON
MISTRAL = "openrouter/mistralai/mistral-large"  # tier B, strict JSON, no prefix cache
INTENT = "remember this launch, write a blog about it and make an illustration"


def plan_json(steps, **extra):
    return json.dumps({"steps": steps, "complexity": "pack-chain", "reasoning": "because", **extra})


def step(order, tool, args=None, rationale="why"):
    return {"order": order, "tool": tool, "args": args or {}, "rationale": rationale}


def replay_file(tmp_path, *completions, name="replay.jsonl"):
    path = tmp_path / name
    with path.open("w") as f:
        for i, c in enumerate(completions):
            rec = {"id": f"r{i}", "finish_reason": "stop", **(c if isinstance(c, dict) else {"content": c})}
            f.write(json.dumps(rec) + "\n")
    return path


def planner(tmp_path, model, *completions, **kw):
    path = replay_file(tmp_path, *completions)
    kw.setdefault("use_filter", False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Planner.for_model(model, lm=f"replay:{path}", **kw)


def requests(p):
    return p.lm.engine.requests


THREE = plan_json([
    step(1, "helmdeck.memory_store", {"key": "launch"}),
    step(2, "blog.rewrite_for_audience"),
    step(3, "image.generate"),
], more_steps_likely=True)


def test_tier_c_is_single_pick_with_catalog_in_user_message(tmp_path):
    p = planner(tmp_path, NEMOTRON, THREE)
    r = p.plan(INTENT)
    assert r.ok and r.prompt_variant_used == "single_pick" and r.tier == "C"
    assert [s.tool for s in r.steps] == ["helmdeck.memory_store"]
    assert [s.tool for s in r.dropped_steps] == ["blog.rewrite_for_audience", "image.generate"]
    assert r.more_steps_likely
    req = requests(p)[0]
    assert CATALOG_HEADER not in req.system
    assert req.messages[-1].text.startswith(CATALOG_HEADER)
    assert req.config.max_tokens == 1500  # the budget's output_tokens
    assert req.config.response_format is None  # tier C never gets strict JSON
    assert r.compaction is not None and "bm25.top_n" in r.compaction.dropped


def test_tier_a_is_full_steps_with_catalog_in_system_message(tmp_path):
    p = planner(tmp_path, SONNET, THREE)
    r = p.plan(INTENT)
    assert r.prompt_variant_used == "full_steps" and r.tier == "A"
    assert [s.tool for s in r.steps] == ["helmdeck.memory_store", "blog.rewrite_for_audience", "image.generate"]
    assert r.complexity == "pack-chain" and not r.more_steps_likely and r.dropped_steps == []
    req = requests(p)[0]
    assert CATALOG_HEADER in req.system and '"name":"helmdeck.memory_store"' in req.system
    assert CATALOG_HEADER not in req.messages[-1].text
    assert "USER REQUEST:" in req.messages[-1].text and INTENT in req.messages[-1].text
    assert req.config.response_format == {"type": "json_object"}
    assert req.config.max_tokens == 8000
    assert r.compaction is None


def test_system_message_is_byte_identical_across_intents_on_a_prefix_cache_model(tmp_path):
    p = planner(tmp_path, SONNET, THREE, THREE)
    p.plan(INTENT)
    p.plan("scrape https://example.org and make slides from it")
    a, b = requests(p)
    assert a.system == b.system
    assert a.messages[-1].text != b.messages[-1].text


def test_strict_json_needs_the_flag_and_a_non_c_tier(tmp_path):
    p = planner(tmp_path, MISTRAL, THREE)
    p.plan(INTENT)
    assert requests(p)[0].config.response_format == {"type": "json_object"}
    p = planner(tmp_path, DEEPSEEK, THREE)
    p.plan(INTENT)
    req = requests(p)[0]
    assert req.config.response_format is None
    assert CATALOG_HEADER in req.system  # deepseek supports prefix caching


def test_max_tokens_override(tmp_path):
    p = planner(tmp_path, NEMOTRON, THREE, max_tokens=600)
    p.plan(INTENT)
    assert requests(p)[0].config.max_tokens == 600


def test_absent_context_is_omitted_and_present_context_rendered(tmp_path):
    p = planner(tmp_path, SONNET, THREE, THREE)
    p.plan(INTENT)
    p.plan(INTENT, context="MiniMax M3: 235B parameters, 22B active.")
    without, with_ctx = (r.messages[-1].text for r in requests(p))
    assert "CONTEXT" not in without and "None" not in without
    assert "CONTEXT:\nMiniMax M3: 235B parameters, 22B active." in with_ctx


def test_demos_never_repeat_the_catalog(tmp_path):
    from helmdeck_dspy.program.modules import MODULES

    p = planner(tmp_path, NEMOTRON, THREE)
    program = MODULES[p.variant]()  # the loaded program is read-only: a module of the test's own
    program.plan.demos = [
        {"user_intent": "scrape example.org", "steps": [step(1, "web.scrape", {"url": "https://example.org"})],
         "complexity": "single-action", "more_steps_likely": False, "reasoning": "one pack"},
    ]
    p = Planner(budget=p.budget, program=program.freeze(), lm=p.lm, catalog=p.catalog, options=p.options)
    p.plan(INTENT)
    req = requests(p)[0]
    roles = [m.role for m in req.messages]
    assert roles == ["user", "assistant", "user"]
    assert CATALOG_HEADER not in req.messages[0].text
    assert json.loads(req.messages[1].text)["steps"][0]["tool"] == "web.scrape"
    all_text = req.system + "".join(m.text for m in req.messages)
    assert all_text.count(CATALOG_HEADER) == 1


def test_length_completion_is_length_truncated_with_no_steps_and_one_call(tmp_path):
    p = planner(tmp_path, NEMOTRON, {"content": '{"steps":[{"order":1,"tool":"helmdeck.memory_store","args":{', "finish_reason": "length"})
    r = p.plan(INTENT)
    assert r.failure_cause == "length_truncated" and r.steps == [] and r.rewritten_prompt == ""
    assert r.raw_completion.startswith('{"steps"')
    assert len(requests(p)) == 1  # no "JSON fallback" second call


@pytest.mark.parametrize(
    "completion,cause",
    [
        ({"content": "", "finish_reason": "content_filter"}, "safety_filtered"),
        ({"content": "", "finish_reason": "stop", "reasoning_content": "thinking..."}, "reasoning_only"),
        ({"content": "<think>still going", "finish_reason": "length"}, "length_truncated"),
        ({"content": "I cannot plan that.", "finish_reason": "stop"}, "no_json"),
        ({"content": '{"answer": 1}', "finish_reason": "stop"}, "schema_mismatch"),
    ],
)
def test_failure_causes_flow_into_the_result(tmp_path, completion, cause):
    r = planner(tmp_path, NEMOTRON, completion).plan(INTENT)
    assert r.failure_cause == cause and not r.steps


def test_repaired_plan_is_marked(tmp_path):
    r = planner(tmp_path, SONNET, '{"steps": [{"tool": "web.scrape", "args": {}},]}').plan("scrape a page")
    assert r.ok and r.parse_outcome == "repaired"


def test_guards_apply_against_the_full_catalog(tmp_path):
    content = plan_json([
        step(5, "helmdeck.memory_store"),
        step(9, "youtube.transcript", rationale="get it"),
        step(2, "helmdeck.plan"),
        step(1, "helmdeck__pipeline-run", {"id": "builtin.does-not-exist"}),
        step(3, "helmdeck__pipeline-run", {"id": "builtin.doc-rewrite-blog"}),
    ])
    r = planner(tmp_path, SONNET, content).plan(INTENT)
    assert [s.order for s in r.steps] == [1, 2, 3, 4, 5]
    assert [s.tool for s in r.steps] == ["helmdeck.memory_store", "unknown", "unknown", "unknown", "helmdeck__pipeline-run"]
    assert r.steps[1].rationale == 'gap: tool "youtube.transcript" not in catalog — model said: get it'
    assert "cannot call itself" in r.steps[2].rationale
    assert r.steps[3].args == {"id": "builtin.does-not-exist"}


def test_audit_row_written_on_success_only(tmp_path):
    store = HistoryStore(tmp_path / "h.sqlite")
    p = planner(tmp_path, SONNET, THREE, {"content": "", "finish_reason": "length"}, history=store, caller="alice")
    p.plan(INTENT)
    p.plan(INTENT)
    rows = store.rows("alice")
    assert len(rows) == 1
    row = rows[0]
    assert row.key.startswith(f"plan_history/{row.intent_sha}/") and len(row.intent_sha) == 16
    assert row.complexity == "pack-chain" and row.model == SONNET
    assert [s.tool for s in row.steps] == ["helmdeck.memory_store", "blog.rewrite_for_audience", "image.generate"]
    assert row.steps[0].args_sha and row.steps[1].args_sha is None


def test_record_writes_a_trace_record_per_call(tmp_path):
    out = tmp_path / "rec.jsonl"
    p = planner(tmp_path, NEMOTRON, {"content": THREE, "completion_tokens": 77, "prompt_tokens": 2100}, record_path=out)
    p.plan(INTENT)
    (rec,) = list(read_jsonl_traces(out))
    assert rec.content == THREE and rec.finish_reason == "stop" and rec.completion_tokens == 77
    assert rec.model == NEMOTRON and rec.tier == "C" and rec.prompt_variant == "single_pick"
    assert rec.source == "replay" and rec.max_tokens == 1500 and rec.intent == INTENT


def test_replay_running_out_is_an_error(tmp_path):
    p = planner(tmp_path, NEMOTRON, THREE)
    p.plan(INTENT)
    with pytest.raises(HelmdeckError, match="ran out"):
        p.plan(INTENT)


def test_filter_pass_consumes_a_call_and_merges(tmp_path):
    filter_answer = {"content": json.dumps({"ids": ["helmdeck.memory_store", "image.generate", "made.up"]}), "call": "filter"}
    p = planner(tmp_path, NEMOTRON, filter_answer, THREE, use_filter=True)
    r = p.plan(INTENT)
    assert r.ok
    assert any(d.startswith("llm_filter(picks=2,") for d in r.compaction.dropped)
    filter_req, plan_req = requests(p)
    assert filter_req.config.max_tokens == 600
    assert '"name":"helmdeck.memory_store"' in plan_req.messages[-1].text


def test_filter_failure_keeps_the_lexical_selection(tmp_path):
    p = planner(tmp_path, NEMOTRON, {"content": "no idea, sorry", "call": "filter"}, THREE, use_filter=True)
    r = p.plan(INTENT)
    assert r.ok and not any(d.startswith("llm_filter(") for d in r.compaction.dropped)


def test_plan_only_replay_file_works_with_the_filter_on(tmp_path):
    p = planner(tmp_path, NEMOTRON, THREE, use_filter=True)
    r = p.plan(INTENT)
    assert r.ok and len(requests(p)) == 1
    assert not any(d.startswith("llm_filter(") for d in r.compaction.dropped)


def test_recorded_filter_and_plan_calls_replay_to_the_same_result(tmp_path):
    filter_answer = {"content": json.dumps({"ids": ["helmdeck.memory_store", "image.generate"]}), "call": "filter"}
    out = tmp_path / "recorded.jsonl"
    first = planner(tmp_path, NEMOTRON, filter_answer, THREE, use_filter=True, record_path=out).plan(INTENT)
    recs = list(read_jsonl_traces(out))
    assert [r.call for r in recs] == ["filter", "plan"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = Planner.for_model(NEMOTRON, lm=f"replay:{out}").plan(INTENT)
    assert again.model_dump(exclude={"usage", "attempts"}) == first.model_dump(exclude={"usage", "attempts"})


def _one(tool, more):
    return plan_json([step(1, tool)], more_steps_likely=more)


def test_loop_stops_when_no_more_steps_are_likely(tmp_path):
    p = planner(tmp_path, NEMOTRON, _one("helmdeck.memory_store", True), _one("blog.rewrite_for_audience", True),
                _one("image.generate", False))
    executed = []
    out = p.run_loop(INTENT, lambda s: executed.append(s.tool) or f"done {s.tool}")
    assert out.stopped_because == "done"
    assert executed == ["helmdeck.memory_store", "blog.rewrite_for_audience", "image.generate"]
    # each re-plan carried the steps already executed
    third_user = requests(p)[2].messages[-1].text
    assert "PRIOR STEPS" in third_user and "blog.rewrite_for_audience" in third_user and "done helmdeck.memory_store" in third_user


def test_loop_stops_at_max_steps(tmp_path):
    p = planner(tmp_path, NEMOTRON, *[_one(tool, True) for tool in ("web.scrape", "image.generate", "web.scrape")])
    out = p.run_loop("scrape forever", lambda s: "ok", max_steps=2)  # (the same call twice in a row is a repeat)
    assert out.stopped_because == "max_steps" and len(out.executed) == 2
    assert len(requests(p)) == 2


def test_loop_stops_on_failure(tmp_path):
    p = planner(tmp_path, NEMOTRON, _one("web.scrape", True), {"content": "", "finish_reason": "length"})
    out = p.run_loop("scrape twice", lambda s: "ok")
    assert out.stopped_because == "failed" and len(out.executed) == 1


def test_full_steps_loop_executes_the_whole_plan_after_one_call(tmp_path):
    p = planner(tmp_path, SONNET, THREE)
    out = p.run_loop(INTENT, lambda s: "ok")
    assert out.stopped_because == "done" and len(out.executed) == 3 and len(requests(p)) == 1


def test_empty_intent_is_rejected(tmp_path):
    with pytest.raises(ValueError):
        planner(tmp_path, SONNET, THREE).plan("   ")


def test_uncompiled_program_warns(tmp_path):
    path = replay_file(tmp_path, THREE)
    with pytest.warns(UserWarning, match="no compiled program"):
        Planner.for_model(SONNET, lm=f"replay:{path}", compiled_root=tmp_path / "nothing-here")


def test_a_planner_and_its_program_cannot_be_changed_once_built(tmp_path):
    from helmdeck_dspy.errors import FrozenPlannerError, FrozenProgramError

    p = planner(tmp_path, NEMOTRON, THREE)
    for name, value in (("catalog", None), ("options", None), ("budget", None), ("lm", None)):
        with pytest.raises(FrozenPlannerError):
            setattr(p, name, value)
    with pytest.raises(FrozenPlannerError):
        del p.catalog
    with pytest.raises(AttributeError):
        p.program.plan.demos.clear()  # a tuple: the loaded demos cannot be emptied in place
    with pytest.raises(FrozenProgramError):
        p.program.plan.demos = []
    ctx = p.context()
    with pytest.raises(AttributeError):
        ctx.budget = None  # the per-request context is frozen too
    with pytest.raises(TypeError):
        ctx.sampling["temperature"] = 1.0  # and so is its sampling
    other = p.replace(options=p.options.model_copy(update={"caller": "other"}))
    assert other.options.caller == "other" and p.options.caller is None and other.program is p.program


def test_assigning_to_the_planner_or_its_context_during_a_request_raises(tmp_path):
    import dspy

    from helmdeck_dspy.errors import FrozenPlannerError
    from helmdeck_dspy.planning.request import context_of

    p = planner(tmp_path, NEMOTRON, THREE)
    ctx = context_of(p)
    raised: list[BaseException] = []

    class Assign(dspy.utils.callback.BaseCallback):
        """Tries, at the start of the plan module, what a module must never do mid-request; records what
        happened (DSPy swallows a callback's exceptions), and the test asserts afterwards."""

        def on_module_start(self, call_id, instance, inputs):
            for target, name in ((p, "catalog"), (p, "options"), (ctx, "budget"), (ctx, "strategy")):
                try:
                    setattr(target, name, None)
                except (FrozenPlannerError, AttributeError) as exc:
                    raised.append(exc)

    with dspy.context(callbacks=[Assign()]):
        result = p.plan(INTENT)
    assert result.ok
    assert raised and len(raised) % 4 == 0 and isinstance(raised[0], FrozenPlannerError)  # at each module start
    assert p.catalog is not None and ctx.budget is not None
