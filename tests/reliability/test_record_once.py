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
