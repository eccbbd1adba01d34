"""BFCL v4 multi_turn_base, executed over the BFCL package's own classes and checked by its own
checker (issue 55, item 4). Offline, no model: the package is the pinned one ``make bench-deps``
installs into .bench-deps/ (every test that needs it skips, with the reason, when it is absent)."""

from __future__ import annotations

import ast
import json
import sys
import warnings

import pytest

from helmdeck_dspy.bench.bfcl.schema import parameter_order
from helmdeck_dspy.bench.multi_turn import FROZEN, SPLITS, VERSION
from helmdeck_dspy.errors import BenchDependencyError
from helmdeck_dspy.planning.guards import GuardedStep
from tests.conftest import PROJECT_ROOT
from tests.bench.e2e.test_e2e import _LM  # a scripted LM that keeps every request's messages

SPEC = PROJECT_ROOT / "experiments" / "bfcl-multi" / "qwen2.5-coder-1.5b" / "study.toml"


@pytest.fixture(scope="module")
def questions():
    from helmdeck_dspy.bench.multi_turn.load import load_questions

    try:
        return load_questions()
    except BenchDependencyError as exc:
        pytest.skip(str(exc))


def _parse(text, question):
    """A ground-truth call string as (name, arguments), positional arguments named in document order."""
    node = ast.parse(text, mode="eval").body
    pack = {p.name: p for p in question.functions}[node.func.id]
    args = dict(zip(parameter_order(pack), (ast.literal_eval(a) for a in node.args)))
    return node.func.id, {**args, **{k.arg: ast.literal_eval(k.value) for k in node.keywords}}


def _run(question, turns):
    """Run ``turns`` (per turn, call strings) through the executor; the checker's input and the state."""
    from helmdeck_dspy.bench.multi_turn.check import call_string
    from helmdeck_dspy.bench.multi_turn.executor import ApiState

    state, answers = ApiState(question), []
    for calls in turns:
        parsed = [_parse(c, question) for c in calls]
        for name, args in parsed:
            state.execute(GuardedStep(order=1, tool=name, args=args))
        answers.append([[call_string(n, a) for n, a in parsed]] if parsed else [])
    return answers, state


def test_the_questions_load_from_the_pinned_package_in_two_frozen_halves(questions):
    from helmdeck_dspy.bench.multi_turn.load import digests, select_questions
    from helmdeck_dspy.bench.multi_turn.package import bfcl_package

    assert bfcl_package().version == VERSION and digests(bfcl_package().data_dir) == FROZEN
    assert [q.id for q in questions] == [f"multi_turn_base_{i}" for i in range(200)]
    dev, test = select_questions("dev"), select_questions("test")
    assert [q.index for q in dev] == list(SPLITS["dev"]) == list(range(100))
    assert [q.index for q in test] == list(range(100, 200)) and {q.split for q in test} == {"test"}
    assert [q.id for q in select_questions("test", ("multi_turn_base_150", "multi_turn_base_3"))] == ["multi_turn_base_150"]
    first = questions[0]
    assert first.involved_classes == ("TwitterAPI", "GorillaFileSystem") and len(first.turns) == 4
    names = [p.name for p in first.functions]
    assert names[0] == "authenticate_twitter" and "cd" in names and "cp" in names  # excluded_function is not read, as in BFCL
    assert all(q.turns and all(q.turns) and len(q.turns) == len(q.ground_truth) for q in questions)


def test_the_data_is_refused_when_it_differs_from_the_frozen_hashes(questions, monkeypatch):
    from helmdeck_dspy.bench.multi_turn import load
    from helmdeck_dspy.errors import BfclDataError

    monkeypatch.setitem(load.FROZEN, "dev", "0" * 64)
    load.load_questions.cache_clear()
    try:
        with pytest.raises(BfclDataError, match="differs from the frozen hashes in dev"):
            load.load_questions()
    finally:
        load.load_questions.cache_clear()


