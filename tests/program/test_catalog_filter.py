"""The two-pass LLM filter: helmdeck's filter_test.go cases (anchor report §1.6, §2) and the merge
behaviour of apply_filter with a fake LM."""

from __future__ import annotations

import pytest

from dspy.lm15 import Message, Response, TextPart, ThinkingPart, Usage

from helmdeck_dspy.budgets import Budget
from helmdeck_dspy.catalog.compact import Trim, compact_catalog, first_sentence
from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.catalog.select import restrict_catalog, select_catalog
MARK_TOP_N, MARK_LOW_CONFIDENCE = "bm25.top_n", "bm25.low_confidence"  # the default ranker's markers

from helmdeck_dspy.program.catalog_filter import (
    FILTER_MAX_TOKENS,
    FILTER_SYSTEM,
    apply_filter,
    filter_user_message,
    merge_keep_order,
    parse_filter_ids,
    should_filter,
)

from tests.catalog.conftest import build_big_catalog


def make_budget(cap: int = 0, allows: bool = True, tier: str = "C") -> Budget:
    return Budget(
        model="m", matched="fallback", tier=tier, input_tokens=16000, output_tokens=1500,
        max_catalog_bytes=cap, allows_llm_filter=allows,
    )


def response(*parts) -> Response:
    return Response(
        id="r1", model="filter-model", message=Message(role="assistant", parts=tuple(parts)),
        finish_reason="stop", usage=Usage(input_tokens=10, output_tokens=5),
    )


class FakeLM:
    """Records requests; answers with fixed text (or parts), or raises."""

    def __init__(self, text: str | None = None, parts=None, exc: Exception | None = None) -> None:
        self.model = "openrouter/filter-model"
        self.text = text
        self.parts = parts
        self.exc = exc
        self.requests = []

    def __call__(self, request):
        self.requests.append(request)
        if self.exc is not None:
            raise self.exc
        parts = self.parts if self.parts is not None else (TextPart(text=self.text or ""),)
        return response(*parts)


# --------------------------------------------------------------------------------------------
# The user message (BuildFilterUserMessage)
# --------------------------------------------------------------------------------------------


def test_user_message_structure_for_big_catalog():
    rg = build_big_catalog(50, 20)
    msg = filter_user_message(rg, "  do the thing for me \n")
    assert msg.startswith("TOOLS:\n")
    assert "\nREQUEST:\n" in msg
    assert msg.endswith("Reply with the JSON object now.")
    assert len(msg.encode("utf-8")) <= 12_000
    for entry_id in rg.ids():
        assert f"- {entry_id} — " in msg, entry_id
    assert "\nREQUEST:\ndo the thing for me\n" in msg  # intent trimmed


def test_user_message_lines_packs_then_pipelines_first_sentence():
    rg = RoutingGuide.model_validate(
        {
            "packs": [
                {"name": "b.pack", "description": "Does b. Then more detail.", "metadata": {"intent_keywords": ["kw b"]}},
                {"name": "a.nodesc"},
            ],
            "pipelines": [{"id": "builtin.p", "description": "Runs p! Extra."}],
        }
    )
    msg = filter_user_message(rg, "x")
    lines = msg.split("\n")
    assert lines[:4] == ["TOOLS:", "- b.pack — Does b.", "- a.nodesc", "- builtin.p — Runs p!"]
    assert "Then more detail" not in msg
    assert "kw b" not in msg
    assert lines[4:] == ["", "REQUEST:", "x", "", "Reply with the JSON object now."]


def test_user_message_uses_full_catalog_descriptions():
    rg = build_big_catalog(3, 1)
    compacted, _ = compact_catalog(rg, 1200)
    # same first sentences either way: the message is built from the catalog it is given
    assert filter_user_message(rg, "x") == filter_user_message(compacted, "x")
    assert first_sentence(rg.packs[0].description) in filter_user_message(rg, "x")


# --------------------------------------------------------------------------------------------
# ParseFilterResponse → parse_filter_ids
# --------------------------------------------------------------------------------------------


