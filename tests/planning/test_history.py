"""plan_history: audit rows, the my-plans projection (MCP + audit tests in the anchor report §2,
§1.9 audit, §1.11 my-plans) and the history prior."""

from __future__ import annotations

import re
import sqlite3
import time
import warnings

import pytest

from helmdeck_dspy.domain import PIPELINE_RUN_TOOL
from helmdeck_dspy.planning.guards import GuardedStep
from helmdeck_dspy.planning.history import (
    AUDIT_TTL_SECONDS,
    NOTE_EMPTY,
    HistoryStore,
    args_sha,
    intent_sha,
    record_quietly,
)

HEX16 = re.compile(r"^[0-9a-f]{16}$")


@pytest.fixture
def store(tmp_path) -> HistoryStore:
    return HistoryStore(tmp_path / "h" / "history.sqlite")


def steps(*tools_or_pairs) -> list[GuardedStep]:
    out = []
    for i, t in enumerate(tools_or_pairs, 1):
        tool, args = (t, {}) if isinstance(t, str) else t
        out.append(GuardedStep(order=i, tool=tool, args=args))
    return out


# --------------------------------------------------------------------------------------------
# Hashes
# --------------------------------------------------------------------------------------------


def test_intent_sha_is_16_hex_and_normalised():
    sha = intent_sha("Write a blog post")
    assert HEX16.match(sha)
    assert intent_sha("  write A BLOG post \n") == sha
    assert intent_sha("write a blog post!") != sha


def test_intent_sha_matches_upstream_definition():
    import hashlib

    assert intent_sha(" Hello ") == hashlib.sha256(b"hello").digest()[:8].hex()


def test_args_sha_canonical():
    a = args_sha({"key": "k", "value": {"x": 1, "y": [1, 2]}})
    b = args_sha({"value": {"y": [1, 2], "x": 1}, "key": "k"})
    assert a == b
    assert HEX16.match(a)
    assert args_sha({"key": "k", "value": {"x": 2, "y": [1, 2]}}) != a
    assert args_sha({"key": "K", "value": {"x": 1, "y": [1, 2]}}) != a


def test_args_sha_ignores_whitespace_of_source_json():
    import json

    compact = json.loads('{"a":1,"b":"two"}')
    spaced = json.loads('{ "b" : "two",\n  "a" : 1 }')
    assert args_sha(compact) == args_sha(spaced)


# --------------------------------------------------------------------------------------------
# record / rows
# --------------------------------------------------------------------------------------------


def test_record_writes_a_row(store):
    row = store.record(
        intent="Remember my audience",
        complexity="single-action",
        steps=steps(("helmdeck.memory_store", {"key": "audience", "value": "devs"})),
        model="openrouter/auto",
        caller="alice",
        duration_ms=12,
    )
    sha = intent_sha("Remember my audience", store.keyed)
    assert row.intent_sha == sha
    assert sha != intent_sha("Remember my audience")  # keyed: not the unkeyed (dictionary-reversible) hash
    assert re.match(rf"^plan_history/{sha}/\d{{20}}$", row.key)
    assert row.caller == "alice"
    assert row.outcome == "ok"
    assert row.model == "openrouter/auto"
    assert row.duration_ms == 12
    [s] = row.steps
    assert s.tool == "helmdeck.memory_store" and s.order == 1
    assert s.args_sha == args_sha({"key": "audience", "value": "devs"}, store.keyed)
    stored = store.rows("alice")
    assert [r.key for r in stored] == [row.key]
    assert stored[0] == row
    assert store.rows("bob") == []


def test_record_key_suffix_is_now_in_ns(store):
    before = time.time_ns()
    row = store.record(intent="x", complexity="single-action", steps=[], model="m")
    after = time.time_ns()
    assert before <= int(row.key.rsplit("/", 1)[1]) <= after