def test_a_missing_package_is_a_typed_error_and_exit_2(tmp_path, monkeypatch, capsys):
    from helmdeck_dspy.bench.multi_turn import load, package
    from helmdeck_dspy.bench.plan import load_plan, run_plan
    from helmdeck_dspy.cli.app import main

    monkeypatch.setenv(package.ENV_DIR, str(tmp_path / "none"))
    monkeypatch.setattr(sys, "path", [p for p in sys.path if "bfcl-eval" not in p])
    if package._installed_version(tmp_path / "none") is not None:
        pytest.skip("bfcl-eval is installed into the environment itself")
    package.bfcl_package.cache_clear()
    load.load_questions.cache_clear()
    try:
        with pytest.raises(BenchDependencyError, match="bfcl-eval==2026.3.23 is not installed.*make bench-deps"):
            package.bfcl_package()
        with pytest.raises(SystemExit) as exited:
            main(["bench", "study", str(SPEC), "--dry-run"])
        assert exited.value.code == 2 and "make bench-deps" in capsys.readouterr().err
        plan = tmp_path / "studies.toml"  # a plan goes on without the step, saying why
        plan.write_text(f'[[step]]\nspec = "{SPEC}"\n', encoding="utf-8")
        said: list[str] = []
        assert run_plan(load_plan(plan), dry_run=True, notify=said.append) == []
        assert "skipped: bfcl-eval==2026.3.23 is not installed" in said[0]
    finally:
        package.bfcl_package.cache_clear()
        load.load_questions.cache_clear()


def test_every_ground_truth_run_through_the_executor_passes_the_packages_checker(questions):
    from helmdeck_dspy.bench.multi_turn.check import check_run
    from helmdeck_dspy.bench.multi_turn.package import CHECKER_MODULE, UTILS_MODULE, bfcl_module

    checker, utils = bfcl_module(CHECKER_MODULE), bfcl_module(UTILS_MODULE)
    for q in questions:
        answers, state = _run(q, q.ground_truth)
        assert check_run(q, answers).valid, q.id
        # the executor's method calls leave the state the package's own executor leaves
        _, theirs = utils.execute_multi_turn_func_call([c for t in q.ground_truth for c in t], q.initial_config,
                                                       list(q.involved_classes), "test_state", q.id)
        assert checker.state_checker(state.instances, theirs)["valid"], q.id
        for key in [k for k in vars(utils) if k.startswith("test_state")]:
            del vars(utils)[key]
    assert not [k for k in vars(utils) if k.startswith("helmdeck_")]  # no check leaves instances behind


def test_a_wrong_call_sequence_fails_the_checker(questions):
    from helmdeck_dspy.bench.multi_turn.check import check_run

    q = questions[1]  # ls; cd + mv; cd + grep; tail (GorillaFileSystem)
    truth = [list(t) for t in q.ground_truth]
    moved_elsewhere = [truth[0], ["cd(folder='workspace')", "mv(source='log.txt',destination='old')"], *truth[2:]]
    verdict = check_run(q, _run(q, moved_elsewhere)[0])
    assert not verdict.valid and verdict.error_type == "multi_turn:instance_state_mismatch"
    no_listing = [["pwd()"], *truth[1:]]  # same state, but the listing the user asked for never came back
    verdict = check_run(q, _run(q, no_listing)[0])
    assert not verdict.valid and verdict.error_type == "multi_turn:execution_response_mismatch"
    verdict = check_run(q, _run(q, [truth[0], [], *truth[2:]])[0])
    assert not verdict.valid and verdict.error_type == "multi_turn:empty_turn_model_response"


