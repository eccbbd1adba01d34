"""The single_pick loop over MCP against a real model: Qwen2.5 Coder 0.5B served by llama.cpp.

``helmdeck-dspy serve --lm local:qwen2.5-coder-0.5b`` is spawned over stdio by the MCP SDK's client,
which drives ADR 053's loop (plan, run the step, plan again with prior_steps) until
more_steps_likely is absent, a plan fails, or the server's step cap ends it. Needs the ``local``
extra, the installed model and the ``serve`` extra; skips, saying which is missing, otherwise.
"""

from __future__ import annotations

import importlib.util
import json

import pytest

from helmdeck_dspy.decoding.causes import FAILURE_CAUSES
from helmdeck_dspy.local.install import state_of
from helmdeck_dspy.local.registry import get_model

NAME = "qwen2.5-coder-0.5b"
MODEL = get_model(NAME)
MAX_STEPS = 3
INTENT = "remember this launch announcement, then write a short blog post about it"


def _missing() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return "the 'local' extra is not installed: pip install 'helmdeck-dspy[local]'"
    if state_of(MODEL) != "installed":
        return f"{NAME} is not installed: helmdeck-dspy models install {NAME}"
    if importlib.util.find_spec("mcp") is None:
        return "the 'serve' extra is not installed: pip install 'helmdeck-dspy[serve]'"
    return None


pytestmark = [pytest.mark.local_model, pytest.mark.skipif(_missing() is not None, reason=str(_missing()))]


def _single_pick_table(tmp_path):
    """The bundled budget table with the model's row pinned to single_pick (calibration may have
    moved the row to a tier whose default is full_steps; the loop needs single_pick)."""
    import tomlkit

    from helmdeck_dspy.io.resources import default_budgets_path

    doc = tomlkit.parse(default_budgets_path().read_text(encoding="utf-8"))
    (row,) = [r for r in doc["model"] if r["match"] == MODEL.model_id]
    row["prompt_variant"] = "single_pick"
    path = tmp_path / "budgets.toml"
    path.write_text(tomlkit.dumps(doc), encoding="utf-8")
    return path


def test_an_mcp_client_drives_the_single_pick_loop_against_the_real_model(tmp_path):
    import anyio

    from tests.serve.conftest import server_env, stdio_client

    home = tmp_path / "home"
    budgets = _single_pick_table(tmp_path)
    args = ("--lm", f"local:{NAME}", "--budgets", str(budgets), "--timeout", "600", "--retries", "0",
            "--max-steps", str(MAX_STEPS))

    async def loop() -> list:
        results, prior = [], []
        async with stdio_client(home, *args, env=server_env(home), read_timeout=600) as client:  # the server's own --timeout: a cold prefill beside another test's model can pass 120 s
            for _ in range(MAX_STEPS + 1):
                result = await client.call_tool("helmdeck.plan", {"user_intent": INTENT, "model": MODEL.model_id,
                                                                  "prior_steps": prior})
                results.append(result)
                body = result.structured_content
                if result.is_error or not body["steps"]:
                    break
                first = body["steps"][0]
                prior.append({"order": len(prior) + 1, "tool": first["tool"], "args": first["args"],
                              "output": f"done: {first['tool']}"})
                if not body.get("more_steps_likely"):
                    break
            mine = json.loads((await client.read_resource("helmdeck://my-plans")).contents[0].text)
        return [results, mine]

    results, mine = anyio.run(loop)
    assert 1 <= len(results) <= MAX_STEPS  # the server's step cap ends the loop even if the model never does
    plans = [r for r in results if not r.is_error]
    for r in results:
        body = r.structured_content
        if r.is_error:  # a small model may fail: that is a tool result with its cause, never a protocol error
            assert body["error"] == "plan_failed" and body["cause"] in FAILURE_CAUSES
        else:
            assert body["model"] == MODEL.model_id and body["prompt_variant_used"] == "single_pick"
            assert {"steps", "rewritten_prompt", "complexity"} <= set(body)
            assert body.get("more_steps_likely", True) is True  # present only when true
    assert results[-1].is_error or not results[-1].structured_content.get("more_steps_likely")  # the loop ended
    assert len(mine["plans"]) == len(plans)
    assert all(p["model"] == MODEL.model_id for p in mine["plans"])
