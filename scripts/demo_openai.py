"""`make demo`'s OpenAI endpoint step: start `helmdeck-dspy serve --openai --port 0` on a SIMULATED
model, send it one request from the official `openai` SDK with the MCP servers' tools as OpenAI `tools`,
print what came back, stop the server. Run from the repository root."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

CLI = str(Path(sys.executable).with_name("helmdeck-dspy"))
MODEL = "anthropic/claude-sonnet-4-6"
ASK = "What time is it in Tokyo right now?"


def offered_tools() -> list[dict]:
    """The bundled MCP servers' 37 tools, as an OpenAI client sends them."""
    from helmdeck_dspy.io.resources import bundled_dir

    packs = json.loads((bundled_dir() / "catalog" / "mcp-servers.json").read_text("utf-8"))["packs"]
    return [{"type": "function", "function": {"name": p["name"], "description": p.get("description", ""),
                                              "parameters": p.get("parameters") or {"type": "object"}}}
            for p in packs]


def main() -> None:
    from openai import OpenAI

    server = subprocess.Popen([CLI, "serve", "--openai", "--port", "0", "--lm", "sim:frontier-like", "--no-history"],
                              stderr=subprocess.PIPE, text=True)
    try:
        line = server.stderr.readline() if server.stderr else ""
        print(line.strip())
        found = re.search(r"(http://\S+/v1)", line)
        if found is None:
            raise SystemExit("the server did not announce its URL")
        client = OpenAI(base_url=found.group(1), api_key="unused", max_retries=0)
        tools = offered_tools()
        print(f"request: {ASK!r} with {len(tools)} tools (model {MODEL}; the model is SIMULATED)")
        answer = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": ASK}], tools=tools)
        choice = answer.choices[0]
        print(f"finish_reason: {choice.finish_reason}")
        for call in choice.message.tool_calls or []:
            print(f"tool call: {call.function.name}({call.function.arguments})")
        if choice.message.content:
            print(f"text: {choice.message.content}")
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
