"""The model-alone baseline, lever specs and their scoring, and the answer schema on real BFCL functions."""

import json
from pathlib import Path

import pytest

from helmdeck_dspy.catalog.models import load_catalog

from helmdeck_dspy.bench.bfcl.baseline import decode_plain, plain_prompt
from helmdeck_dspy.bench.study.table import score_study
from helmdeck_dspy.bench.study.questions import load_questions
from helmdeck_dspy.bench.study.runner import pending_pairs
from helmdeck_dspy.bench.study.spec import OldSpellingError, StudySpecError, load_study_spec
from helmdeck_dspy.bench.bfcl.load import load_bfcl
from helmdeck_dspy.bench.bfcl.score import Call, example_call, score_calls
from helmdeck_dspy.program.answer_schema import plan_schema
from helmdeck_dspy.traces.record import TraceRecord, append_trace


@pytest.mark.parametrize(("text", "outcome", "names"), [
    ('[{"name": "f", "arguments": {"a": 1}}]', "strict", ["f"]),
    ('```json\n[{"name": "f", "arguments": "{\\"a\\": 1}"}]\n```', "strict", ["f"]),
    ('Sure! Here you go: [{"name": "f", "arguments": {}}, {"name": "g", "arguments": {}}] Done.', "strict", ["f", "g"]),
    ('{"name": "f", "arguments": {"a": 1}}', "strict", ["f"]),
    ("[]", "strict", []),
    ('[{"name": "f", "arguments": {"a": 1}', "repaired", ["f"]),
    ("I cannot help with that.", "failed", []),
    ('[{"tool": "f"}]', "failed", []),
])
def test_plain_answers_decode(text, outcome, names):
    answer = decode_plain(text, "stop")
    assert answer.outcome == outcome and [c.name for c in answer.calls] == names


def test_a_cut_plain_answer_is_a_failure():
    assert decode_plain('[{"name": "f", "arguments": {}}]', "length").outcome == "failed"


def test_plain_prompt_holds_the_functions_and_the_question_only(bfcl_dir):
    q = load_bfcl(bfcl_dir).questions[0]
    prompt = plain_prompt(q.intent, q.catalog)
    functions = json.loads(prompt.split("\n")[1])
    assert [f["name"] for f in functions] == [p.name for p in q.functions]
    assert q.intent in prompt and "CATALOG" not in prompt and "pipeline" not in prompt


def _spec(tmp_path: Path, bfcl_dir: Path, configs: str, baseline: str = "plain") -> Path:
    path = tmp_path / "study.toml"
    path.write_text(f'model = "m"\nlm = "sim:mid-tier"\ndata = ["{bfcl_dir}"]\ncategories = ["parallel"]\n'
                    f'limit = 5\nbaseline = "{baseline}"\n{configs}', encoding="utf-8")
    return path


def test_spec_errors_name_the_problem(tmp_path, bfcl_dir):
    with pytest.raises(StudySpecError, match="baseline 'nope'"):
        load_study_spec(_spec(tmp_path, bfcl_dir, '[[config]]\nname = "plain"\nplain = true\n', baseline="nope"))
    with pytest.raises(StudySpecError, match="repeat"):
        load_study_spec(_spec(tmp_path, bfcl_dir, '[[config]]\nname = "plain"\n[[config]]\nname = "plain"\n'))
    with pytest.raises(StudySpecError, match="constrainde"):
        load_study_spec(_spec(tmp_path, bfcl_dir, '[[config]]\nname = "plain"\nconstrainde = true\n'))



