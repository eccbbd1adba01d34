"""No-call and any-call scoring, per-category recall, pool replacement counts, the report and the CLI."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from helmdeck_dspy.budgets import load_budget_table
from helmdeck_dspy.cli.app import cli
from helmdeck_dspy.cli.bench import join_list_values
from helmdeck_dspy.bench.bfcl.load import load_bfcl
from helmdeck_dspy.bench.bfcl.recall import measure_recall, tier_budgets
from helmdeck_dspy.bench.bfcl.report import BfclReport, render_markdown
from helmdeck_dspy.bench.bfcl.score import (
    Call,
    score_calls,
    summarise,
    summarise_by_category,
)
from tests.bench.conftest import ANSWERS, QUESTIONS, write_bfcl


@pytest.fixture
def tasks(shapes_dir):
    return {q.id: q for q in load_bfcl(shapes_dir).questions}


def test_an_empty_plan_is_right_where_nothing_fits(tasks):
    q = tasks["irrelevance_0"]
    assert score_calls(q, []).exact
    assert score_calls(q, [Call(name="unknown", args={})]).exact  # only steps the guard demoted: still a gap
    wrong = score_calls(q, [Call(name="loan.payment", args={"amount": 1.0})])
    assert not wrong.exact and wrong.problems == ["called 'loan.payment' where no call fits"]
    assert score_calls(tasks["multi_turn_base_0:turn3"], []).exact


def test_any_offered_call_is_right_for_relevance(tasks):
    q = tasks["live_relevance_0-0-0"]
    assert score_calls(q, [Call(name="image.generate", args={"prompt": "anything"})]).exact
    assert not score_calls(q, []).exact and not score_calls(q, [Call(name="unknown")]).exact


def test_summary_keeps_no_call_tasks_out_of_call_rates_and_gives_the_irrelevance_rate(tasks):
    scores = [
        score_calls(tasks["irrelevance_0"], []),
        score_calls(tasks["multi_turn_base_0:turn3"], [Call(name="cd", args={"folder": "x"})]),
        score_calls(tasks["live_relevance_0-0-0"], [Call(name="image.generate")]),
        score_calls(tasks["live_simple_0-0-0"], [Call(name="get_weather", args={"city": "oslo"})]),
        score_calls(tasks["simple_javascript_0"], []),
    ]
    s = summarise(scores)
    assert (s.n, s.exact, s.no_call_n, s.abstained, s.irrelevance_rate) == (5, 3, 2, 1, 0.5)
    assert (s.any_call_n, s.any_called, s.abstained_with_gold) == (1, 1, 1)
    assert (s.call_recall, s.call_precision) == (0.5, 1.0)  # 1 of 2 gold calls; the no-call task's call not counted
    by_cat = summarise_by_category(scores)
    assert by_cat["irrelevance"].irrelevance_rate == 1.0 and by_cat["multi_turn_base"].irrelevance_rate == 0.0
    assert summarise([score_calls(tasks["live_simple_0-0-0"], [])]).irrelevance_rate is None


def test_recall_is_per_category_and_leaves_out_tasks_without_gold(shapes_dir):
    data = load_bfcl(shapes_dir)
    result = measure_recall(data, tier_budgets(load_budget_table()), ["bm25"], pool=False)
    no_gold = sum(1 for q in data.questions if not q.gold_tools)
    assert no_gold == 4  # irrelevance, live_relevance, one turn of each multi_turn question
    assert (result.n_questions, result.n_without_gold) == (len(data.questions) - no_gold, no_gold)
    by_cat = result.rankers["bm25"].by_category
    assert set(by_cat) == {"live_simple", "multi_turn_base", "multi_turn_miss_func", "parallel", "simple_java",
                           "simple_javascript"}
    assert by_cat["multi_turn_base"]["C"].n_questions == 3 and by_cat["multi_turn_miss_func"]["A"].n_questions == 2
    assert sum(t["A"].n_questions for t in by_cat.values()) == result.rankers["bm25"].tiers["A"].n_questions


def test_pool_reports_tasks_whose_gold_definition_was_replaced(tmp_path):
    questions = json.loads(json.dumps(QUESTIONS))
    twin = json.loads(json.dumps(QUESTIONS[0]))
    twin["id"] = "parallel_2"
    twin["function"][0]["description"] = "Another wording of the same tool."
    unused = json.loads(json.dumps(QUESTIONS[1]))
    unused["id"] = "parallel_3"
    unused["function"].insert(0, {**twin["function"][0], "description": "Yet another wording."})
    answers = [*ANSWERS, {**ANSWERS[0], "id": "parallel_2"}, {**ANSWERS[1], "id": "parallel_3"}]
    data = load_bfcl(write_bfcl(tmp_path / "d", questions=[*questions, twin, unused], answers=answers))
    stats = data.pool_stats()
    # parallel_2's gold tool is parallel_0's version now; parallel_3 offers a third version but does not use it.
    assert (stats.conflicts, stats.gold_replaced, stats.gold_replaced_by_category) == (2, 1, {"parallel": 1})
    result = measure_recall(data, tier_budgets(load_budget_table()), ["bm25"], pool=True)
    assert (result.pool_conflicts, result.pool_gold_replaced) == (2, 1)


def test_report_has_category_notes_and_the_per_category_table(shapes_dir):
    data = load_bfcl(shapes_dir)
    recall = measure_recall(data, tier_budgets(load_budget_table()), ["lexical"], pool=True)
    report = BfclReport(**recall.model_dump(), data=str(shapes_dir), files=data.files, notes=list(data.notes))
    md = render_markdown(report)
    assert "- multi_turn_base: 1 questions (4 turn tasks), multi_turn" in md
    assert "- web_search: not loaded (skipped): agentic" in md
    assert "- simple_python: not loaded (no answer file): BFCL_v4_simple_python.json has no" in md
    assert "| simple_java | 1 | lexical |" in md and "Pooling keeps the first definition" in md


@pytest.mark.parametrize(("given", "expected"), [
    (["--rankers", "lexical", "bm25", "--json"], ["--rankers", "lexical,bm25", "--json"]),
    (["--rankers=lexical", "bm25"], ["--rankers", "lexical,bm25"]),
    (["--categories", "a", "b", "--rankers", "bm25", "--data", "d"], ["--categories", "a,b", "--rankers", "bm25", "--data", "d"]),
    (["--rankers"], ["--rankers"]),
    (["--data", "d", "--", "--rankers", "x"], ["--data", "d", "--", "--rankers", "x"]),
])
def test_list_options_take_space_separated_values(given, expected):
    assert join_list_values(given) == expected


def _bench(*args: str):
    return CliRunner().invoke(cli, ["bench", "bfcl", *args], catch_exceptions=False)


def test_cli_space_separated_rankers_work_like_the_comma_form(bfcl_dir):
    spaced = _bench("--data", str(bfcl_dir), "--rankers", "lexical", "bm25", "--json")
    comma = _bench("--data", str(bfcl_dir), "--rankers", "lexical,bm25", "--json")
    assert spaced.exit_code == 0, spaced.output
    assert list(json.loads(spaced.stdout)["rankers"]) == list(json.loads(comma.stdout)["rankers"]) == ["lexical", "bm25"]
    both = _bench("--data", str(bfcl_dir), "--categories", "parallel", "--rankers", "lexical", "bm25", "--json")
    assert json.loads(both.stdout)["categories"] == ["parallel"]
    bad = CliRunner().invoke(cli, ["bench", "bfcl", "--data", str(bfcl_dir), "--rankers", "lexical", "bm2"])
    assert bad.exit_code == 2 and "unknown ranker 'bm2'" in bad.output


def test_cli_runs_over_a_folder_of_every_shape(shapes_dir, tmp_path):
    result = _bench("--data", str(shapes_dir), "--rankers", "bm25", "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    assert "bfcl: web_search not loaded (skipped): agentic" in result.stderr
    assert "bfcl: simple_python not loaded (no answer file)" in result.stderr
    assert "(+4 where no call is right)" in result.stdout and "| multi_turn_miss_func | 2 | bm25 |" in result.stdout
    doc = json.loads((tmp_path / "out" / "report.json").read_text())
    assert {n["category"]: n["status"] for n in doc["notes"]}["memory_kv"] == "skipped"


def test_cli_sim_plans_report_the_irrelevance_rate(shapes_dir):
    result = _bench("--data", str(shapes_dir), "--categories", "irrelevance", "multi_turn_base", "--rankers", "bm25",
                    "--lm", "sim:frontier-like", "--model", "anthropic/claude-sonnet-4-6", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)["plan_accuracy"][0]["summary"]
    assert summary["n"] == 5 and summary["no_call_n"] == 2
    assert summary["irrelevance_rate"] == summary["abstained"] / 2


def test_a_failed_answer_is_not_a_right_abstention(tasks):
    s = score_calls(tasks["irrelevance_0"], [], failed=True)
    assert not s.exact and not s.abstained and s.problems == ["no plan came back"]
    on_gold = score_calls(tasks["live_simple_0-0-0"], [], failed=True)
    assert not on_gold.abstained and on_gold.failed
    summary = summarise([s, on_gold, score_calls(tasks["irrelevance_0"], [])])
    assert (summary.no_call_n, summary.abstained, summary.failed, summary.abstained_with_gold) == (2, 1, 2, 0)