def test_record_caller_unknown_when_none(store):
    row = store.record(intent="x", complexity="single-action", steps=steps("image.generate"), model="m", caller=None)
    assert row.caller == "unknown"
    assert [r.key for r in store.rows("unknown")] == [row.key]


def test_record_at_unix_auto_and_preserved(store):
    before = int(time.time())
    auto = store.record(intent="x", complexity="single-action", steps=[], model="m")
    after = int(time.time())
    assert before <= auto.at_unix <= after
    zero = store.record(intent="x", complexity="single-action", steps=[], model="m", at_unix=0)
    assert before <= zero.at_unix <= after + 1  # 0 means "not given", as upstream
    fixed = store.record(intent="x", complexity="single-action", steps=[], model="m", at_unix=1_700_000_000)
    assert fixed.at_unix == 1_700_000_000


def test_record_args_sha_absent_without_args_and_pipeline_id(store):
    row = store.record(
        intent="x",
        complexity="pack-chain",
        steps=steps("image.generate", (PIPELINE_RUN_TOOL, {"id": "builtin.brief-rewrite-blog", "inputs": {}})),
        model="m",
    )
    assert row.steps[0].args_sha is None
    assert row.steps[0].pipeline_id is None
    assert row.steps[1].args_sha is not None
    assert row.steps[1].pipeline_id == "builtin.brief-rewrite-blog"


def test_rows_expire_after_30_days(store):
    now = 2_000_000_000
    old = store.record(intent="old", complexity="single-action", steps=[], model="m", at_unix=now - AUDIT_TTL_SECONDS - 1)
    edge = store.record(intent="edge", complexity="single-action", steps=[], model="m", at_unix=now - AUDIT_TTL_SECONDS)
    new = store.record(intent="new", complexity="single-action", steps=[], model="m", at_unix=now - 10)
    keys = [r.key for r in store.rows(now=now)]
    assert old.key not in keys
    assert keys == [new.key, edge.key]  # newest first
    # at an earlier "now" the old row is still in
    assert old.key in [r.key for r in store.rows(now=now - 100)]


def test_rows_all_callers_when_none(store):
    a = store.record(intent="x", complexity="single-action", steps=[], model="m", caller="a")
    b = store.record(intent="y", complexity="single-action", steps=[], model="m", caller="b")
    assert {r.key for r in store.rows()} == {a.key, b.key}


def test_store_persists_across_instances(tmp_path):
    path = tmp_path / "history.sqlite"
    row = HistoryStore(path).record(intent="x", complexity="single-action", steps=[], model="m", caller="c")
    assert [r.key for r in HistoryStore(path).rows("c")] == [row.key]


def test_default_path_under_helmdeck_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HELMDECK_DSPY_HOME", str(tmp_path / "home"))
    s = HistoryStore()
    assert s.path == tmp_path / "home" / "history.sqlite"
    assert s.path.exists()


def test_undecodable_row_is_skipped(store):
    good = store.record(intent="x", complexity="single-action", steps=[], model="m", caller="c")
    with sqlite3.connect(store.path) as db:
        db.execute(
            "INSERT INTO plan_history (key, caller, intent_sha, body, at_unix) VALUES (?,?,?,?,?)",
            ("plan_history/bad/1", "c", "bad", "{not json", good.at_unix),
        )
    assert [r.key for r in store.rows("c")] == [good.key]


# --------------------------------------------------------------------------------------------
# my_plans
# --------------------------------------------------------------------------------------------


def _seed_upstream(store: HistoryStore) -> None:
    store.record(
        intent="abc", complexity="pack-chain", model="m1", caller="alice", at_unix=100,
        steps=steps("helmdeck.memory_store", "blog.rewrite_for_audience"),
    )
    store.record(
        intent="abc", complexity="pack-chain", model="m2", caller="alice", at_unix=200,
        steps=steps("helmdeck.memory_store", "image.generate"),
    )
    store.record(
        intent="xyz", complexity="single-action", model="m1", caller="alice", at_unix=50,
        steps=steps("image.generate"),
    )


