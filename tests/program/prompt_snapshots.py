"""Exact-prompt snapshots: the request body each shipped configuration sends the model.

Each configuration plans one fixed request through the real planner against a loopback endpoint
(``tests.fault_server``) and keeps the HTTP body the endpoint received: messages, answer schema
(``response_format``), native tools, output cap. ``tests/program/test_prompt_snapshots.py``
compares them with the files under ``tests/snapshots/prompts/``; a change to what any shipped
configuration sends is a visible diff there. To accept a change on purpose::

    .venv/bin/python -m tests.program.prompt_snapshots tests/snapshots/prompts
"""

from __future__ import annotations

import json
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fault_server import FaultServer, ok

SNAPSHOTS = Path(__file__).resolve().parents[1] / "snapshots" / "prompts"
BLOG = "Turn my notes at https://example.org/notes into a blog post and publish it"
FILES = "List the files in /srv/project, then show the git status of the repository there"
ANSWER = json.dumps({"tool_fits": True, "steps": []})


@dataclass(frozen=True)
class Shipped:
    """One shipped configuration: a model's budget row, its endpoint, a catalog and a request."""

    model: str
    endpoint: str  # llamacpp/... (schema by default) or openai/... (free by default)
    intent: str
    tools_only: bool = False  # the real MCP servers' tool list instead of the bundled catalog (with pipelines)
    strategy: str | None = None  # an explicit answer strategy (None: the row's, else the endpoint's)
    options: dict[str, Any] = field(default_factory=dict)


SHIPPED: dict[str, Shipped] = {
    "tier-a-free-pipelines": Shipped("anthropic/claude-sonnet-4-6", "openai/m", BLOG),
    "tier-a-free-tools": Shipped("anthropic/claude-sonnet-4-6", "openai/m", FILES, tools_only=True),
    "tier-b-free-pipelines": Shipped("openrouter/mistralai/mistral-large", "openai/m", BLOG),
    "tier-b-native-pipelines": Shipped("openrouter/mistralai/mistral-large", "openai/m", BLOG, strategy="native"),
    "tier-c-free-single-pick-tools": Shipped("groq/llama-3.1-8b-instant", "openai/m", FILES, tools_only=True),
    "tier-b-schema-pipelines-qwen0.5b": Shipped("local/qwen2.5-coder-0.5b-instruct", "llamacpp/m", BLOG),
    "tier-b-schema-tools-qwen0.5b": Shipped("local/qwen2.5-coder-0.5b-instruct", "llamacpp/m", FILES, tools_only=True),
    "tier-c-schema-pipelines-pool-qwen1.5b": Shipped("local/qwen2.5-coder-1.5b-instruct", "llamacpp/m", BLOG),
    "tier-c-plain-tools-qwen1.5b": Shipped("local/qwen2.5-coder-1.5b-instruct", "llamacpp/m", FILES, tools_only=True),
    "tier-c-free-pipelines-pool-qwen1.5b": Shipped("local/qwen2.5-coder-1.5b-instruct", "llamacpp/m", BLOG,
                                                   strategy="free"),
}


def _strategy_options(strategy: str | None) -> dict[str, Any]:
    from helmdeck_dspy.planning.options import PlannerOptions

    if strategy is None:
        return {}
    if "answer_strategy" in PlannerOptions.model_fields:
        return {"answer_strategy": strategy}
    # the options before issue 37 (kept so the snapshots can be made from an older checkout to compare)
    return {"native_tool_calls": True} if strategy == "native" else {"constrained_decoding": strategy == "schema"}


def capture(name: str) -> dict[str, Any]:
    """The request body configuration ``name`` sends."""
    from helmdeck_dspy.catalog.models import load_catalog
    from helmdeck_dspy.engines.lm_spec import make_lm
    from helmdeck_dspy.io.resources import bundled_dir
    from helmdeck_dspy.planning.planner import Planner

    shipped = SHIPPED[name]
    catalog = load_catalog(bundled_dir() / "catalog" / "mcp-servers.json") if shipped.tools_only else load_catalog()
    with FaultServer([ok(ANSWER)]) as server:
        lm = make_lm(shipped.endpoint, api_base=server.url, api_key="sk-snapshot", cache=False, num_retries=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            planner = Planner.for_model(shipped.model, lm=lm, catalog=catalog, history=None, use_filter=False,
                                        cache=False, **_strategy_options(shipped.strategy), **shipped.options)
        planner.plan(shipped.intent)
        request = server.requests[0]  # the first call (a declined plain plan is asked again, over fewer tools)
    return request.body


def write_all(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in SHIPPED:
        (folder / f"{name}.json").write_text(json.dumps(capture(name), indent=1, ensure_ascii=False) + "\n", "utf-8")


if __name__ == "__main__":
    write_all(Path(sys.argv[1]) if len(sys.argv) > 1 else SNAPSHOTS)
