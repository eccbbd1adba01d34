"""Exact-prompt snapshots: the request body each shipped configuration sends the model.

Each configuration plans one fixed request through the real planner against a loopback endpoint
(``tests.fault_server``) and keeps the HTTP body the endpoint received: messages, answer schema
(``response_format``), output cap. The first call of each shipped configuration is pinned, and so
is each ask again the planner can send after it (``ask``: the recheck after a declined ``plain``
answer, and the ask for a call after a decline a row's threshold overrules, with the decline
probability scripted where the llama.cpp route would give it). ``tests/program/test_prompt_snapshots.py``
compares them with the files under ``tests/snapshots/prompts/``; a change to what any shipped
configuration sends is a visible diff there. To accept a change on purpose::

    .venv/bin/python -m tests.program.prompt_snapshots tests/snapshots/prompts
"""

from __future__ import annotations

import json
import sys
import warnings
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

from tests.fault_server import FaultServer, ok

SNAPSHOTS = Path(__file__).resolve().parents[1] / "snapshots" / "prompts"
BLOG = "Turn my notes at https://example.org/notes into a blog post and publish it"
FILES = "List the files in /srv/project, then show the git status of the repository there"
ANSWER = json.dumps({"tool_fits": True, "steps": []})
DECLINE = json.dumps({"tool_fits": False, "steps": []})
VAGUE = "do something useful"
FILTER_PICKS = json.dumps(["artifact.get"])
CONTEXT = "The project keeps its notes in /srv/project/notes."
PRIOR = [{"order": 1, "tool": "list_directory", "args": {"path": "/srv/project"}, "output": "[DIR] .git\n[FILE] notes.md"},
         {"order": 2, "tool": "git_status", "args": {"repo_path": "/srv/project"}, "output": "not a repository",
          "error": True}]


@dataclass(frozen=True)
class Shipped:
    """One shipped configuration: a model's budget row, its endpoint, a catalog and a request."""

    model: str
    endpoint: str  # llamacpp/... (schema by default) or openai/... (free by default)
    intent: str
    tools_only: bool = False  # the real MCP servers' tool list instead of the bundled catalog (with pipelines)
    strategy: str | None = None  # an explicit answer strategy (None: the row's, else the endpoint's)
    options: dict[str, Any] = field(default_factory=dict)
    answers: tuple[str, ...] = (ANSWER,)  # the endpoint's replies, in turn
    p_decline: float | None = None  # the decline probability the next-token route gives (None: no route)
    ask: int = 0  # which request is pinned: 0 the first, 1 the ask again (or the plan call after a filter call)
    context: str | None = None  # pasted material sent with the request
    prior: list[Any] | None = None  # steps already run (a re-plan)


SHIPPED: dict[str, Shipped] = {
    "tier-a-free-pipelines": Shipped("anthropic/claude-sonnet-4-6", "openai/m", BLOG),
    "tier-a-free-tools": Shipped("anthropic/claude-sonnet-4-6", "openai/m", FILES, tools_only=True),
    "tier-b-free-pipelines": Shipped("openrouter/mistralai/mistral-large", "openai/m", BLOG),
    "tier-c-free-single-pick-tools": Shipped("groq/llama-3.1-8b-instant", "openai/m", FILES, tools_only=True),
    "tier-c-free-single-pick-pipelines": Shipped("groq/llama-3.1-8b-instant", "openai/m", BLOG),
    "tier-b-schema-pipelines-qwen0.5b": Shipped("local/qwen2.5-coder-0.5b-instruct", "llamacpp/m", BLOG),
    "tier-b-schema-tools-qwen0.5b": Shipped("local/qwen2.5-coder-0.5b-instruct", "llamacpp/m", FILES, tools_only=True),
    "tier-c-schema-pipelines-pool-qwen1.5b": Shipped("local/qwen2.5-coder-1.5b-instruct", "llamacpp/m", BLOG),
    "tier-c-plain-tools-qwen1.5b": Shipped("local/qwen2.5-coder-1.5b-instruct", "llamacpp/m", FILES, tools_only=True),
    "tier-c-free-pipelines-pool-qwen1.5b": Shipped("local/qwen2.5-coder-1.5b-instruct", "llamacpp/m", BLOG,
                                                   strategy="free"),
    "filter-call-tier-c-fallback": Shipped("unknown/some-model", "openai/m", VAGUE, options={"use_filter": True},
                                           answers=(FILTER_PICKS, ANSWER)),
    "replan-schema-tools-qwen0.5b": Shipped("local/qwen2.5-coder-0.5b-instruct", "llamacpp/m", FILES,
                                            tools_only=True, context=CONTEXT, prior=PRIOR),
    "replan-plain-tools-qwen1.5b": Shipped("local/qwen2.5-coder-1.5b-instruct", "llamacpp/m", FILES,
                                           tools_only=True, context=CONTEXT, prior=PRIOR),
    "ask-recheck-plain-tools-qwen1.5b": Shipped("local/qwen2.5-coder-1.5b-instruct", "llamacpp/m", FILES,
                                                tools_only=True, answers=("[]", "[]"), ask=1),
    "ask-call-schema-tools-qwen0.5b": Shipped("local/qwen2.5-coder-0.5b-instruct", "llamacpp/m", FILES,
                                              tools_only=True, answers=(DECLINE, ANSWER), p_decline=0.05, ask=1),
    "ask-retry-plain-tools-qwen1.5b": Shipped("local/qwen2.5-coder-1.5b-instruct", "llamacpp/m", FILES,
                                              tools_only=True, prior=PRIOR, answers=("[]", "[]"), ask=1),
    "ask-retry-schema-tools-qwen0.5b": Shipped("local/qwen2.5-coder-0.5b-instruct", "llamacpp/m", FILES,
                                               tools_only=True, prior=PRIOR, answers=(DECLINE, ANSWER), ask=1),
    "ask-call-plain-tools-qwen1.5b": Shipped("local/qwen2.5-coder-1.5b-instruct", "llamacpp/m", FILES,
                                             tools_only=True, answers=("[]", "[]"), p_decline=0.05, ask=1,
                                             options={"decline_thresholds": {"plain": 0.2}}),
}