@pytest.mark.parametrize(("row", "said"), [
    ("constrained = true", 'config schema: constrained = true is the old spelling of the answer strategy; '
                           'write strategy = "schema"'),
    ("constrained = false", 'config schema: constrained = false is the old spelling of the answer strategy; '
                            'write strategy = "free"'),
    ('constrained = "yes"', 'config schema: constrained is the old spelling of the answer strategy; '
                            'write strategy = "schema" or "free"'),
])
def test_an_old_row_spelling_is_refused_naming_the_new_one(tmp_path, bfcl_dir, row, said):
    path = _spec(tmp_path, bfcl_dir, f'[[config]]\nname = "plain"\nplain = true\n[[config]]\nname = "schema"\n{row}\n')
    with pytest.raises(OldSpellingError) as info:
        load_study_spec(path)
    assert str(info.value) == f"{path}: {said}" and info.value.exit_code == 2


def test_a_spec_under_its_old_file_name_is_refused_naming_the_new_one(tmp_path, bfcl_dir):
    old = _spec(tmp_path, bfcl_dir, '[[config]]\nname = "plain"\nplain = true\n').rename(tmp_path / "levers.toml")
    with pytest.raises(OldSpellingError) as info:
        load_study_spec(old)
    assert str(info.value) == f"{old}: levers.toml is a study spec's old name; rename the file study.toml"


def test_recorded_answers_are_scored_and_paired(tmp_path, bfcl_dir):
    spec = load_study_spec(_spec(tmp_path, bfcl_dir, '[[config]]\nname = "plain"\nplain = true\n'
                                 '[[config]]\nname = "planner"\n'))
    data = load_questions(spec)
    assert len(pending_pairs(spec, data.questions)) == 2 * len(data.questions)
    for i, q in enumerate(data.questions):
        gold = [example_call(g) for g in q.gold]
        right = json.dumps([{"name": c.name, "arguments": c.args} for c in gold])
        wrong = json.dumps([{"name": "nothing", "arguments": {}}])
        answer = right if i == 0 else "[]" if i == 1 else wrong
        append_trace(TraceRecord(id=f"p{i}", task_id=q.id, prompt_variant="plain", content=answer,
                                 finish_reason="stop", latency_ms=1000.0), spec.trace_path(spec.config[0]))
        plan = {"steps": [{"tool": c.name, "args": c.args} for c in gold]}
        append_trace(TraceRecord(id=f"q{i}", task_id=q.id, prompt_variant="full_steps", content=json.dumps(plan),
                                 finish_reason="stop", latency_ms=1500.0), spec.trace_path(spec.config[1]))
    assert pending_pairs(spec, data.questions) == []
    rows = {(r.config, r.scope): r for r in score_study(spec)}
    n = len(data.questions)
    plain, planner = rows["plain", "all"], rows["planner", "all"]
    assert plain.exact.k == 1 and planner.exact.k == n and planner.strict.k == n
    assert planner.paired_n == n and planner.exact_diff == pytest.approx((n - 1) / n, abs=1e-4)
    assert planner.latency_ratio == 1.5 and plain.exact_diff is None
    served = [q for q in data.questions if q.expect == "calls"]
    assert planner.served_declined.n == len(served) >= 2 and planner.served_declined.k == 0
    assert planner.calls_short.k == planner.calls_long.k == 0  # the gold's calls, as many as asked
    assert plain.served_declined.k == (data.questions[1].expect == "calls")  # "[]" for question 1
    asked = {q.id: len(q.gold) for q in served}
    short = sum(1 for i, q in enumerate(data.questions[1:], 1) if q.id in asked and (i == 1 or asked[q.id] > 1))
    assert plain.calls_short.k == short  # one wrong call where several were asked, or none
    assert plain.calls_long.k == 0 and plain.calls_short.k + plain.served_declined.k > 0


def test_a_row_with_its_own_limit_answers_the_first_questions_of_each_category(tmp_path, bfcl_dir):
    spec = load_study_spec(_spec(tmp_path, bfcl_dir, '[[config]]\nname = "plain"\nplain = true\n'
                                 '[[config]]\nname = "lever"\nlimit = 1\n'))
    data = load_questions(spec)
    asked = [q.id for q, c in pending_pairs(spec, data.questions) if c.name == "lever"]
    assert len(data.questions) > 1 and asked == [data.questions[0].id]


