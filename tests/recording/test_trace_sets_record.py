"""traces record: the planner over gold tasks with any LM spec, every exchange recorded."""

from __future__ import annotations

import json

from click.testing import CliRunner

from helmdeck_dspy.cli.app import cli
from helmdeck_dspy.planning.options import PlannerOptions
from helmdeck_dspy.recording.trace_sets import partial_path, record
from helmdeck_dspy.tasks import load_tasks
from helmdeck_dspy.traces.io import read_jsonl_traces
from helmdeck_dspy.traces.record import partial_header


def test_record_with_a_sim_spec_then_replay_it(tmp_path):
    tasks = load_tasks("dev")[:4]
    first = tmp_path / "first.jsonl"
    n = record("openrouter/deepseek/deepseek-v3.2", "sim:mid-tier", tasks, first, variants=("full_steps",))
    recs = [r for r in read_jsonl_traces(first) if r.call == "plan"]
    assert n == 4 and [r.task_id for r in recs] == [t.id for t in tasks]
    assert {r.source for r in recs} == {"sim:mid-tier"} and {r.tier for r in recs} == {"B"}
    again = tmp_path / "again.jsonl"
    record("openrouter/deepseek/deepseek-v3.2", f"replay:{first}", tasks, again, variants=("full_steps",))
    replayed = [r for r in read_jsonl_traces(again) if r.call == "plan"]
    assert {r.source for r in replayed} == {"replay"}
    assert [r.content for r in replayed] == [r.content for r in recs]


def test_record_plans_with_the_options_it_is_given(tmp_path):
    tasks = load_tasks("dev")[:2]
    out = tmp_path / "capped.jsonl"
    options = PlannerOptions(max_tokens=321, program="bare", record_path=tmp_path / "ignored.jsonl")
    record("openrouter/deepseek/deepseek-v3.2", "sim:mid-tier", tasks, out, options=options, variants=("full_steps",))
    recs = [r for r in read_jsonl_traces(out) if r.call == "plan"]
    assert len(recs) == 2 and {r.max_tokens for r in recs} == {321}
    assert {r.run["program"]["kind"] for r in recs} == {"bare"}
    assert not (tmp_path / "ignored.jsonl").exists()  # the recording fields are the run's own


def test_cli_record(tmp_path):
    out = tmp_path / "r.jsonl"
    result = CliRunner().invoke(cli, ["traces", "record", "-m", "anthropic/claude-sonnet-4-6", "--lm", "sim:frontier-like",
                                      "--n", "3", "--variant", "single_pick", "--out", str(out)])
    assert result.exit_code == 0 and "wrote 3 plan records" in result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["prompt_variant"] for r in rows] == ["single_pick"] * 3


# ------------------------------------------------------------------ recording live models

import pytest  # noqa: E402

from tests.fault_server import FaultServer, ok  # noqa: E402

LIVE_PLAN = json.dumps({
    "steps": [{"order": 1, "tool": "blog.rewrite_for_audience", "args": {}, "rationale": "fits"}],
    "complexity": "single-action", "more_steps_likely": False, "reasoning": "one pack does it",
})
MODEL = "openai/recorded-model"  # not in the table: the Tier C fallback (single_pick, filter allowed)


def _record_live(server, tasks, out, program=None, lm=MODEL, **kw):
    options = PlannerOptions(api_base=server.url, program=program)
    return record(MODEL, lm, tasks, out, options=options, variants=("single_pick",), **kw)


@pytest.fixture
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-recording")


def test_a_repeated_request_is_sent_again_never_answered_from_the_cache(tmp_path, api_key):
    tasks = load_tasks("dev")[:2]
    with FaultServer(ok(LIVE_PLAN)) as server:
        _record_live(server, tasks, tmp_path / "a.jsonl", temperature=0.0, seed=7)
        first = len(server.requests)
        _record_live(server, tasks, tmp_path / "b.jsonl", temperature=0.0, seed=7)
        assert len(server.requests) == 2 * first  # the identical second run reached the server again
    recs = [r for r in read_jsonl_traces(tmp_path / "b.jsonl") if r.call == "plan"]
    assert len(recs) == 2 and all(r.cache_hit is None and r.latency_ms > 1 for r in recs)
    assert {(r.temperature, r.seed) for r in recs} == {(0.0, 7)}
    body = server.requests[-1].body
    assert body["temperature"] == 0.0 and body["seed"] == 7


@pytest.mark.parametrize("lm", [MODEL, "llamacpp/m"])  # free answers; answers under a schema (a llama.cpp server)
def test_an_interrupted_record_resumes_without_repeating_a_call(tmp_path, api_key, lm):
    tasks = load_tasks("dev")[:5]
    out = tmp_path / "r.jsonl"
    calls = {"n": 0}

    def stop_after_two(_):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt

    with FaultServer(ok(LIVE_PLAN)) as server:
        with pytest.raises(KeyboardInterrupt):
            _record_live(server, tasks, out, progress=stop_after_two, temperature=0.0, lm=lm)
        answered = {r.task_id for r in read_jsonl_traces(out.with_name("r.jsonl.partial.jsonl")) if r.call == "plan"}
        before = len(server.requests)
        notes: list[str] = []
        n = _record_live(server, tasks, out, temperature=0.0, notify=notes.append, lm=lm)
        sent_again = [json.dumps(r.body) for r in server.requests[before:]]
    assert len(answered) == 2 and n == 5
    plan_requests = [b for b in sent_again if "USER REQUEST" in b]
    assert len(plan_requests) == 3  # only the three unanswered tasks went out again
    recs = [r for r in read_jsonl_traces(out) if r.call == "plan"]
    assert [r.task_id for r in recs] == [t.id for t in tasks]  # task order, one record each
    assert "2 request(s) already recorded" in notes[0]
    assert not out.with_name("r.jsonl.partial.jsonl").exists()