def _strategy_options(strategy: str | None) -> dict[str, Any]:
    from helmdeck_dspy.planning.options import PlannerOptions

    if strategy is None:
        return {}
    if "answer_strategy" in PlannerOptions.model_fields:
        return {"answer_strategy": strategy}
    # the options before issue 37 (kept so the snapshots can be made from an older checkout to compare)
    return {"constrained_decoding": strategy == "schema"}


def _scripted_route(p_decline: float) -> Any:
    """The next-token route's answer: a decline with probability ``p_decline`` wherever it is asked."""
    from helmdeck_dspy.local import next_token

    def ask(api_base: str, request: Any, timeout_s: float = 60.0) -> Any:
        decline, call = request.starts
        mass = {decline: p_decline, call: 1 - p_decline + (p_decline if decline.startswith(call) else 0)}
        return next_token.NextTokenAnswer(mass=mass, prompt_tokens=100, evaluated=1)

    return mock.patch.object(next_token, "ask_next_token", ask)


def capture(name: str) -> dict[str, Any]:
    """The request body configuration ``name`` sends."""
    from helmdeck_dspy.catalog.models import load_catalog
    from helmdeck_dspy.engines.lm_spec import make_lm
    from helmdeck_dspy.io.resources import bundled_dir
    from helmdeck_dspy.planning.planner import Planner

    from helmdeck_dspy.budgets import load_budget_table
    from helmdeck_dspy.signatures.types import ExecutedStep

    shipped = SHIPPED[name]
    catalog = load_catalog(bundled_dir() / "catalog" / "mcp-servers.json") if shipped.tools_only else load_catalog()
    options = dict(shipped.options)
    row = {key: options.pop(key) for key in ("decline_thresholds",) if key in options}
    table = load_budget_table().changed_for(shipped.model, row) if row else None
    with FaultServer([ok(a) for a in shipped.answers]) as server, ExitStack() as stack:
        if shipped.p_decline is not None:
            stack.enter_context(_scripted_route(shipped.p_decline))
        lm = make_lm(shipped.endpoint, api_base=server.url, api_key="sk-snapshot", cache=False, num_retries=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            planner = Planner.for_model(shipped.model, lm=lm, catalog=catalog, history=None,
                                        use_filter=options.pop("use_filter", False), cache=False, budgets=table,
                                        **_strategy_options(shipped.strategy), **options)
        prior = [ExecutedStep(**step) for step in shipped.prior] if shipped.prior else None
        planner.plan(shipped.intent, context=shipped.context, prior_steps=prior)
        requests = list(server.requests)
    assert len(requests) > shipped.ask, f"{name}: the planner sent {len(requests)} request(s), no ask again"
    return requests[shipped.ask].body


def write_all(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in SHIPPED:
        (folder / f"{name}.json").write_text(json.dumps(capture(name), indent=1, ensure_ascii=False) + "\n", "utf-8")


if __name__ == "__main__":
    write_all(Path(sys.argv[1]) if len(sys.argv) > 1 else SNAPSHOTS)
