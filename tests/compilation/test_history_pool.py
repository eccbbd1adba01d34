"""Accepted plans from plan history join the compiled demo pool (``compile --knn-demos K
--history-traces FILE``): the words come from the planner's own trace file, the acceptance from
plan history, which holds only keyed hashes."""

from __future__ import annotations

import json
import warnings

import pytest

from helmdeck_dspy.catalog.models import load_catalog
from helmdeck_dspy.compilation.history_pool import history_demos
from helmdeck_dspy.errors import InputError
from helmdeck_dspy.planning.history import HistoryStore
from helmdeck_dspy.planning.planner import Planner
from helmdeck_dspy.program.store import program_path
from tests.compile_helpers import compile_one

MODEL = "openrouter/mistralai/mistral-large"
ACCEPTED = "scrape https://example.org/launch and publish it as a blog post"


def _plan(tmp_path, intent: str, steps: list[dict], trace, store: HistoryStore | None) -> None:
    replay = tmp_path / f"replay-{len(list(tmp_path.glob('replay-*')))}.jsonl"
    replay.write_text(json.dumps({"id": "r", "content": json.dumps({"steps": steps}), "finish_reason": "stop"}) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        planner = Planner.for_model(MODEL, lm=f"replay:{replay}", history=store, record_path=trace, use_filter=False)
    assert planner.plan(intent).ok


@pytest.fixture
def recorded(tmp_path):
    """A trace file of three plans, of which plan history accepted the first and the last (on this store)."""
    store, trace = HistoryStore(tmp_path / "history.sqlite"), tmp_path / "plans.jsonl"
    scrape_publish = [{"order": 1, "tool": "web.scrape", "args": {"url": "https://example.org/launch"}, "rationale": "r"},
                      {"order": 2, "tool": "blog.publish", "args": {}, "rationale": "r"}]
    _plan(tmp_path, ACCEPTED, scrape_publish, trace, store)
    _plan(tmp_path, "scrape https://example.org/other", scrape_publish[:1], trace, None)  # not in history
    pipeline = [{"order": 1, "tool": "helmdeck__pipeline-run", "args": {"id": "builtin.grounded-deck"}, "rationale": "r"}]
    _plan(tmp_path, "make a grounded deck from the launch notes", pipeline, trace, store)  # accepted: a pipeline run
    return store, trace


def test_only_plans_history_accepted_over_the_catalog_become_demos(recorded):
    store, trace = recorded
    demo, deck = history_demos([trace], store, load_catalog())
    assert demo.intent == ACCEPTED and [t.name for t in demo.tools] == ["web.scrape", "blog.publish"]
    assert demo.steps == ({"tool": "web.scrape", "args": {"url": "https://example.org/launch"}},
                          {"tool": "blog.publish", "args": {}})
    assert deck.tools == () and [p.id for p in deck.pipelines] == ["builtin.grounded-deck"]
    without = load_catalog().model_copy(update={"pipelines": ()})
    assert [d.intent for d in history_demos([trace], store, without)] == [ACCEPTED]  # its pipeline is not there
    assert history_demos([trace], HistoryStore(trace.parent / "other.sqlite"), load_catalog()) == ()  # another install


def test_a_compile_adds_them_to_the_pool_and_records_how_many(recorded, tmp_path):
    store, trace = recorded
    r = compile_one("C", "full_steps", out_root=tmp_path, knn_demos=2, history_traces=(trace,),
                    history_store=store.path)
    saved = json.loads(program_path("C", "full_steps", tmp_path).read_text(encoding="utf-8"))["demo_pool"]
    assert r.history_demos == 2 and ACCEPTED in [d["intent"] for d in saved["demos"]]
    assert r.demo_pool_size == len(saved["demos"])
    plain = compile_one("C", "full_steps", out_root=tmp_path / "plain", knn_demos=2)
    assert plain.demo_pool_size == r.demo_pool_size - 2 and plain.history_demos == 0
    with pytest.raises(InputError, match="--knn-demos"):
        compile_one("C", "full_steps", out_root=tmp_path, history_traces=(trace,), history_store=store.path)