def test_my_plans_upstream_case(store):
    _seed_upstream(store)
    mp = store.my_plans("alice", now=1_000)
    assert mp.scope == "caller=alice"
    assert mp.note is None
    assert len(mp.groups) == 2
    first, second = mp.groups
    assert first.intent_sha == intent_sha("abc", store.keyed)
    assert first.count == 2
    assert first.complexity == "pack-chain"
    assert first.top_tools[0] == "helmdeck.memory_store"
    assert set(first.top_tools) == {"helmdeck.memory_store", "blog.rewrite_for_audience", "image.generate"}
    assert first.last_unix == 200
    assert first.models == ["m1", "m2"]
    assert second.intent_sha == intent_sha("xyz", store.keyed)
    assert second.count == 1 and second.complexity == "single-action" and second.last_unix == 50


def test_my_plans_other_caller_is_empty(store):
    _seed_upstream(store)
    mp = store.my_plans("bob", now=1_000)
    assert mp.groups == [] and mp.note == NOTE_EMPTY


def test_my_plans_empty(store):
    mp = store.my_plans("alice")
    assert mp.groups == []
    assert mp.note == NOTE_EMPTY and mp.note
    assert mp.scope == "caller=alice"


def test_my_plans_default_caller_unknown(store):
    store.record(intent="x", complexity="single-action", steps=steps("image.generate"), model="m")
    mp = store.my_plans(None)
    assert mp.scope == "caller=unknown"
    assert len(mp.groups) == 1


def test_my_plans_excludes_unknown_and_empty_tools(store):
    store.record(
        intent="x", complexity="pack-chain", model="m", caller="c",
        steps=steps("unknown", "", "unknown", "image.generate", (PIPELINE_RUN_TOOL, {"id": "p"})),
    )
    [group] = store.my_plans("c").groups
    assert "unknown" not in group.top_tools and "" not in group.top_tools
    assert set(group.top_tools) == {"image.generate", PIPELINE_RUN_TOOL}


def test_my_plans_complexity_tie_alphabetical_and_group_order(store):
    store.record(intent="t", complexity="single-action", steps=[], model="", caller="c", at_unix=10)
    store.record(intent="t", complexity="pack-chain", steps=[], model="", caller="c", at_unix=20)
    store.record(intent="u", complexity="single-action", steps=[], model="", caller="c", at_unix=30)
    store.record(intent="v", complexity="single-action", steps=[], model="", caller="c", at_unix=40)
    groups = store.my_plans("c", now=100).groups
    assert groups[0].intent_sha == intent_sha("t", store.keyed)
    assert groups[0].complexity == "pack-chain"  # 1-1 tie → alphabetically smallest
    assert groups[0].models == []
    # equal counts: newest first
    assert [g.intent_sha for g in groups[1:]] == [intent_sha("v", store.keyed), intent_sha("u", store.keyed)]


# --------------------------------------------------------------------------------------------
# prior
# --------------------------------------------------------------------------------------------


def test_prior_similar_intent_gets_bonus(store):
    store.record(
        intent="rewrite the product brief as a blog post for engineers", complexity="pack-chain", model="m",
        steps=steps("doc.parse", "blog.rewrite_for_audience"),
    )
    prior = store.prior("rewrite this brief as a blog post for managers", weight=3.0)
    assert set(prior) == {"doc.parse", "blog.rewrite_for_audience"}
    assert all(v > 0 for v in prior.values())
    assert max(prior.values()) == pytest.approx(3.0)


def test_prior_max_equals_weight_and_scales_votes(store):
    store.record(intent="blog post launch", complexity="pack-chain", model="m", steps=steps("a.one", "b.two"))
    store.record(intent="blog post launch", complexity="single-action", model="m", steps=steps("a.one"))
    prior = store.prior("blog post launch", weight=2.0)
    assert prior["a.one"] == pytest.approx(2.0)
    assert prior["b.two"] == pytest.approx(1.0)


