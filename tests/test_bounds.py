"""Bounds on outside input: depth, size and encoding limits hold, and fail in a classified way.

Small-scale versions of what ``measure/bounds.py`` measures (no timing assertions).
"""

from __future__ import annotations

import json

import pytest

from helmdeck_dspy.budgets import budget_for
from helmdeck_dspy.catalog.models import load_catalog, parse_catalog
from helmdeck_dspy.catalog.select import select_catalog, top_n_for
from helmdeck_dspy.decoding.parsing import parse_completion
from helmdeck_dspy.decoding.reasoning import split_reasoning
from helmdeck_dspy.domain import MAX_JSON_DEPTH
from helmdeck_dspy.errors import CatalogError, DataFileError
from helmdeck_dspy.traces.io import load_traces, read_jsonl_traces
from tests.strategies import deep_text, synthetic_catalog

STEP = {"tool": "blog.write", "args": {"topic": "launch"}, "rationale": "write it"}
TIER_C = "openrouter/nvidia/nemotron-3-super-120b-a12b:free"
TIER_B = "openrouter/deepseek/deepseek-v3.2"


def plan_with_args(args) -> str:
    return json.dumps({"steps": [{**STEP, "args": args}]})


# ------------------------------------------------------------------------------ depth


@pytest.mark.parametrize("kind", ["[", "{"])
@pytest.mark.parametrize("closed", [True, False])
@pytest.mark.parametrize("wrap", ["", "```json\n{}\n```", "Here it is: {}", '{{"steps": [{{"tool": "a", "args": {}}}]}}'])
def test_ten_thousand_deep_json_fails_with_a_cause(kind, closed, wrap):
    deep = deep_text(10_000, kind, closed)
    r = parse_completion(wrap.format(deep) if wrap else deep, "stop")
    assert r.outcome == "failed"
    assert "internal_error" not in r.notes
    if wrap.startswith("Here") and kind == "[":
        assert r.cause == "no_json"  # prose around an array: no object to decode at all
        return
    assert r.cause == "constrained_deadlock"
    assert "too_deep" in r.notes
    assert f"nested more than {MAX_JSON_DEPTH} levels" in r.error


def test_depth_at_the_limit_is_accepted_and_one_more_is_not():
    ok = '{"steps": [{"tool": "a", "rationale": "", "args": {"x": ' + deep_text(MAX_JSON_DEPTH - 4, "[") + "}}]}"
    r = parse_completion(ok)
    assert r.outcome == "strict", r.error
    too_deep = '{"steps": [{"tool": "a", "rationale": "", "args": {"x": ' + deep_text(MAX_JSON_DEPTH - 3, "[") + "}}]}"
    r = parse_completion(too_deep)
    assert r.outcome == "failed" and "too_deep" in r.notes


def test_a_deep_value_does_not_hide_a_later_plan():
    text = deep_text(5_000, "{") + "\nthen the real answer: " + json.dumps({"steps": [STEP]})
    r = parse_completion(text)
    assert r.outcome == "strict"
    assert r.value == {"steps": [STEP]}


def test_a_broken_plan_with_deep_brackets_is_not_handed_to_repair():
    # Before the guard, json_repair spent seconds backtracking over this kind of input.
    text = '{"steps": [{"tool": "a", "args": {"x": "\\u12", "y": ' + deep_text(10_000, "[") + '}, "rationale": "'
    r = parse_completion(text)
    assert r.outcome == "failed" and r.cause == "constrained_deadlock"
    assert "too_deep" in r.notes and "repaired" not in r.notes


# ------------------------------------------------------------------------------ size


def test_a_multi_megabyte_plan_parses():
    plan = {"steps": [{**STEP, "args": {"topic": "launch " * 30, "n": i}} for i in range(10_000)]}
    text = json.dumps(plan)
    assert len(text) > 2_000_000
    r = parse_completion(text, "stop")
    assert r.outcome == "strict"
    assert len(r.plan.steps) == 10_000