def _shared_questions(shared_dir: Path):
    more = load_bfcl(shared_dir / "data" / "bfcl-more", ["simple_python", "multiple", "irrelevance"])
    return [*more.questions, *load_bfcl(shared_dir / "data" / "bfcl", ["parallel_multiple"]).questions]


def test_every_bfcl_function_set_converts_to_a_closed_grammar(shared_dir):
    grammar = pytest.importorskip("llama_cpp.llama_grammar", reason="llama-cpp-python (the 'local' extra) is not installed")
    for q in _shared_questions(shared_dir)[::7]:
        text = grammar.json_schema_to_gbnf(json.dumps(plan_schema(q.catalog, "full_steps")))
        for p in q.functions:
            assert f'\\"{p.name}\\"' in text, (q.id, p.name)
        # every object with listed properties is closed: the converter's rule for free keys never appears
        assert "additional-kv" not in text, q.id


def _mcp_spec(tmp_path: Path, configs: str = '[[config]]\nname = "plain"\nplain = true\n') -> Path:
    root = Path(__file__).resolve().parents[3] / "eval"
    path = tmp_path / "study.toml"
    path.write_text(f'model = "m"\nlm = "sim:mid-tier"\ntasks = "{root}/tasks/mcp-servers.jsonl"\n'
                    f'catalog = "{root}/catalog/mcp-servers.json"\ncategories = ["single-action", "pack-chain", "gap"]\n'
                    f'limit = 3\n{configs}', encoding="utf-8")
    return path


def test_gold_tasks_become_questions_over_the_whole_catalog(tmp_path):
    spec = load_study_spec(_mcp_spec(tmp_path))
    data = load_questions(spec)
    assert [q.category for q in data.questions[:3]] == ["single-action", "pack-chain", "gap"]
    assert len(data.questions) == 9 and all(len(q.functions) == 37 for q in data.questions)
    gap = data.questions[2]
    assert gap.expect == "no_call" and score_calls(gap, []).exact and not score_calls(gap, [Call(name="read_graph")]).exact


def test_a_gold_task_fixes_the_values_it_names_and_leaves_the_rest_free(tmp_path):
    questions = {q.id: q for q in load_questions(load_study_spec(_mcp_spec(tmp_path))).questions}
    chain = questions["mcp-chain-01"]  # git_add(repo_path, files: any), then git_commit(repo_path, message)
    right = [Call(name="git_add", args={"repo_path": "/home/dev/billing-api", "files": ["NOTES.md"]}),
             Call(name="git_commit", args={"repo_path": "/home/dev/billing-api", "message": "docs: release notes for 2.4"})]
    assert score_calls(chain, right).exact
    assert not score_calls(chain, [right[0].model_copy(update={"args": {"repo_path": "/home/dev/billing-api"}}), right[1]]).exact
    assert not score_calls(chain, [right[1], right[0]]).exact  # a chain's order counts
    wrong_repo = right[1].model_copy(update={"args": {**right[1].args, "repo_path": "/srv/other"}})
    assert not score_calls(chain, [right[0], wrong_repo]).exact


def test_a_gold_task_alternative_counts_as_right():
    from helmdeck_dspy.catalog.models import load_catalog
    from helmdeck_dspy.bench.bfcl.gold_tasks import questions_from_tasks
    from helmdeck_dspy.tasks import load_tasks

    root = Path(__file__).resolve().parents[3] / "eval"
    task = next(t for t in load_tasks(path=root / "tasks" / "mcp-servers.jsonl") if t.alternatives)
    q = questions_from_tasks([task], load_catalog(root / "catalog" / "mcp-servers.json"))[0]
    alt = [Call(name=s.tool, args={k: v if v is not None else "x" for k, v in s.args.items()}) for s in task.alternatives[0]]
    assert score_calls(q, alt).exact


