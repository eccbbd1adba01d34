"""``helmdeck.plan`` over a caller's own tools, against a real model: Qwen2.5 Coder 0.5B served by
llama.cpp, the tools imported from the four real MCP servers (eval/catalog/mcp-servers.json, 37
tools with their ``inputSchema``), sent as the ``tools`` argument in MCP shape.

With constrained decoding on (the default for llama.cpp), every step names one of those tools and
its arguments are valid against that tool's schema (checked here with ``jsonschema``). Needs the
``local`` extra, the installed model and the MCP SDK; skips, saying which is missing, otherwise.
"""

from __future__ import annotations

import importlib.util

import pytest

from helmdeck_dspy.catalog.models import load_catalog
from helmdeck_dspy.io.resources import bundled_dir
from helmdeck_dspy.local.install import state_of
from helmdeck_dspy.local.registry import get_model

NAME = "qwen2.5-coder-0.5b"
MODEL = get_model(NAME)
INTENTS = ("What time is it in Tokyo right now?",
           "show me the last 3 commits of the repository at /home/dev/billing-api")


def _missing() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return "the 'local' extra is not installed: pip install 'helmdeck-dspy[local]'"
    if state_of(MODEL) != "installed":
        return f"{NAME} is not installed: helmdeck-dspy models install {NAME}"
    for module, extra in (("mcp", "serve"), ("jsonschema", "serve")):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed: pip install 'helmdeck-dspy[{extra}]'"
    return None


pytestmark = [pytest.mark.local_model, pytest.mark.skipif(_missing() is not None, reason=str(_missing()))]


def test_a_plan_over_the_callers_tools_names_only_them_with_valid_arguments(tmp_path):
    import anyio
    import jsonschema

    from tests.serve.conftest import server_env, stdio_client

    catalog = load_catalog(bundled_dir() / "catalog" / "mcp-servers.json")
    tools = [{"name": p.name, "description": p.description, "inputSchema": p.parameters} for p in catalog.packs]
    schemas = {t["name"]: t["inputSchema"] for t in tools}
    home = tmp_path / "home"

    async def plans() -> list:
        out = []
        async with stdio_client(home, "--lm", f"local:{NAME}", "--timeout", "600", "--retries", "0",
                                env=server_env(home), read_timeout=900) as client:
            for intent in INTENTS:
                result = await client.call_tool("helmdeck.plan", {"user_intent": intent, "model": MODEL.model_id,
                                                                  "tools": tools})
                assert not result.is_error, result
                out.append(result.structured_content)
        return out

    bodies = anyio.run(plans)
    steps = [s for body in bodies for s in body["steps"]]
    assert steps, f"no step planned for {INTENTS}: {bodies}"
    for step in steps:
        assert step["tool"] in schemas, f"{step['tool']} is not one of the caller's tools"
        jsonschema.validate(step["args"], schemas[step["tool"]])