def test_a_call_runs_as_a_method_call_with_bfcls_result_and_error_texts(questions):
    from helmdeck_dspy.bench.multi_turn.check import call_string
    from helmdeck_dspy.bench.multi_turn.executor import ApiState

    state = ApiState(questions[1])
    listing = state.execute(GuardedStep(order=1, tool="ls", args={"a": True}))
    assert not listing.error and json.loads(listing.text) == {"current_directory_content": ["workspace"]}
    missing = state.execute(GuardedStep(order=1, tool="cd", args={"folder": "nowhere"}))
    assert missing.error and "error" in json.loads(missing.text)  # the API's own error report
    wrong = state.execute(GuardedStep(order=1, tool="cd", args={"path": "workspace"}))
    assert wrong.error and wrong.text.startswith("Error during execution: ")
    assert state.execute(GuardedStep(order=1, tool="__import__", args={"name": "os"})).error  # only offered functions
    assert call_string("mv", {"source": "a.txt", "destination": "b"}) == "mv(source='a.txt',destination='b')"
    assert call_string("open", {"not a name": 1}) is None and call_string("exec()", {}) is None


def test_the_planner_gets_the_earlier_turns_as_context():
    from helmdeck_dspy.bench.e2e.run import StepRecord
    from helmdeck_dspy.bench.multi_turn.run import CONTEXT_CHARS, TurnRecord, earlier_turns

    assert earlier_turns([]) is None
    one = TurnRecord(request="List the files.", stopped_because="done",
                     steps=[StepRecord(tool="ls", args={"a": True}, result="x" * 1000)])
    text = earlier_turns([one]) or ""
    assert "Request: List the files." in text and '"name": "ls"' in text and "x" * 201 not in text
    many = earlier_turns([one.model_copy(update={"request": f"request {i}"}) for i in range(40)]) or ""
    assert len(many) <= CONTEXT_CHARS + 200 and "request 39" in many and "request 0\n" not in many


def _calls(*calls):
    return json.dumps([{"name": n, "arguments": a} for n, a in calls])


TURN_CALLS = [[("ls", {"a": True})], [("cd", {"folder": "workspace"}), ("mv", {"source": "log.txt", "destination": "archive"})],
              [("cd", {"folder": "archive"}), ("grep", {"file_name": "log.txt", "pattern": "Error"})],
              [("tail", {"file_name": "log.txt", "lines": 20})]]


def test_the_model_alone_keeps_one_conversation_across_the_turns(questions):
    from helmdeck_dspy.bench.multi_turn.alone import TurnAlone
    from helmdeck_dspy.bench.multi_turn.run import run_question
    from helmdeck_dspy.budgets import budget_for, load_budget_table

    lm = _LM(*[a for calls in TURN_CALLS for a in (_calls(*calls), "[]")])
    budget = budget_for("local/qwen2.5-coder-1.5b-instruct", load_budget_table(None))
    result = run_question(questions[1], "alone", lambda catalog: TurnAlone(lm, catalog, budget, {"temperature": 0.0}),
                          model="m", lm="scripted", max_steps=20, time_cap_s=60)
    assert result.success and result.error_type is None and result.calls == 6 and result.plan_calls == 8
    last = lm.requests[-1]
    assert [r for r, _ in last] == ["user", "assistant"] * 7 + ["user"] and last[0][1].startswith("Functions:")
    assert last[2][1].startswith("Results of those calls:") and last[3][1] == "[]"  # the first turn ends with []
    assert last[4][1].startswith("Question: Go to workspace directory") and "Functions:" not in last[4][1]
    assert last[12][1].startswith("Question: Finally, show the last 20 lines")
    assert [len(t.answers) for t in result.turns] == [2, 2, 2, 2] and result.turns[1].answer_of_step == [0, 0]


def test_a_bare_conversation_keeps_each_answer_as_its_calls_in_one_line(questions):
    from helmdeck_dspy.bench.multi_turn.alone import TurnAlone
    from helmdeck_dspy.bench.multi_turn.run import run_question
    from helmdeck_dspy.budgets import budget_for, load_budget_table

    fenced = "```json\n" + json.dumps([{"name": "ls", "arguments": {"a": True}}], indent=2) + "\n```\nThat lists it."
    budget = budget_for("local/qwen2.5-coder-1.5b-instruct", load_budget_table(None))
    for bare, kept in ((True, _calls(("ls", {"a": True}))), (False, fenced)):
        lm = _LM(fenced, "[]", *["[]"] * 3)
        run_question(questions[1], "alone", lambda catalog: TurnAlone(lm, catalog, budget, {}, bare=bare),
                     model="m", lm="scripted", max_steps=20, time_cap_s=60)
        assert lm.requests[1][1] == ("assistant", kept)  # what the model sees of its own first answer