def test_a_gold_task_naming_a_tool_outside_the_catalog_is_refused():
    from helmdeck_dspy.catalog.models import RoutingGuide
    from helmdeck_dspy.errors import DataFileError
    from helmdeck_dspy.bench.bfcl.gold_tasks import questions_from_tasks
    from helmdeck_dspy.tasks import load_tasks

    catalog = load_catalog()
    tasks = [t for t in load_tasks("test") if t.steps][:1]
    with pytest.raises(DataFileError, match=tasks[0].steps[0].tool.replace(".", r"\.")):
        questions_from_tasks(tasks, RoutingGuide(packs=tuple(p for p in catalog.packs if p.name != tasks[0].steps[0].tool),
                                                 pipelines=catalog.pipelines))


def test_a_gold_task_run_has_plan_scores_and_a_pipeline_is_called_by_its_id(tmp_path):
    root = Path(__file__).resolve().parents[3] / "eval"
    path = tmp_path / "study.toml"
    path.write_text(f'model = "m"\nlm = "sim:mid-tier"\ntasks = "{root}/tasks/test.jsonl"\n'
                    f'catalog = "{root}/catalog/routing-guide.json"\ncategories = ["pipeline-direct"]\nlimit = 2\n'
                    '[[config]]\nname = "plain"\nplain = true\n[[config]]\nname = "planner"\n', encoding="utf-8")
    spec = load_study_spec(path)
    questions = load_questions(spec).questions
    assert all(p.id in plain_prompt(questions[0].intent, questions[0].catalog) for p in load_catalog().pipelines)
    for i, q in enumerate(questions):
        pipeline = q.gold[0].name
        plain = json.dumps([{"name": pipeline, "arguments": {}}] if i == 0 else [{"name": "video.narrate", "arguments": {}}])
        plan = json.dumps({"steps": [{"tool": "helmdeck__pipeline-run", "args": {"id": pipeline}}]})
        append_trace(TraceRecord(id=f"p{i}", task_id=q.id, prompt_variant="plain", content=plain, finish_reason="stop"),
                     spec.trace_path(spec.config[0]))
        append_trace(TraceRecord(id=f"q{i}", task_id=q.id, prompt_variant="full_steps", content=plan, finish_reason="stop"),
                     spec.trace_path(spec.config[1]))
    rows = {(r.config, r.scope): r for r in score_study(spec)}
    plain, planner = rows["plain", "all"], rows["planner", "all"]
    assert plain.exact.k == 1 and planner.exact.k == 2
    assert planner.plan_score == 1.0 and plain.plan_score < 1.0 and planner.plan_score_diff > 0
    from helmdeck_dspy.bench.study.report import write_study

    assert [p.name for p in write_study(spec, score_study(spec))] == ["table.md", "table.json", "exact.png",
                                                                       "plan_score.png"]


def test_a_row_with_a_retired_lever_loads_but_makes_no_call(tmp_path, bfcl_dir):
    rows = ('[[config]]\nname = "plain"\nplain = true\n[[config]]\nname = "worded"\ninstructions = "words.md"\n'
            '[[config]]\nname = "last"\nfit_last = true\n[[config]]\nname = "coerce"\ncatalog_fitting = false\n'
            '[[config]]\nname = "today"\ncatalog_fitting = false\ncoerce_args = false\n[[config]]\nname = "off"\n'
            'fit_last = false\n[[config]]\nname = "decide"\nstrategy = "decide"\n'
            '[[config]]\nname = "continued"\nrecheck_form = "continued"\n')
    spec = load_study_spec(_spec(tmp_path, bfcl_dir, rows))
    by_name = {c.name: c for c in spec.config}
    assert by_name["worded"].retired == ("instructions",) and by_name["last"].retired == ("fit_last",)
    assert by_name["decide"].retired == ("strategy=decide",)  # a retired strategy: its answers re-score
    assert by_name["continued"].retired == ("recheck_form",)
    assert by_name["off"].retired == () and by_name["today"].preset == "before-issue-22"
    assert by_name["coerce"].preset is None  # a mix of switches no preset reproduces
    pending = {c.name for _, c in pending_pairs(spec, load_questions(spec).questions)}
    assert pending == {"plain", "today", "off"}


