"""What plan history keeps: keyed hashes only, private files, older rows migrated. The audit runs
a real plan with a known secret in the environment and in the request, then reads every file the
run wrote."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import stat
from pathlib import Path

import pytest

from helmdeck_dspy.catalog.text import tokenize
from helmdeck_dspy.planning.history import HistoryStore
from tests.fault_server import FaultServer, ok

SECRET = "sk-audit-SECRET-0123456789abcdef"
WORDS = "rewrite my launch notes for developers password hunter2"
PLAN = json.dumps({"steps": [{"order": 1, "tool": "blog.rewrite_for_audience",
                              "args": {"audience": "developers", "note": "hunter2"}, "rationale": "fits"}],
                   "complexity": "single-action", "more_steps_likely": False})


def unkeyed(text: str, size: int) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[: 2 * size]


def every_file(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}


def audit(home: Path, written: dict[Path, bytes], intent: str, *, plans: int) -> None:
    """No file written holds the secret; the history holds no request word, in clear or as an
    unkeyed hash (the dictionary attack the issue ran)."""
    assert home / "history.sqlite" in written and home / "history.key" in written
    for path, data in written.items():
        assert SECRET.encode() not in data, path
    history = written[home / "history.sqlite"]
    assert b"hunter2" not in history and b"password" not in history
    rows = HistoryStore(home / "history.sqlite").rows()
    assert len(rows) == plans
    stored = json.dumps([r.model_dump() for r in rows])
    for word in tokenize(intent):  # a dictionary of the request's own words finds none of its hashes
        assert unkeyed(word, 4) not in stored and unkeyed(word, 8) not in stored, word
    assert unkeyed(intent.strip().lower(), 8) not in stored
    assert unkeyed(json.dumps({"audience": "developers", "note": "hunter2"}, sort_keys=True,
                              separators=(",", ":")), 8) not in stored


def test_a_plan_leaves_no_secret_and_no_reversible_word(cli):
    intent = f"{WORDS} with key {SECRET}"
    (cli.cwd / "context.txt").write_text(f"the deploy key is {SECRET}\n")
    cache = cli.cwd / "dspy-cache"  # DSPy's disk cache is audited too
    with FaultServer(ok(PLAN)) as server:
        run = cli("plan", intent, "-m", "openai/audit-model", "--lm", "openai/audit-model", "--api-base", server.url,
                  "--no-filter", "--record", "rec.jsonl", "--context-file", "context.txt",
                  env={"OPENAI_API_KEY": SECRET, "HELMDECK_DSPY_CACHE": str(cache), "DSPY_CACHEDIR": str(cache)})
        assert len(server.requests) == 1
    assert run.code == 0, run.err
    assert SECRET not in run.out and SECRET not in run.err
    written = {**every_file(cli.home), **every_file(cli.cwd)}
    del written[cli.cwd / "context.txt"]  # the user's own input
    assert cli.cwd / "rec.jsonl" in written
    audit(cli.home, written, intent, plans=1)


def test_a_plan_over_mcp_leaves_no_secret_and_no_reversible_word(tmp_path):
    pytest.importorskip("mcp")
    import anyio

    from tests.serve.conftest import server_env, stdio_client

    home, cache = tmp_path / "home", tmp_path / "dspy-cache"
    intent = f"{WORDS} with key {SECRET}"
    env = server_env(home, OPENAI_API_KEY=SECRET, HELMDECK_DSPY_CACHE=str(cache), DSPY_CACHEDIR=str(cache))

    async def plan(url: str) -> str:
        async with stdio_client(home, "--lm", "openai/audit-model", "--api-base", url, env=env) as client:
            result = await client.call_tool("helmdeck.plan", {"user_intent": intent, "model": "openai/audit-model",
                                                              "context": f"the deploy key is {SECRET}"})
            assert not result.is_error, result
            return json.dumps(result.structured_content)

    with FaultServer(ok(PLAN)) as server:
        answer = anyio.run(plan, server.url)
        assert server.requests  # the plan reached the loopback LM
    assert SECRET not in answer
    audit(home, {**every_file(home), **every_file(cache)}, intent, plans=1)


def test_history_files_are_private(cli):
    run = cli("plan", "list files", "-m", "m/x", "--lm", "sim:frontier-like", "--no-filter")
    assert run.code == 0, run.err
    assert stat.S_IMODE(cli.home.stat().st_mode) == 0o700
    for name in ("history.sqlite", "history.key"):
        assert stat.S_IMODE((cli.home / name).stat().st_mode) == 0o600, name


def test_two_installs_hash_one_request_differently_one_install_alike(tmp_path):
    a, b = HistoryStore(tmp_path / "a" / "history.sqlite"), HistoryStore(tmp_path / "b" / "history.sqlite")
    kw = {"complexity": "single-action", "steps": [], "model": "m"}
    first, again = a.record(intent="Reset my password", **kw), a.record(intent="reset my password ", **kw)
    other = b.record(intent="Reset my password", **kw)
    assert first.intent_sha == again.intent_sha != other.intent_sha
    assert set(first.intent_terms).isdisjoint(other.intent_terms)


def test_rows_written_before_keyed_hashes_are_migrated(tmp_path):
    path = tmp_path / "h" / "history.sqlite"
    path.parent.mkdir()
    old_sha = unkeyed("reset my password hunter2", 8)
    old_terms = sorted({unkeyed(t, 4) for t in tokenize("reset my password hunter2")})
    body = {"key": f"plan_history/{old_sha}/{1:020d}", "caller": "alice", "intent_sha": old_sha,
            "intent_terms": old_terms, "complexity": "single-action",
            "steps": [{"order": 1, "tool": "vault.reset", "args_sha": unkeyed('{"pw":"hunter2"}', 8)}],
            "at_unix": 2_000_000_000, "model": "m"}
    with sqlite3.connect(path) as db:
        db.executescript("CREATE TABLE plan_history (key TEXT PRIMARY KEY, caller TEXT NOT NULL, intent_sha TEXT "
                         "NOT NULL, body TEXT NOT NULL, at_unix INTEGER NOT NULL);")
        db.execute("INSERT INTO plan_history VALUES (?, ?, ?, ?, ?)",
                   (body["key"], "alice", old_sha, json.dumps(body), body["at_unix"]))
    path.chmod(0o644)
    with pytest.warns(UserWarning, match="1 row"):
        store = HistoryStore(path)
    [row] = store.rows("alice", now=2_000_000_000)
    assert row.intent_terms == [] and row.intent_sha != old_sha and row.steps[0].tool == "vault.reset"
    data = path.read_bytes()
    for old in (old_sha, *old_terms, body["steps"][0]["args_sha"]):
        assert old.encode() not in data, old
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    HistoryStore(path)  # opened again: nothing left to migrate, no warning


def test_the_history_key_can_live_apart_from_the_data(cli, tmp_path):
    key = tmp_path / "secrets" / "helmdeck-history.key"
    run = cli("plan", "list files", "-m", "m/x", "--lm", "sim:frontier-like", "--no-filter",
              env={"HELMDECK_DSPY_HISTORY_KEY_FILE": str(key)})
    assert run.code == 0, run.err
    assert not (cli.home / "history.key").exists()  # a copy of the data folder holds no key
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    again = cli("plan", "list files", "-m", "m/x", "--lm", "sim:frontier-like", "--no-filter",
                env={"HELMDECK_DSPY_HISTORY_KEY_FILE": str(key)})
    assert again.code == 0, again.err
    rows = HistoryStore(cli.home / "history.sqlite", key_path=key).rows()
    assert len(rows) == 2 and rows[0].intent_sha == rows[1].intent_sha  # one secret for both runs


def test_a_cli_history_row_names_the_user_who_ran_it(cli):
    import getpass

    run = cli("plan", "list files", "-m", "m/x", "--lm", "sim:frontier-like", "--no-filter")
    assert run.code == 0, run.err
    (row,) = HistoryStore(cli.home / "history.sqlite").rows()
    assert row.caller == f"user:{getpass.getuser()}"
