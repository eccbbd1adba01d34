"""Bad values and bad input files: one line, the right exit code (2 for a value the command line
gave, 1 for a bad file or environment), never a traceback."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest

from helmdeck_dspy.traces.record import TraceRecord, write_jsonl_traces
from tests.reliability.conftest import assert_one_line

SIM = ["--lm", "sim:frontier-like", "--no-filter"]


@pytest.mark.parametrize("value", ["inf", "nan", "-inf", "0", "1e300"])
def test_timeouts_that_are_not_usable_numbers_are_usage_errors(cli, value):
    assert_one_line(cli("plan", "list files", "-m", "m/x", *SIM, "--no-history", "--timeout", value), 2, "--timeout")


@pytest.mark.parametrize("command", [["plan", "list files"], ["catalog", "select", "list files"]])
def test_an_empty_model_id_is_a_usage_error(cli, command):
    assert_one_line(cli(*command, "--model", "  "), 2, "--model")


def test_negative_token_counts_in_traces_are_refused_with_file_and_line(cli):
    path = cli.cwd / "t.jsonl"
    write_jsonl_traces([TraceRecord(id="r0", model="m/x", content="{}", finish_reason="stop")], path)
    with path.open("a") as handle:
        handle.write(json.dumps({"id": "r1", "model": "m/x", "content": "{}", "completion_tokens": -5}) + "\n")
    assert_one_line(cli("eval", "t.jsonl"), 1, "t.jsonl:2", "completion_tokens")


def test_a_byte_order_mark_in_a_budget_table_is_read(cli):
    from helmdeck_dspy.io.resources import default_budgets_path

    bom = cli.cwd / "budgets.toml"
    bom.write_bytes(b"\xef\xbb\xbf" + default_budgets_path().read_bytes())
    run = cli("budgets", "lookup", "anthropic/claude-sonnet-4-6", "--budgets", "budgets.toml")
    assert run.code == 0 and "Traceback" not in run.err, run.err


def test_parse_json_never_prints_bare_nan(cli):
    (cli.cwd / "c.txt").write_text('{"steps": [{"tool": "a", "args": {"x": NaN, "y": Infinity}}]}')
    run = cli("parse", "--json", "c.txt")
    assert run.code == 0

    def refuse(token: str) -> None:
        raise AssertionError(f"bare {token} in the output")

    data = json.loads(run.out, parse_constant=refuse)
    assert data["value"]["steps"][0]["args"] == {"x": None, "y": None}


def test_parse_on_a_missing_file_is_a_usage_error(cli):
    assert_one_line(cli("parse", "nope.txt"), 2, "nope.txt")


@pytest.mark.parametrize("command", ["parse", "plan"])
def test_binary_input_is_one_line_with_file_and_line(cli, command):
    (cli.cwd / "blob.bin").write_bytes(b"ok line\n\xff\xfe\x00\x81 binary")
    args = ["parse", "blob.bin"] if command == "parse" else \
        ["plan", "list files", "-m", "m/x", *SIM, "--no-history", "--context-file", "blob.bin"]
    assert_one_line(cli(*args), 1, "blob.bin:2", "not UTF-8")


def test_a_huge_context_file_is_refused_before_it_is_read(cli):
    huge = cli.cwd / "huge.txt"
    with huge.open("wb") as handle:  # 50 MB, sparse: costs no disk
        handle.truncate(50 * 1024 * 1024)
    assert_one_line(cli("plan", "list files", "-m", "m/x", *SIM, "--no-history", "--context-file", "huge.txt",
                        timeout=60), 2, "--context-file", "bytes")


def test_a_home_that_is_a_file_is_one_line(cli, tmp_path):
    home = tmp_path / "home-file"
    home.write_text("not a directory\n")
    run = cli("plan", "list files", "-m", "m/x", *SIM, env={"HELMDECK_DSPY_HOME": str(home)})
    assert_one_line(run, 1, str(home), "not a directory")
    assert home.read_text() == "not a directory\n"


def test_a_corrupt_history_database_is_one_line_and_kept(cli):
    cli.home.mkdir(parents=True)
    db = cli.home / "history.sqlite"
    db.write_bytes(b"this is not sqlite" * 100)
    assert_one_line(cli("plan", "list files", "-m", "m/x", *SIM), 1, "history.sqlite", "--no-history")
    assert db.read_bytes() == b"this is not sqlite" * 100
    with pytest.raises(sqlite3.DatabaseError):
        sqlite3.connect(db).execute("SELECT 1 FROM plan_history").fetchall()


def test_an_interrupted_command_prints_no_traceback(cli):
    import signal
    import time

    proc = cli.spawn("traces", "simulate", "-p", "frontier-like", "--n", "2000", "--out", "s.jsonl")
    time.sleep(5)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert b"Traceback" not in err
    assert proc.returncode in (0, 1), err
    if os.path.exists(cli.cwd / "s.jsonl"):  # finished before the signal: a whole file
        assert proc.returncode == 0