def test_a_bare_conversation_is_refused_outside_a_multi_turn_study(tmp_path):
    from helmdeck_dspy.bench.study.spec import StudySpecError, load_study_spec

    spec = tmp_path / "study.toml"
    spec.write_text('model = "m/x"\nlm = "sim:x"\nbaseline = "alone"\n[e2e]\n[[config]]\nname = "alone"\nplain = true\n'
                    'loop = "chat-bare"\n', encoding="utf-8")
    with pytest.raises(StudySpecError, match=r"chat-bare: \[multi_turn\] only"):
        load_study_spec(spec)


def test_turns_passed_counts_the_leading_turns_the_checker_passes(questions):
    from helmdeck_dspy.bench.multi_turn.check import turns_passed

    q = questions[1]
    truth = [list(t) for t in q.ground_truth]
    assert turns_passed(q, _run(q, truth)[0]) == 4
    assert turns_passed(q, _run(q, [truth[0], ["cd(folder='workspace')", "mv(source='log.txt',destination='old')"],
                                    *truth[2:]])[0]) == 1  # the second turn leaves another state: the later ones do not count
    assert turns_passed(q, _run(q, [[], *truth[1:]])[0]) == 0
    assert turns_passed(q, _run(q, truth[:2])[0]) == 2  # a run cut short: the turns it has


def test_the_planner_in_the_model_alones_conversation_plans_first_and_checks_every_later_answer(questions, tmp_path):
    """The same conversation as the model alone's; the planner's first plan shown as the assistant's answer."""
    from helmdeck_dspy.bench.multi_turn.alone import TurnChecked
    from helmdeck_dspy.bench.multi_turn.run import run_question
    from helmdeck_dspy.planning.planner import Planner
    from tests.planning.test_planner import replay_file

    tail = [("tail", {"file_name": "log.txt", "lines": "20"})]  # a number as text: the planner's checks coerce it
    answers = [_calls(*TURN_CALLS[0]), "[]", _calls(*TURN_CALLS[1]), "[]", _calls(*TURN_CALLS[2]), "[]", _calls(*tail), "[]"]
    path = replay_file(tmp_path, *answers)
    made = []

    def agent(catalog):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            planner = Planner.for_model("local/qwen2.5-coder-1.5b-instruct", lm=f"replay:{path}", catalog=catalog,
                                        use_filter=False, cache=False, answer_strategy="plain", recheck_top=0)
        made.append(TurnChecked(planner.lm, catalog, planner.budget, {"temperature": 0.0}, planner))
        return made[0]

    result = run_question(questions[1], "planner", agent, model="m", lm="replay", max_steps=20, time_cap_s=60)
    assert result.success and result.turns_passed == 4 and result.question_turns == 4
    assert result.turns[3].steps[0].args == {"file_name": "log.txt", "lines": 20}
    conversation = made[0].messages
    assert [m["role"] for m in conversation] == ["user", "assistant"] * 8
    assert conversation[0]["content"].startswith("Functions:") and json.loads(conversation[1]["content"]) == [
        {"name": "ls", "arguments": {"a": True}}]  # the planner's plan, shown as the model's own answer
    assert conversation[4]["content"].startswith("Question: Go to workspace directory")
    assert made[0].turns[0] == {"planner": ["ls"], "failure": None} and "content" in made[0].turns[1]


