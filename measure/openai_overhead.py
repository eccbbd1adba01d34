"""What ``serve --openai`` adds to a request, outside the model: a benchmark, not a test.

The same chat request (the 37 tools of the bundled MCP servers' catalog as OpenAI ``tools``, one
question) is sent with the official ``openai`` SDK, in one run, two ways: straight to a loopback
model endpoint that answers at once (``tests.fault_server``: the model alone, its answer a JSON
list with one call), and through the endpoint in front of it, which plans over the tools and
sends the checked call back as ``tool_calls``. The model's own time is the same instant answer
both ways, so the difference of the medians is what the endpoint adds per request: reading the
conversation, selection, the prompt, the second HTTP hop, parsing, the checks and the answer.

    .venv/bin/python measure/openai_overhead.py [--n 100]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from helmdeck_dspy.io.offline import apply_offline_defaults  # noqa: E402

MODEL = "local/qwen2.5-coder-1.5b-instruct"
ASK = "What time is it in Tokyo right now?"
CALL = json.dumps([{"name": "get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}])


def _tools() -> list[dict]:
    from helmdeck_dspy.io.resources import bundled_dir

    packs = json.loads((bundled_dir() / "catalog" / "mcp-servers.json").read_text("utf-8"))["packs"]
    return [{"type": "function", "function": {"name": p["name"], "description": p.get("description", ""),
                                              "parameters": p.get("parameters") or {"type": "object"}}} for p in packs]


def _timed(call, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        call()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main() -> None:
    apply_offline_defaults()
    os.environ.setdefault("OPENAI_API_KEY", "sk-loopback")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100)
    n = parser.parse_args().n

    import uvicorn
    from openai import OpenAI

    from helmdeck_dspy.serve.auth import CallerTokens
    from helmdeck_dspy.serve.config import ServeConfig
    from helmdeck_dspy.serve.openai_http import openai_app
    from helmdeck_dspy.serve.server import listen_socket
    from helmdeck_dspy.serve.service import PlanService
    from tests.fault_server import FaultServer, ok

    tools = _tools()
    with FaultServer(ok(CALL), max_requests=4 * n + 10) as model:
        config = ServeConfig(transport="openai", lm_spec="openai/m", api_base=model.url, history=False, retries=0)
        service = PlanService(config)
        sock = listen_socket("127.0.0.1", 0)
        server = uvicorn.Server(uvicorn.Config(openai_app(service, CallerTokens()), log_level="warning",
                                               access_log=False))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.02)
        endpoint = OpenAI(base_url=f"http://127.0.0.1:{sock.getsockname()[1]}/v1", api_key="unused", max_retries=0)
        alone = OpenAI(base_url=model.url, api_key="unused", max_retries=0)
        counter = iter(range(10**9))

        def through() -> None:  # a new question each time: DSPy's response cache never answers
            question = f"{ASK} (request {next(counter)})"
            answer = endpoint.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": question}],
                                                      tools=tools)
            assert answer.choices[0].message.tool_calls[0].function.name == "get_current_time"

        def straight() -> None:
            alone.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": ASK}], tools=tools)

        through(), straight()  # warm both paths
        endpoint_ms, alone_ms = _timed(through, n), _timed(straight, n)
        server.should_exit = True
        thread.join(15)
    med_e, med_a = statistics.median(endpoint_ms), statistics.median(alone_ms)
    p90 = lambda xs: sorted(xs)[int(0.9 * (len(xs) - 1))]  # noqa: E731
    print(f"{n} requests each way, 37 tools, an instant loopback model (measured, not simulated)")
    print("| path | p50 ms | p90 ms |\n|---|---|---|")
    print(f"| straight to the model | {med_a:.1f} | {p90(alone_ms):.1f} |")
    print(f"| through serve --openai | {med_e:.1f} | {p90(endpoint_ms):.1f} |")
    print(f"added by the endpoint, p50: {med_e - med_a:.1f} ms per request")


if __name__ == "__main__":
    main()
