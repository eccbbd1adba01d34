"""An answer strategy is an object the planner calls stage by stage; adding one is a module and a
registry line. A toy strategy defined here runs end to end through the real planner, and no module
outside the strategies folder compares a strategy's name."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from helmdeck_dspy.engines.lm_spec import make_lm
from helmdeck_dspy.planning.planner import Planner
from helmdeck_dspy.program import strategies
from helmdeck_dspy.program.spec import PromptSpec
from helmdeck_dspy.program.strategies import STRATEGIES, AnswerStrategy, SpecInputs
from helmdeck_dspy.serve.catalogs import read_tools_catalog
from tests.fault_server import FaultServer, ok

PACKAGE = Path(strategies.__file__).resolve().parents[2]  # helmdeck_dspy/
TOOLS = [{"name": "get_weather", "description": "Current weather for a city.",
          "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
         {"name": "send_fax", "description": "Send a fax.", "inputSchema": {"type": "object", "properties": {}}}]


class Toy(AnswerStrategy):
    """One line per call, ``tool key=value``: a format no shipped strategy reads."""

    name = "toy"
    description = "one call per line, as tool key=value"

    def spec(self, given: SpecInputs) -> PromptSpec:
        tools = given.selected or given.whole
        return PromptSpec(variant=given.variant, strategy=self.name, catalog=", ".join(tools.ids()),
                          max_tokens=given.max_tokens, **(given.sampling or {}))

    def messages(self, spec: PromptSpec, instructions: str, demos: list[Any],
                 inputs: Mapping[str, Any]) -> list[dict[str, str]]:
        return [{"role": "system", "content": f"Tools: {inputs['catalog']}. Answer one call per line: tool key=value."},
                {"role": "user", "content": inputs["user_intent"]}]

    def parse(self, completion: Any) -> Any:
        from helmdeck_dspy.decoding.call_list import parse_call_list

        calls = [{"name": line.split()[0], "arguments": dict(kv.split("=", 1) for kv in line.split()[1:])}
                 for line in (completion.content or "").splitlines() if line.strip()]
        return parse_call_list(json.dumps(calls), completion.finish_reason)


def test_a_new_strategy_is_one_class_and_one_registry_line(monkeypatch):
    monkeypatch.setitem(STRATEGIES, Toy.name, Toy())
    with FaultServer([ok("get_weather city=Oslo")]) as server:
        lm = make_lm("openai/m", api_base=server.url, api_key="k", cache=False, num_retries=0)
        planner = Planner.for_model("groq/llama-3.1-8b-instant", lm=lm, catalog=read_tools_catalog(TOOLS),
                                    history=None, use_filter=False, cache=False, answer_strategy="toy")
        result = planner.plan("What is the weather in Oslo?")
        (request,) = server.requests
    assert request.body["messages"][0]["content"] == ("Tools: get_weather, send_fax. "
                                                      "Answer one call per line: tool key=value.")
    assert result.ok and result.strategy == "toy"
    assert [(s.tool, s.args) for s in result.steps] == [("get_weather", {"city": "Oslo"})]  # through the guards


def test_an_unregistered_strategy_is_refused():
    from helmdeck_dspy.errors import ArgumentError

    with pytest.raises(ArgumentError, match="unknown answer strategy 'toy'"):
        Planner.for_model("groq/llama-3.1-8b-instant", lm="sim:mid-tier", answer_strategy="toy")


def test_no_module_outside_the_strategies_compares_a_strategy_name():
    names = "|".join(map(re.escape, STRATEGIES))
    compared = re.compile(rf"""(==|!=|\bin)\s*[(\[{{]?\s*["']({names})["']|["']({names})["']\s*(==|!=|\bin\b)""")
    found, read = [], 0
    for path in PACKAGE.rglob("*.py"):
        read += 1
        if "strategies" in path.parts:
            continue
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            if compared.search(line):
                found.append(f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}")
    assert read > 100 and not found, found