def test_parse_plain():
    assert parse_filter_ids('{"ids":["pack.one","pack.two","pipeline.three"]}') == [
        "pack.one", "pack.two", "pipeline.three",
    ]


def test_parse_fenced():
    assert parse_filter_ids('```json\n{"ids":["a","b"]}\n```') == ["a", "b"]


def test_parse_prose_wrapped():
    assert parse_filter_ids('Sure thing, here\'s the filter result: {"ids":["x.y","z.w"]} that\'s all.') == ["x.y", "z.w"]


def test_parse_dedupes_keeping_first_order():
    assert parse_filter_ids('{"ids":["a","b","a","c","b"]}') == ["a", "b", "c"]


def test_parse_failures_are_empty():
    for text in ["", None, "not json", "{}", '{"ids":[]}', '{"wrong_key":["a"]}', '{"ids":"a"}', '{"ids":["a"']:
        assert parse_filter_ids(text) == [], text


def test_parse_real_world_fenced_with_preamble():
    text = (
        "Here are the relevant tools for the intent:\n```json\n"
        '{"ids": ["web.scrape", "doc.parse", "builtin.doc-rewrite-blog"]}\n```\n'
    )
    assert parse_filter_ids(text) == ["web.scrape", "doc.parse", "builtin.doc-rewrite-blog"]


def test_parse_trims_and_drops_empty_ids():
    assert parse_filter_ids('{"ids":["  a  ", "", "   ", "b", " a"]}') == ["a", "b"]


def test_parse_ignores_reasoning_block():
    assert parse_filter_ids('<think>maybe {"ids":["wrong"]}</think>{"ids":["right"]}') == ["right"]


def test_parse_skips_objects_without_ids():
    assert parse_filter_ids('{"note": "first"} then {"ids": ["a"]}') == ["a"]


# --------------------------------------------------------------------------------------------
# MergeKeepOrder
# --------------------------------------------------------------------------------------------


def test_merge_keep_order():
    assert merge_keep_order(["a", "b", "c"], ["c", "d", "a"]) == ["a", "b", "c", "d"]
    assert merge_keep_order([], ["z", "y", "z"]) == ["z", "y"]
    assert merge_keep_order(["q"], []) == ["q"]


# --------------------------------------------------------------------------------------------
# should_filter
# --------------------------------------------------------------------------------------------


def _trim(*dropped: str) -> Trim:
    return Trim(before_bytes=100, after_bytes=50, dropped=list(dropped))


def test_should_filter_needs_both_flags():
    assert should_filter(make_budget(allows=True), _trim(MARK_TOP_N, MARK_LOW_CONFIDENCE))
    assert not should_filter(make_budget(allows=False), _trim(MARK_TOP_N, MARK_LOW_CONFIDENCE))
    assert not should_filter(make_budget(allows=True), _trim(MARK_TOP_N))
    assert not should_filter(make_budget(allows=True), _trim())


def test_should_filter_after_real_low_confidence_selection():
    full = build_big_catalog(60, 0)
    b = make_budget(4000, allows=True)
    _, trim = select_catalog(full, b, "do something useful")
    assert MARK_LOW_CONFIDENCE in trim.dropped
    assert should_filter(b, trim)
    assert not should_filter(make_budget(4000, allows=False), trim)


# --------------------------------------------------------------------------------------------
# apply_filter
# --------------------------------------------------------------------------------------------

FULL = build_big_catalog(6, 3)  # synthetic.pack0..5, builtin.synthetic-pipe0..2


def _lexical() -> tuple[RoutingGuide, Trim]:
    compacted, ctrim = compact_catalog(FULL, 2500)
    selected = restrict_catalog(compacted, ["synthetic.pack4", "synthetic.pack1"])
    trim = Trim(
        before_bytes=FULL.size_bytes(), after_bytes=selected.size_bytes(),
        dropped=[*ctrim.dropped, MARK_TOP_N, MARK_LOW_CONFIDENCE],
    )
    return selected, trim