def test_a_config_program_file_is_found_beside_the_spec(tmp_path, bfcl_dir):
    row = '[[config]]\nname = "plain"\nplain = true\n[[config]]\nname = "knn"\nprogram = "programs/knn.json"\n'
    with pytest.raises(StudySpecError, match="config knn: program file .*programs/knn.json not found"):
        load_study_spec(_spec(tmp_path, bfcl_dir, row))
    (tmp_path / "programs").mkdir()
    (tmp_path / "programs" / "knn.json").write_text("{}", encoding="utf-8")
    spec = load_study_spec(_spec(tmp_path, bfcl_dir, row + '[[config]]\nname = "t"\nprogram = "tier:A"\n'))
    assert [spec.program_choice(c) for c in spec.config] == [None, str(tmp_path / "programs" / "knn.json"), "tier:A"]


def test_a_config_changes_budget_fields_for_its_model_only(tmp_path, bfcl_dir):
    from helmdeck_dspy.budgets import load_budget_table

    row = '[[config]]\nname = "plain"\nplain = true\n[[config]]\nname = "small"\nbudget = {max_catalog_bytes = 5000}\n'
    spec = load_study_spec(_spec(tmp_path, bfcl_dir, row))
    table = load_budget_table()
    model = "local/qwen2.5-coder-1.5b-instruct"
    changed = table.changed_for(model, spec.config[1].budget)
    before, after = table.lookup(model), changed.lookup(model)
    assert after.max_catalog_bytes == 5000 and before.max_catalog_bytes == 10000
    assert after.model_dump(exclude={"max_catalog_bytes", "source", "matched"}) == before.model_dump(
        exclude={"max_catalog_bytes", "source", "matched"})
    assert changed.lookup("local/qwen2.5-coder-0.5b-instruct") == table.lookup("local/qwen2.5-coder-0.5b-instruct")
    for bad, message in (('{max_catalog_byte = 5000}', "not budget fields: \\['max_catalog_byte'\\]"),
                         ('{max_catalog_bytes = -1}', "greater than or equal to 0")):
        with pytest.raises(StudySpecError, match=message):
            load_study_spec(_spec(tmp_path, bfcl_dir, row.replace("{max_catalog_bytes = 5000}", bad)))


def test_an_answers_from_row_makes_no_call_and_re_guards_the_other_rows_answers(tmp_path):
    root = Path(__file__).resolve().parents[3] / "eval"
    path = tmp_path / "study.toml"
    rows = ('[[config]]\nname = "plain"\nplain = true\n[[config]]\nname = "planner"\n'
            '[[config]]\nname = "chains"\nanswers_from = "planner"\npipeline_chains = true\n')
    path.write_text(f'model = "m"\nlm = "sim:mid-tier"\ntasks = "{root}/tasks/test.jsonl"\n'
                    f'catalog = "{root}/catalog/routing-guide.json"\ncategories = ["supersedes"]\nlimit = 1\n{rows}',
                    encoding="utf-8")
    for bad in ('"plain"', '"chains"', '"nope"'):
        path.write_text(path.read_text().replace('answers_from = "planner"', f"answers_from = {bad}"), encoding="utf-8")
        with pytest.raises(StudySpecError, match=f"config chains: answers_from {bad.strip(chr(34))!r}"):
            load_study_spec(path)
        path.write_text(path.read_text().replace(f"answers_from = {bad}", 'answers_from = "planner"'), encoding="utf-8")
    spec = load_study_spec(path)
    (q,) = load_questions(spec).questions  # super-004: repo.fetch then podcast.generate is builtin.repo-readme-podcast
    planner, chains = spec.config[1], spec.config[2]
    assert spec.trace_path(chains) == spec.trace_path(planner)
    assert [c.name for _, c in pending_pairs(spec, load_questions(spec).questions)] == ["plain", "planner"]
    plan = {"steps": [{"tool": "repo.fetch", "args": {}}, {"tool": "podcast.generate", "args": {}}]}
    append_trace(TraceRecord(id="q0", task_id=q.id, prompt_variant="full_steps", content=json.dumps(plan),
                             finish_reason="stop"), spec.trace_path(planner))
    scored = {r.config: r for r in score_study(spec) if r.scope == "all"}
    assert scored["planner"].exact.k == 0 and scored["chains"].exact.k == 1 and scored["chains"].plan_score == 1.0