def test_a_turn_at_the_step_limit_force_terminates_the_question(questions):
    from helmdeck_dspy.bench.multi_turn.alone import TurnAlone
    from helmdeck_dspy.bench.multi_turn.run import run_question
    from helmdeck_dspy.budgets import budget_for, load_budget_table

    lm = _LM(_calls(("ls", {"a": True}), ("pwd", {}), ("ls", {})))
    budget = budget_for("local/qwen2.5-coder-1.5b-instruct", load_budget_table(None))
    result = run_question(questions[1], "alone", lambda catalog: TurnAlone(lm, catalog, budget, {}),
                          model="m", lm="scripted", max_steps=2, time_cap_s=60)
    assert not result.success and result.error_type == "multi_turn:force_terminated"
    assert result.stopped_because == "force_terminated" and len(result.turns) == 1


def test_a_multi_turn_study_runs_its_arms_pairs_them_and_resumes(questions, tmp_path):
    """A REPLAYED LM (every arm's answers scripted in one file); the classes and the checker are the package's."""
    from helmdeck_dspy.bench.study.flow import left, run_study
    from helmdeck_dspy.bench.study.spec import load_study_spec
    from tests.planning.test_planner import replay_file

    alone = [a for calls in TURN_CALLS for a in (_calls(*calls), "[]")]
    planner = [_calls(*calls) for calls in TURN_CALLS]  # one plan per turn (full_steps)
    conversation = alone[:3] + ["[]"] + alone[4:]  # the planner's first plan, then the conversation's answers
    replay = replay_file(tmp_path, *alone, *planner, *conversation)
    spec_path = tmp_path / "study.toml"
    spec_path.write_text(SPEC.read_text().replace('lm = "local:qwen2.5-coder-1.5b"', f'lm = "replay:{replay}"')
                         .replace('split = "dev"', 'split = "dev"\nonly = ["multi_turn_base_1"]'), encoding="utf-8")
    spec = load_study_spec(spec_path)
    arms = ("alone", "planner", "planner-conversation")
    assert left(spec) == ([], dict.fromkeys(arms, 1))
    report = run_study(spec)
    assert report.made == dict.fromkeys(arms, 1)
    for arm in arms:
        (line,) = (tmp_path / f"{arm}.jsonl").read_text().splitlines()
        result = json.loads(line)
        assert result["success"] and result["package"] == f"bfcl-eval=={VERSION}" and result["data_sha256"] == FROZEN["dev"]
        assert result["turns_passed"] == result["question_turns"] == 4
    rows = {(r.config, r.scope): r for r in report.rows}
    assert set(rows) == {(arm, "all") for arm in arms}
    assert rows["planner", "all"].exact.k == 1 and rows["planner", "all"].paired_n == 1
    assert rows["planner", "all"].exact_diff == 0 and rows["planner-conversation", "all"].runs.turns_passed == 4
    table = (tmp_path / "table.md").read_text()
    assert "BFCL multi-turn study" in table and "bfcl-eval==2026.3.23" in table and "done vs baseline" in table
    assert "| planner-conversation | 1 | 1 | 4 of 4 (100.0%) |" in table
    assert run_study(spec).made == dict.fromkeys(arms, 0)  # resumed: nothing left


def test_the_committed_spec_runs_the_dev_half_under_its_arms(questions):
    from helmdeck_dspy.bench.study.flow import left
    from helmdeck_dspy.bench.study.spec import load_study_spec

    spec = load_study_spec(SPEC)
    assert spec.multi_turn is not None and spec.multi_turn.split == "dev" and spec.baseline == "alone"
    planner = (False, {"fill_placeholders": True, "recheck_top": 10})
    assert {c.name: (c.plain, c.options, c.loop) for c in spec.config} == {
        "alone": (True, {}, "replan"), "planner": (*planner, "replan"), "planner-conversation": (*planner, "chat")}
    compiles, todo = left(spec)  # the run is resumable: what is answered plus what is left is the whole dev half
    answered = {c.name: sum(1 for _ in spec.trace_path(c).open()) if spec.trace_path(c).exists() else 0
                for c in spec.config}
    assert compiles == [] and {name: todo[name] + answered[name] for name in todo} == {
        "alone": 100, "planner": 100, "planner-conversation": 100}