@pytest.mark.parametrize("filler", ["lorem ipsum dolor sit amet ", "{ not json [ ", '{"a":"'])
def test_megabytes_of_prose_or_garbage_fail_cleanly(filler):
    r = parse_completion(filler * (2_000_000 // len(filler)), "stop")
    assert r.outcome == "failed"
    assert r.cause in ("no_json", "constrained_deadlock")
    assert "internal_error" not in r.notes


# ------------------------------------------------------------------------------ encoding


def test_lone_surrogate_escapes_are_replaced_so_the_plan_prints():
    r = parse_completion(plan_with_args({"x": "\udb19", "ok": "\U0001f600"}))
    assert r.outcome == "strict"
    assert "lone_surrogate" in r.notes
    assert r.value["steps"][0]["args"] == {"x": "\ufffd", "ok": "\U0001f600"}
    json.dumps(r.to_json_dict(), ensure_ascii=False).encode("utf-8")


def test_a_surrogate_finish_reason_is_kept_printable():
    r = parse_completion("", "stop\udcff")
    json.dumps(r.to_json_dict(), ensure_ascii=False).encode("utf-8")


@pytest.mark.parametrize("tag", ["[REASONING]", "<think>", "</think>", "[/REASONING]"])
def test_a_reasoning_tag_inside_a_json_string_is_text(tag):
    text = json.dumps({"steps": [{**STEP, "rationale": f"mention {tag} here"}]})
    assert split_reasoning(text).visible == text
    r = parse_completion(f"<think>plan it</think>\n{text}")
    assert r.outcome == "strict"
    assert r.value["steps"][0]["rationale"] == f"mention {tag} here"


def test_a_tag_after_the_json_still_counts():
    r = parse_completion(json.dumps({"steps": [STEP]}) + "\n<think>more")
    assert r.outcome == "strict"
    assert "unclosed_reasoning" in r.notes


def test_trace_lines_with_lone_surrogates_are_bad_lines(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"id": "a", "note": "\\udb19"}\n{"id": "b", "note": "\\ud83d\\ude00"}\n', encoding="utf-8")
    for reader in (load_traces, read_jsonl_traces):
        with pytest.raises(DataFileError, match="surrogate"):
            list(reader(path))
        skipped = []
        recs = list(reader(path, on_error="skip", report=skipped.append))
        assert [r.id for r in recs] == ["b"] and len(skipped) == 1


# ------------------------------------------------------------------------------ catalogs


def test_five_thousand_tool_catalog_selects_within_the_tier_caps():
    guide = parse_catalog(synthetic_catalog(5_000, 50))
    assert len(guide.packs) == 5_000
    for model in (TIER_C, TIER_B):
        budget = budget_for(model)
        assert budget.max_catalog_bytes > 0
        for ranker in ("lexical", "bm25"):
            selected, trim = select_catalog(guide, budget, "write a blog post and store it in memory", ranker=ranker)
            assert selected.size_bytes() <= budget.max_catalog_bytes
            assert top_n_for(budget.tier) <= len(selected.ids()) < len(guide.ids())  # the floor, then what fits
            assert trim.before_bytes > budget.max_catalog_bytes


def test_catalog_values_nested_too_deeply_are_catalog_errors(tmp_path):
    nested = json.loads(deep_text(500, "["))
    with pytest.raises(CatalogError, match="nested too deeply"):
        parse_catalog({"packs": [{"name": "a", "metadata": {"inputs": nested}}]})
    path = tmp_path / "deep.json"
    path.write_text(deep_text(10_000, "{"), encoding="utf-8")
    with pytest.raises(CatalogError, match="nested too deeply"):
        load_catalog(path)


def test_a_deep_entry_name_is_reported_not_crashed_on():
    name = json.loads(deep_text(900, "["))
    with pytest.raises(CatalogError, match="packs.0.name"):
        parse_catalog({"packs": [{"name": name}]})


def test_counts_beyond_two_to_the_53_are_bad_lines(tmp_path):
    from helmdeck_dspy.evaluation.runner import evaluate

    path = tmp_path / "t.jsonl"
    path.write_text('{"id": "a", "completion_tokens": 1%s}\n{"id": "b", "completion_tokens": 12}\n' % ("0" * 400),
                    encoding="utf-8")
    with pytest.raises(DataFileError, match="completion_tokens"):
        list(load_traces(path))
    with pytest.raises(DataFileError, match="completion_tokens"):
        evaluate([path], progress=False)
    report = evaluate([path], on_error="skip", progress=False)
    assert (report.n_records, report.n_skipped) == (1, 1)


def test_trace_lines_nested_too_deeply_are_bad_lines(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"id": "a", "extra": %s}\n{"id": "b"}\n' % deep_text(300, "{"), encoding="utf-8")
    for reader in (load_traces, read_jsonl_traces):
        with pytest.raises(DataFileError, match="nested more than"):
            list(reader(path))
        assert [r.id for r in reader(path, on_error="skip")] == ["b"]
