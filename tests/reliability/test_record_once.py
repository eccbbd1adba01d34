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
from tests.fault_server import FaultServer, ok, status
from tests.reliability.conftest import clean_env

MODEL = "openai/recorded-model"
PLAN = '{"steps": [{"order": 1, "tool": "blog.rewrite_for_audience", "args": {}, "rationale": "r"}]}'


def _record(home: Path, url: str, out: Path, n: int = 3) -> subprocess.Popen[str]:
    env = clean_env(home, OPENAI_API_KEY="sk-test-record-once")
    home.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        [sys.executable, "-c", "from helmdeck_dspy.cli import main; main()", "traces", "record", "--model", MODEL,
         "--api-base", url, "--variant", "full_steps", "--n", str(n), "--retries", "0", "--timeout", "30",
         "--no-progress", "--out", str(out)],
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
