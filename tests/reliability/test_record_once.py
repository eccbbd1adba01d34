"""Every record exactly once (issue 40, item 4), as a user runs ``traces record``: a second run onto
the same ``--out`` while one is going is refused (exit 2, naming the lock) and the first writes each
record once; a run in which every request failed exits non-zero and is not marked complete."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from helmdeck_dspy.traces.io import read_jsonl_traces
from helmdeck_dspy.traces.record import partial_header
from tests.fault_server import FaultServer, ok, status
from tests.reliability.conftest import clean_env

MODEL = "openai/recorded-model"
PLAN = '{"steps": [{"order": 1, "tool": "blog.rewrite_for_audience", "args": {}, "rationale": "r"}]}'


def _record(home: Path, url: str, out: Path, n: int = 3, *extra: str) -> subprocess.Popen[str]:
    env = clean_env(home, OPENAI_API_KEY="sk-test-record-once")
    home.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        [sys.executable, "-c", "from helmdeck_dspy.cli import main; main()", "traces", "record", "--model", MODEL,
         "--api-base", url, "--variant", "full_steps", "--n", str(n), "--retries", "0", "--timeout", "30",
         "--no-progress", "--out", str(out), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=home.parent)


def test_a_second_run_onto_the_same_out_is_refused_and_nothing_is_lost_or_repeated(tmp_path):
    out = tmp_path / "t.jsonl"
    with FaultServer([ok(PLAN, delay_s=1.0)]) as server:
        first = _record(tmp_path / "home", server.url, out)
        deadline = time.monotonic() + 60
        while not server.requests and time.monotonic() < deadline:  # the first run is under way
            time.sleep(0.05)
        second = _record(tmp_path / "home", server.url, out)
        second_out, second_err = second.communicate(timeout=120)
        first_out, first_err = first.communicate(timeout=120)
    assert second.returncode == 2, second_err
    assert "lock" in second_err and str(out) in second_err
    assert first.returncode == 0, first_err
    plans = [r for r in read_jsonl_traces(out) if r.call == "plan"]
    assert len(plans) == 3 and len({r.task_id for r in plans}) == 3


def test_a_run_where_every_request_failed_exits_non_zero_and_is_not_complete(tmp_path):
    out = tmp_path / "t.jsonl"
    with FaultServer([status(401, message="invalid api key")]) as server:
        first = _record(tmp_path / "home", server.url, out, n=2)
        _, err = first.communicate(timeout=120)
        sent_first = len(server.requests)
        again = _record(tmp_path / "home", server.url, out, n=2)
        _, err_again = again.communicate(timeout=120)
        sent_again = len(server.requests) - sent_first
    assert first.returncode == 1, err
    assert "failed" in err
    assert sent_again == sent_first  # not marked complete: the re-run asks again


def _text(body: dict) -> str:
    return " ".join(m["content"] for m in body.get("messages", []) if isinstance(m.get("content"), str))


def test_a_resumed_recording_with_the_llm_filter_sends_each_request_once(tmp_path):
    """A model whose budget row runs the LLM filter: after an interruption (the finished file put back
    as the partial file a killed run leaves), the requests recorded are not sent again, and the
    finished file holds each plan once."""
    out = tmp_path / "t.jsonl"
    with FaultServer([ok(PLAN)]) as server:
        first = _record(tmp_path / "home", server.url, out, n=2)
        _, err = first.communicate(timeout=120)
        assert first.returncode == 0, err
        records = list(read_jsonl_traces(out))
        assert {r.call for r in records} == {"plan", "filter"}  # the filter ran for these requests
        (tmp_path / "t.jsonl.partial.jsonl").write_text(partial_header(out.name) + "\n" + out.read_text())
        out.unlink()  # as a run killed after two requests leaves it
        recorded = {r.intent for r in records}
        assert all(any(i in _text(r.body) for r in server.requests) for i in recorded)  # findable as sent
        sent_first = len(server.requests)
        again = _record(tmp_path / "home", server.url, out, n=4)
        _, err = again.communicate(timeout=120)
        resent = [r for r in server.requests[sent_first:] if any(i in _text(r.body) for i in recorded)]
    assert again.returncode == 0, err
    assert len(server.requests) > sent_first and not resent  # only the two new requests were sent
    plans = [r for r in read_jsonl_traces(out) if r.call == "plan"]
    assert len(plans) == 4 and len({r.task_id for r in plans}) == 4


@pytest.mark.parametrize("extra", [(), ("--no-resume",)], ids=["resume", "no-resume"])
def test_a_file_the_user_put_at_the_partial_path_is_neither_read_nor_deleted(extra, tmp_path):
    out = tmp_path / "t.jsonl"
    mine = tmp_path / "t.jsonl.partial.jsonl"
    mine.write_text("my own notes, not a recording\n")
    with FaultServer([ok(PLAN)]) as server:
        run = _record(tmp_path / "home", server.url, out, 1, *extra)
        _, err = run.communicate(timeout=120)
        sent = len(server.requests)
    assert run.returncode == 2, err
    assert str(mine) in err and "not written by" in err
    assert mine.read_text() == "my own notes, not a recording\n" and sent == 0 and not out.exists()


# ------------------------------------------------------------------ issue 52, item 6: files and settings

NO_FILTER = "local/qwen2.5-coder-0.5b-instruct"
"""A budget row without the LLM filter: one request is one call (the LM is ``--lm MODEL``)."""


def _record_args(url: str, out: Path, *extra: str) -> list[str]:
    return ["traces", "record", "--model", MODEL, "--api-base", url, "--variant", "full_steps", "--n", "2",
            "--retries", "0", "--timeout", "30", "--no-progress", "--out", str(out), *extra]


def _run(home: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    home.mkdir(parents=True, exist_ok=True)
    return subprocess.run([sys.executable, "-c", "from helmdeck_dspy.cli import main; main()", *args],
                          capture_output=True, text=True, timeout=180,
                          env=clean_env(home, OPENAI_API_KEY="sk-test-record-once"), cwd=home.parent)


def test_a_file_of_the_users_at_the_lock_path_is_neither_used_nor_deleted(tmp_path):
    out = tmp_path / "t.jsonl"
    mine = tmp_path / "t.jsonl.lock"
    mine.write_text("my own notes, not a lock\n")
    with FaultServer([ok(PLAN)]) as server:
        done = _run(tmp_path / "home", _record_args(server.url, out))
        sent = len(server.requests)
    assert done.returncode == 2, done.stderr
    assert str(mine) in done.stderr and "not written by" in done.stderr
    assert mine.read_text() == "my own notes, not a lock\n" and sent == 0 and not out.exists()


def test_a_lock_a_killed_run_left_is_taken_over_and_removed(tmp_path):
    out = tmp_path / "t.jsonl"
    with FaultServer([ok(PLAN)]) as server:
        first = _run(tmp_path / "home", _record_args(server.url, out))
        assert first.returncode == 0, first.stderr
        from helmdeck_dspy.io.atomic import lock_header

        (tmp_path / "t.jsonl.lock").write_text(lock_header(out.name, 999_999_999) + "\n")  # its writer is gone
        again = _run(tmp_path / "home", _record_args(server.url, out, "--force"))
    assert again.returncode == 0, again.stderr
    assert not (tmp_path / "t.jsonl.lock").exists()


def test_a_resumed_recording_keeps_the_filter_records_it_saved(tmp_path):
    """The finished file put back as the partial file a run killed at its very end leaves: the
    resumed run sends nothing and writes every record it had, the filter's calls included, each
    request's filter call before its plan."""
    out = tmp_path / "t.jsonl"
    with FaultServer([ok(PLAN)]) as server:
        first = _run(tmp_path / "home", _record_args(server.url, out))
        assert first.returncode == 0, first.stderr
        before = [(r.call, r.task_id) for r in read_jsonl_traces(out)]
        assert {c for c, _ in before} == {"plan", "filter"}
        (tmp_path / "t.jsonl.partial.jsonl").write_text(partial_header(out.name) + "\n" + out.read_text())
        out.unlink()
        sent = len(server.requests)
        again = _run(tmp_path / "home", _record_args(server.url, out))
        resent = len(server.requests) - sent
    assert again.returncode == 0, again.stderr
    after = [(r.call, r.task_id) for r in read_jsonl_traces(out)]
    assert resent == 0 and sorted(after) == sorted(before)
    for task in {t for _, t in after}:
        assert [c for c, t in after if t == task] == ["filter", "plan"]