def interrupted(out):
    """Turn a finished recording into the partial file a run killed at its very end leaves."""
    partial_path(out).write_text(partial_header(out.name) + "\n" + out.read_text())
    out.unlink()


def test_a_changed_setting_is_a_new_request_on_resume(tmp_path, api_key):
    tasks = load_tasks("dev")[:2]
    out = tmp_path / "r.jsonl"
    with FaultServer(ok(LIVE_PLAN)) as server:
        _record_live(server, tasks, out, temperature=0.0)
        interrupted(out)
        before = len(server.requests)
        _record_live(server, tasks, out, temperature=0.5)
        assert len(server.requests) - before >= 2  # other settings: asked again


def test_a_program_file_is_the_same_request_however_its_path_is_spelled(tmp_path, api_key, monkeypatch):
    import shutil

    from helmdeck_dspy.io.resources import compiled_dir

    tasks = load_tasks("dev")[:2]
    out = tmp_path / "r.jsonl"
    shutil.copy(compiled_dir() / "tier_C" / "single_pick.json", tmp_path / "prog.json")
    monkeypatch.chdir(tmp_path)
    with FaultServer(ok(LIVE_PLAN)) as server:
        _record_live(server, tasks, out, temperature=0.0, program="prog.json")
        interrupted(out)
        before = len(server.requests)
        _record_live(server, tasks, out, temperature=0.0, program=str(tmp_path / "prog.json"))
        assert len(server.requests) == before  # the same file: nothing asked again
        interrupted(out)
        state = json.loads((tmp_path / "prog.json").read_text())
        state["plan"]["demos"] = state["plan"]["demos"][:1]
        (tmp_path / "prog.json").write_text(json.dumps(state))
        _record_live(server, tasks, out, temperature=0.0, program="prog.json")
        assert len(server.requests) - before >= 2  # another program: asked again


def test_concurrent_requests_are_written_in_task_order(tmp_path, api_key):
    tasks = load_tasks("dev")[:6]
    out = tmp_path / "r.jsonl"
    with FaultServer(ok(LIVE_PLAN, delay_s=0.05)) as server:
        n = _record_live(server, tasks, out, concurrency=3)
        assert len(server.requests) >= 6
    recs = [r for r in read_jsonl_traces(out) if r.call == "plan"]
    assert n == 6 and [r.task_id for r in recs] == [t.id for t in tasks]
    assert [r.id for r in read_jsonl_traces(out)] == sorted(r.id for r in read_jsonl_traces(out))


def test_a_failed_attempt_is_recorded_with_its_request_and_written_before_the_answer(tmp_path, api_key):
    from tests.fault_server import status

    tasks = load_tasks("dev")[:2]
    out = tmp_path / "r.jsonl"
    with FaultServer([status(503), ok(LIVE_PLAN)]) as server:  # a budget row without the filter call
        record("local/qwen2.5-coder-0.5b-instruct", MODEL, tasks, out, options=PlannerOptions(api_base=server.url),
               variants=("single_pick",), temperature=0.0, seed=3)
    recs = [r for r in read_jsonl_traces(out) if r.call == "plan"]
    first = [r for r in recs if r.task_id == tasks[0].id]
    assert [r.error is not None for r in first] == [True, False]  # the 503, then the retried answer
    assert {(r.temperature, r.seed) for r in first} == {(0.0, 3)}
    assert [r.task_id for r in recs] == [tasks[0].id, tasks[0].id, tasks[1].id]


def test_cli_timeout_and_retries_bound_each_recorded_request(tmp_path, api_key):
    from tests.fault_server import stall_headers

    out = tmp_path / "r.jsonl"
    with FaultServer(stall_headers()) as server:
        result = CliRunner().invoke(cli, [
            "traces", "record", "-m", "local/qwen2.5-coder-0.5b-instruct", "--lm", MODEL, "--api-base", server.url,
            "--n", "1", "--variant", "single_pick", "--timeout", "0.5", "--retries", "1", "--out", str(out)])
        assert result.exit_code == 1, result.output  # every request failed: not a finished recording
        assert len(server.requests) == 2  # the first attempt and one retry, no more
    assert not out.exists()
    recs = [r for r in read_jsonl_traces(out.with_name("r.jsonl.partial.jsonl")) if r.call == "plan"]
    # the attempt's deadline, or the HTTP client's own timeout of the same 0.5 s when it fires first
    # (on a loaded machine it can)
    assert len(recs) == 2 and all("0.5 s deadline" in r.error or "timed out" in r.error.lower() for r in recs), \
        [r.error for r in recs]