def test_apply_filter_merges_picks_with_lexical_survivors():
    selected, trim = _lexical()
    lm = FakeLM('{"ids": ["builtin.synthetic-pipe2", "made.up.tool", "synthetic.pack1", "synthetic.pack0"]}')
    out, new_trim = apply_filter(lm, FULL, selected, trim, make_budget(0), "do it")
    # picks (known only) ∪ lexical, in the full catalog's order
    assert out.ids() == ["synthetic.pack0", "synthetic.pack1", "synthetic.pack4", "builtin.synthetic-pipe2"]
    assert "made.up.tool" not in out.ids()
    # entries come from the full, uncompacted catalog
    full_by_id = {e.entry_id: e for e in (*FULL.packs, *FULL.pipelines)}
    for e in (*out.packs, *out.pipelines):
        assert e.wire_json == full_by_id[e.entry_id].wire_json
    assert out.packs[1].metadata.intent_keywords  # compaction had removed these in the lexical selection
    assert not selected.packs[0].metadata.intent_keywords
    # trim record
    assert new_trim.dropped == [*trim.dropped, "llm_filter(picks=3,kept=4)"]
    assert new_trim.before_bytes == trim.before_bytes
    assert new_trim.after_bytes == out.size_bytes()


def test_apply_filter_request():
    selected, trim = _lexical()
    lm = FakeLM('{"ids": ["synthetic.pack2"]}')
    apply_filter(lm, FULL, selected, trim, make_budget(0), "  the intent  ")
    [req] = lm.requests
    assert req.model == lm.model
    assert req.config.max_tokens == FILTER_MAX_TOKENS == 600
    assert req.system == FILTER_SYSTEM
    [msg] = req.messages
    assert msg.role == "user"
    text = "".join(p.text for p in msg.parts if isinstance(p, TextPart))
    assert text == filter_user_message(FULL, "the intent")  # built from the FULL catalog
    assert "builtin.synthetic-pipe1" in text  # not in the lexical selection, still offered
    assert req.config.response_format is None


def test_filter_system_prompt_contract():
    assert '{"ids"' in FILTER_SYSTEM
    assert "3" in FILTER_SYSTEM and "12" in FILTER_SYSTEM
    assert "never invent" in FILTER_SYSTEM


def test_apply_filter_only_text_parts_count():
    selected, trim = _lexical()
    lm = FakeLM(parts=(ThinkingPart(text='{"ids":["synthetic.pack5"]}'), TextPart(text='{"ids":["synthetic.pack3"]}')))
    out, new_trim = apply_filter(lm, FULL, selected, trim, make_budget(0), "x")
    assert "synthetic.pack3" in out.ids()
    assert "synthetic.pack5" not in out.ids()
    assert new_trim.dropped[-1] == "llm_filter(picks=1,kept=3)"


def test_apply_filter_recompacts_to_cap():
    selected, trim = _lexical()
    cap = 2500
    lm = FakeLM('{"ids": ["synthetic.pack0", "synthetic.pack2", "builtin.synthetic-pipe0"]}')
    out, new_trim = apply_filter(lm, FULL, selected, trim, make_budget(cap), "x")
    assert set(out.ids()) == {"synthetic.pack0", "synthetic.pack1", "synthetic.pack2", "synthetic.pack4",
                              "builtin.synthetic-pipe0"}
    assert new_trim.after_bytes == out.size_bytes()
    assert "llm_filter(picks=3,kept=5)" in new_trim.dropped
    # the uncompacted merge would be over the cap; the result is compacted back under it
    assert restrict_catalog(FULL, out.ids()).size_bytes() > cap
    assert out.size_bytes() <= cap
    assert all(not p.metadata.intent_keywords for p in out.packs)
    assert len(new_trim.dropped) == len(set(new_trim.dropped))


def test_apply_filter_raising_lm_keeps_lexical():
    selected, trim = _lexical()
    lm = FakeLM(exc=RuntimeError("provider down"))
    out, new_trim = apply_filter(lm, FULL, selected, trim, make_budget(0), "x")
    assert out is selected
    assert new_trim is trim
    assert len(lm.requests) == 1