def test_prior_more_similar_history_weighs_more(store):
    store.record(intent="translate the readme to french", complexity="single-action", model="m", steps=steps("t.one"))
    store.record(intent="translate podcast audio", complexity="single-action", model="m", steps=steps("t.two"))
    prior = store.prior("translate the readme to german")
    assert prior["t.one"] > prior["t.two"] > 0


def test_prior_unrelated_intent_is_empty(store):
    store.record(intent="generate an image of a cat", complexity="single-action", model="m", steps=steps("image.generate"))
    assert store.prior("list open pull requests") == {}
    assert store.prior("") == {}
    assert store.prior("the of and") == {}  # only stop words: no terms


def test_prior_empty_store(store):
    assert store.prior("anything at all") == {}


def test_prior_pipeline_run_votes_for_pipeline_id_and_unknown_ignored(store):
    store.record(
        intent="draft a blog from this brief", complexity="pack-chain", model="m",
        steps=steps((PIPELINE_RUN_TOOL, {"id": "builtin.brief-rewrite-blog"}), "unknown"),
    )
    prior = store.prior("draft a blog from my brief")
    assert set(prior) == {"builtin.brief-rewrite-blog"}
    assert PIPELINE_RUN_TOOL not in prior and "unknown" not in prior


def test_prior_filters_by_caller(store):
    store.record(intent="blog post launch", complexity="single-action", model="m", steps=steps("a.one"), caller="x")
    assert store.prior("blog post launch", caller="y") == {}
    assert store.prior("blog post launch", caller="x") == {"a.one": pytest.approx(3.0)}


def test_history_does_not_store_intent_text(store):
    store.record(intent="secret project zanzibar launch", complexity="single-action", model="m", steps=[])
    raw = store.path.read_bytes()
    assert b"zanzibar" not in raw


# --------------------------------------------------------------------------------------------
# record_quietly
# --------------------------------------------------------------------------------------------


def test_record_quietly_none_store_is_noop():
    assert record_quietly(None, intent="x", complexity="single-action", steps=[], model="m") is None


def test_record_quietly_writes_normally(store):
    row = record_quietly(store, intent="x", complexity="single-action", steps=[], model="m", caller="c")
    assert row is not None
    assert [r.key for r in store.rows("c")] == [row.key]


def test_record_quietly_turns_sqlite_failure_into_warning(tmp_path):
    path = tmp_path / "history.sqlite"
    s = HistoryStore(path)
    path.unlink()
    path.mkdir()  # the database file is now a directory
    with pytest.warns(UserWarning, match="plan_history not written"):
        assert record_quietly(s, intent="x", complexity="single-action", steps=[], model="m") is None


def test_record_quietly_monkeypatched_error(store, monkeypatch):
    def boom(**kwargs):
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(store, "record", boom)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert record_quietly(store, intent="x", complexity="single-action", steps=[], model="m") is None
    assert any("database is locked" in str(w.message) for w in caught)


def test_record_quietly_does_not_hide_other_errors(store, monkeypatch):
    def boom(**kwargs):
        raise ValueError("a bug, not storage")

    monkeypatch.setattr(store, "record", boom)
    with pytest.raises(ValueError):
        record_quietly(store, intent="x", complexity="single-action", steps=[], model="m")


def test_two_plans_in_the_same_clock_tick_are_both_recorded(store, monkeypatch):
    """Coarse clocks (e.g. Windows, ~1-16 ms) give equal time_ns() values for back-to-back calls:
    the second audit row must not collide with the first (key = intent sha + ns)."""
    import helmdeck_dspy.planning.history as mod

    monkeypatch.setattr(mod.time, "time_ns", lambda: 1_700_000_000_123_456_789)
    a = store.record(intent="same intent", complexity="single-action", steps=steps("image.generate"), model="m")
    b = store.record(intent="same intent", complexity="single-action", steps=steps("doc.parse"), model="m")
    assert a.key != b.key
    assert len(store.rows(now=1_700_000_000)) == 2
