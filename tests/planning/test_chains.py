"""The chain guard: a plan that spells out a pipeline's packs runs the pipeline (planning.chains)."""

from __future__ import annotations

import json
import warnings

from helmdeck_dspy.bench.study.spec import before_issue_22
from helmdeck_dspy.catalog.models import load_catalog, parse_catalog
from helmdeck_dspy.domain import PIPELINE_RUN_TOOL
from helmdeck_dspy.planning.chains import PIPELINE_CHAINS_KEY, collapse_chains
from helmdeck_dspy.planning.planner import Planner
from helmdeck_dspy.signatures.types import PlanStep
from helmdeck_dspy.traces.io import read_jsonl_traces

CHAINS = {
    "p.short": frozenset({"a", "b"}),
    "p.long": frozenset({"a", "b", "c"}),
    "p.other": frozenset({"x", "y"}),
}


def steps(*tools: str, **args: dict) -> list[PlanStep]:
    return [PlanStep(tool=t, args=args.get(t, {})) for t in tools]


def shape(out: list[PlanStep]) -> list[str]:
    return [s.args["id"] if s.tool == PIPELINE_RUN_TOOL else s.tool for s in out]


def test_a_spelled_out_chain_becomes_one_run_where_its_first_pack_stood():
    out = collapse_chains(steps("z", "a", "q", "b", a={"url": "u", "k": 1}, b={"k": 2, "n": 3}), CHAINS)
    assert shape(out) == ["z", "p.short", "q"]
    assert out[1].args == {"id": "p.short", "inputs": {"url": "u", "k": 1, "n": 3}}
    assert "a, b" in out[1].rationale


def test_the_longest_complete_chain_wins_and_every_chain_is_collapsed():
    assert shape(collapse_chains(steps("a", "b", "c", "x", "y"), CHAINS)) == ["p.long", "p.other"]


def test_an_incomplete_chain_is_left_alone():
    plan = steps("a", "c", "x")
    assert collapse_chains(plan, CHAINS) is plan
    assert collapse_chains(plan, {}) is plan


def test_catalog_chains_come_from_supersedes_else_chain_else_steps_and_need_two_packs():
    guide = parse_catalog({"packs": [], "pipelines": [
        {"id": "with.steps", "metadata": {"supersedes": ["a"], "steps": [{"pack": "a"}, {"pack": "b"}, {"pack": "a"}]}},
        {"id": "with.supersedes", "metadata": {"supersedes": ["c", "d"], "chain": ["c", "d", "x"]}},
        {"id": "with.chain", "metadata": {"chain": ["f", "g"], "steps": [{"pack": "f"}]}},
        {"id": "one.pack", "metadata": {"supersedes": ["e"]}},
        {"id": "bare"},
    ]})
    assert guide.pipeline_chains == {"with.steps": frozenset({"a", "b"}), "with.supersedes": frozenset({"c", "d"}),
                                     "with.chain": frozenset({"f", "g"})}
    assert '"chain"' not in guide.rendered and '"steps"' in guide.rendered  # the chain is never shown


def test_the_bundled_catalog_chains_every_pipeline_of_two_packs_or_more():
    catalog = load_catalog()
    chains = catalog.pipeline_chains
    assert chains["builtin.repo-readme-podcast"] == {"repo.fetch", "podcast.generate"}  # its supersedes
    assert chains["builtin.research-deck"] == {"research.deep", "slides.outline", "slides.render"}  # its chain
    assert len(chains) == 19 and "builtin.repo-solve-pr" not in chains  # one pack: swe.solve
    assert all(packs <= {p.name for p in catalog.packs} for packs in chains.values())


ANSWER = json.dumps({"steps": [
    {"order": 1, "tool": "repo.fetch", "args": {"url": "https://github.com/sharkdp/fd"}, "rationale": "clone"},
    {"order": 2, "tool": "podcast.generate", "args": {}, "rationale": "narrate"},
    {"order": 3, "tool": "email.send", "args": {"to": "me@example.org"}, "rationale": "send"},
]})


def plan(tmp_path, **kw):
    replay = tmp_path / "replay.jsonl"
    replay.write_text(json.dumps({"id": "r0", "content": ANSWER, "finish_reason": "stop"}) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        planner = Planner.for_model("openrouter/mistralai/mistral-large", lm=f"replay:{replay}", use_filter=False,
                                    record_path=tmp_path / "rec.jsonl", **kw)
    return planner.plan("clone github.com/sharkdp/fd with repo.fetch, podcast.generate its readme, email it to me",
                        task_id="t1")


def test_the_planner_runs_the_pipeline_and_records_that_it_did(tmp_path):
    result = plan(tmp_path)
    assert [(s.order, s.tool) for s in result.steps] == [(1, PIPELINE_RUN_TOOL), (2, "email.send")]
    assert result.steps[0].args == {"id": "builtin.repo-readme-podcast",
                                    "inputs": {"url": "https://github.com/sharkdp/fd"}}
    assert result.complexity == "pack-chain"
    (rec,) = read_jsonl_traces(tmp_path / "rec.jsonl")
    assert rec.run[PIPELINE_CHAINS_KEY] is True


def test_before_issue_22_the_plan_is_kept_as_the_model_gave_it(tmp_path):
    result = plan(tmp_path, **before_issue_22())
    assert [s.tool for s in result.steps] == ["repo.fetch", "podcast.generate", "email.send"]
    (rec,) = read_jsonl_traces(tmp_path / "rec.jsonl")
    assert PIPELINE_CHAINS_KEY not in (rec.run or {})


def test_a_recorded_answer_is_replayed_with_the_guard_its_planner_ran(tmp_path):
    from helmdeck_dspy.evaluation.replay import replay_record
    from helmdeck_dspy.evaluation.runner import build_context
    from helmdeck_dspy.tasks import load_tasks

    plan(tmp_path)
    (rec,) = read_jsonl_traces(tmp_path / "rec.jsonl")
    ctx = build_context(tasks=[t for t in load_tasks() if t.id == "super-004"])
    on = replay_record(rec.model_copy(update={"task_id": "super-004"}), ctx)
    off = replay_record(rec.model_copy(update={"task_id": "super-004", "run": {}}), ctx)
    assert on.n_steps == 2 and off.n_steps == 3 and on.score > off.score