@pytest.mark.parametrize(("extra", "named"), [(("--n", "3"), "--n"), (("--variant", "single_pick"), "--variant"),
                                              (("--model", "openai/another-model"), "--model"),
                                              (("--temperature", "0.5"), "--temperature")],
                         ids=["n", "variant", "model", "temperature"])
def test_a_rerun_with_other_settings_is_refused_naming_the_difference(extra, named, tmp_path):
    out = tmp_path / "t.jsonl"
    with FaultServer([ok(PLAN)]) as server:
        first = _run(tmp_path / "home", _record_args(server.url, out))
        assert first.returncode == 0, first.stderr
        finished = out.read_bytes()
        sent = len(server.requests)
        same = _run(tmp_path / "home", _record_args(server.url, out))
        other = _run(tmp_path / "home", _record_args(server.url, out, *extra))
        resent = len(server.requests) - sent
    assert same.returncode == 0 and "is complete" in same.stdout, same.stderr  # the same settings: nothing to do
    assert other.returncode == 2, (other.stdout, other.stderr)
    lines = [line for line in other.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and named in lines[0] and "--force" in lines[0], lines
    assert resent == 0 and out.read_bytes() == finished


def test_a_run_with_failed_requests_exits_non_zero_saying_how_many(tmp_path):
    """7 of 8 requests fail: the run is not complete (exit 1, the count on stderr), its partial file
    keeps the answer, and running it again asks only the 7 again."""
    out = tmp_path / "t.jsonl"
    args = ["traces", "record", "--model", NO_FILTER, "--lm", MODEL, "--variant", "full_steps", "--n", "8",
            "--retries", "0", "--timeout", "30", "--no-progress", "--out", str(out)]
    with FaultServer([ok(PLAN), status(500, message="overloaded")]) as server:
        first = _run(tmp_path / "home", [*args, "--api-base", server.url])
        sent = len(server.requests)
    assert sent == 8
    assert first.returncode == 1, (first.stdout, first.stderr)
    assert "7 of 8 requests failed" in first.stderr, first.stderr
    assert not out.exists() and (tmp_path / "t.jsonl.partial.jsonl").exists()
    with FaultServer([ok(PLAN)]) as server:
        again = _run(tmp_path / "home", [*args, "--api-base", server.url])
        assert len(server.requests) == 7
    assert again.returncode == 0, again.stderr
    assert len([r for r in read_jsonl_traces(out) if r.call == "plan" and r.error is None]) == 8