def test_apply_filter_prose_answer_keeps_lexical():
    selected, trim = _lexical()
    out, new_trim = apply_filter(FakeLM("I think pack 3 is best."), FULL, selected, trim, make_budget(0), "x")
    assert out is selected and new_trim is trim
    assert not any(d.startswith("llm_filter(") for d in new_trim.dropped)


def test_apply_filter_only_unknown_ids_keeps_lexical():
    selected, trim = _lexical()
    out, new_trim = apply_filter(FakeLM('{"ids": ["nope.one", "nope.two"]}'), FULL, selected, trim, make_budget(0), "x")
    assert out is selected and new_trim is trim


def test_apply_filter_empty_answer_keeps_lexical():
    selected, trim = _lexical()
    out, new_trim = apply_filter(FakeLM(""), FULL, selected, trim, make_budget(0), "x")
    assert out is selected and new_trim is trim


def test_apply_filter_does_not_mutate_inputs():
    selected, trim = _lexical()
    before_sel, before_trim = selected.render(), trim.model_dump()
    before_full = FULL.render()
    apply_filter(FakeLM('{"ids": ["synthetic.pack0"]}'), FULL, selected, trim, make_budget(0), "x")
    assert selected.render() == before_sel
    assert trim.model_dump() == before_trim
    assert FULL.render() == before_full


def test_apply_filter_end_to_end_with_real_selection():
    full = build_big_catalog(60, 0)
    b = make_budget(4000, allows=True)
    selected, trim = select_catalog(full, b, "do something useful")
    picks = ["synthetic.pack50", "synthetic.pack51", "synthetic.pack52"]
    lm = FakeLM('{"ids": ' + str(picks).replace("'", '"') + "}")
    out, new_trim = apply_filter(lm, full, selected, trim, b, "do something useful")
    assert set(picks) <= set(out.ids())
    assert set(selected.ids()) <= set(out.ids())
    assert len(out.ids()) == len(selected.ids()) + 3
    assert f"llm_filter(picks=3,kept={len(selected.ids()) + 3})" in new_trim.dropped
    assert new_trim.after_bytes == out.size_bytes()


def test_apply_filter_logs_a_filter_completion():
    from helmdeck_dspy.program.calls import capture_completions

    selected, trim = _lexical()
    answer = '{"ids": ["synthetic.pack2"]}'
    with capture_completions() as log:
        apply_filter(FakeLM(answer), FULL, selected, trim, make_budget(0), "the intent")
    [c] = log
    assert c.kind == "filter"
    assert c.system == FILTER_SYSTEM
    assert c.content == answer
    assert c.messages == [{"role": "user", "content": filter_user_message(FULL, "the intent")}]
    assert c.config == {"max_tokens": FILTER_MAX_TOKENS}
    assert c.prompt_tokens == 10 and c.completion_tokens == 5


def test_the_filter_call_goes_to_the_rows_filter_model(tmp_path, monkeypatch):
    """A row's ``filter_model`` names the model the filter call goes to ("" keeps the planning model);
    the plan call still goes to the planning model."""
    from helmdeck_dspy.budgets import load_budget_table
    from helmdeck_dspy.engines.lm_spec import make_lm
    from helmdeck_dspy.planning.planner import Planner
    from tests.fault_server import FaultServer, ok

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-filter-model")
    model = "openai/planning-model"
    table = load_budget_table().changed_for(model, {"allows_llm_filter": True, "filter_model": "openai/filter-mini",
                                                    "max_catalog_bytes": 4000, "tier": "C"})
    with FaultServer([ok('{"ids": []}'), ok('{"steps": []}')]) as server:
        lm = make_lm(model, api_base=server.url, cache=False, num_retries=0)
        planner = Planner.for_model(model, lm=lm, catalog=build_big_catalog(60, 0), budgets=table, history=None,
                                    cache=False, api_base=server.url)
        planner.plan("do something useful")
        models = [r.body["model"] for r in server.requests]
    assert models == ["filter-mini", "planning-model"]