def test_a_config_plans_over_its_own_catalog_file(tmp_path, bfcl_dir):
    root = Path(__file__).resolve().parents[3] / "eval"
    row = '[[config]]\nname = "plain"\nplain = true\n[[config]]\nname = "own"\ncatalog = "mine.json"\n'
    with pytest.raises(StudySpecError, match="config own: catalog 'mine.json' needs gold tasks"):
        load_study_spec(_spec(tmp_path, bfcl_dir, row))
    path = tmp_path / "study.toml"
    path.write_text(f'model = "m"\nlm = "sim:mid-tier"\ntasks = "{root}/tasks/test.jsonl"\n'
                    f'catalog = "{root}/catalog/routing-guide.json"\ncategories = ["supersedes"]\nlimit = 1\n{row}'
                    '[[config]]\nname = "again"\nanswers_from = "own"\n', encoding="utf-8")
    with pytest.raises(StudySpecError, match="needs gold tasks and a file beside the spec"):
        load_study_spec(path)
    data = json.loads((root / "catalog" / "routing-guide.json").read_text(encoding="utf-8"))
    data["pipelines"][0]["metadata"]["steps"] = [{"pack": "content.ground"}, {"pack": "slides.render"}]
    (tmp_path / "mine.json").write_text(json.dumps(data), encoding="utf-8")
    spec = load_study_spec(path)
    plain, own, again = spec.config
    assert spec.catalog_of(plain) is None
    mine = spec.catalog_of(own)
    assert mine is spec.catalog_of(again) and mine.pipelines[0].metadata.steps[0].pack == "content.ground"
    assert '"steps":[{"pack":"content.ground"},{"pack":"slides.render"}]' in mine.rendered


def test_a_test_half_starts_after_the_dev_half(tmp_path, bfcl_dir):
    dev = load_questions(load_study_spec(_spec(tmp_path, bfcl_dir, '[[config]]\nname = "plain"\nplain = true\n')))
    (tmp_path / "t").mkdir()
    body = (tmp_path / "study.toml").read_text().replace("limit = 5", "limit = 1\nstart = 1")
    (tmp_path / "t" / "study.toml").write_text(body)
    test = load_questions(load_study_spec(tmp_path / "t" / "study.toml"))
    assert len(dev.questions) > 1 and [q.id for q in test.questions] == [dev.questions[1].id]


def test_a_rechecked_request_costs_both_its_calls(tmp_path):
    from helmdeck_dspy.bench.bfcl.plans import request_records

    path = tmp_path / "shipped.jsonl"
    stamp = {"strategy": "plain", "spec_sha": "narrowed"}
    rows = [("old", "t1", None, 9000.0, None),  # an earlier request of t1, asked again later
            ("a", "t1", {"rechecked": stamp}, 3000.0, None),  # declined first call
            ("b", "t1", {"rechecked": stamp}, 20000.0, None),  # its recheck: the answer
            ("c", "t2", None, 4000.0, None),
            ("d", "t3", None, 1.0, "timeout")]  # a transport failure: no answer
    for rid, task, run, ms, error in rows:
        append_trace(TraceRecord(id=rid, task_id=task, prompt_variant="full_steps", content="[]", run=run,
                                 finish_reason="stop", latency_ms=ms, prompt_tokens=100, error=error), path)
    requests = request_records(path)
    assert {t: [r.id for r in calls] for t, calls in requests.items()} == {"t1": ["a", "b"], "t2": ["c"]}
