"""What serving the planner over MCP costs per call: in-process ``Planner.plan`` vs the same call
through ``helmdeck-dspy serve`` over stdio and over streamable HTTP (127.0.0.1), all with the same
replay LM, so the LM costs nothing and the difference is the server's own overhead (JSON-RPC
framing, transport, argument validation, the wire projection, the thread hop).

The servers run as separate processes, started as a client would start them; the MCP SDK's client
calls them. Each path gets its own replay file of identical answers and its own history store (on,
as by default). Medians and ratios are measured in the same run.

    .venv/bin/python measure/mcp_overhead.py [--n 100] [--warmup 5] [--model anthropic/claude-sonnet-4-6]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from helmdeck_dspy.io.offline import apply_offline_defaults

INTENT = "remember this launch, write a blog about it and make an illustration"
ANSWER = json.dumps({"steps": [
    {"order": 1, "tool": "helmdeck.memory_store", "args": {"key": "launch"}, "rationale": "keep the source"},
    {"order": 2, "tool": "blog.rewrite_for_audience", "args": {}, "rationale": "draft the post"},
    {"order": 3, "tool": "image.generate", "args": {}, "rationale": "illustrate it"},
], "complexity": "pack-chain", "reasoning": "three actions"})


def replay(directory: Path, name: str, count: int) -> Path:
    path = directory / f"{name}.jsonl"
    with path.open("w") as f:
        for i in range(count):
            f.write(json.dumps({"id": f"{name}{i}", "finish_reason": "stop", "content": ANSWER}) + "\n")
    return path


def serve_command() -> list[str]:
    script = Path(sys.executable).with_name("helmdeck-dspy")
    return [str(script), "serve"] if script.exists() else [
        sys.executable, "-c", "from helmdeck_dspy.cli import main; main()", "serve"]


def env_for(home: Path) -> dict[str, str]:
    return {**os.environ, "HELMDECK_DSPY_HOME": str(home)}


def in_process(work: Path, model: str, n: int, warmup: int) -> tuple[list[float], float]:
    from helmdeck_dspy.planning.history import HistoryStore
    from helmdeck_dspy.planning.planner import Planner

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        planner = Planner.for_model(model, lm=f"replay:{replay(work, 'inproc', n + warmup)}",
                                    history=HistoryStore(work / "inproc-history.sqlite"))
    ready = time.perf_counter() - t0
    times = []
    for i in range(n + warmup):
        t = time.perf_counter()
        result = planner.plan(INTENT)
        if i >= warmup:
            times.append(time.perf_counter() - t)
        assert result.ok, result.error
    return times, ready


async def _drive(client, model: str, n: int, warmup: int) -> list[float]:
    times = []
    for i in range(n + warmup):
        t = time.perf_counter()
        result = await client.call_tool("helmdeck.plan", {"user_intent": INTENT, "model": model})
        if i >= warmup:
            times.append(time.perf_counter() - t)
        assert not result.is_error, result.content
    return times


def over_stdio(work: Path, model: str, n: int, warmup: int) -> tuple[list[float], float]:
    import anyio
    from mcp import Client, StdioServerParameters

    path = replay(work, "stdio", n + warmup)
    command, *args = serve_command()
    params = StdioServerParameters(command=command, args=[*args, "--lm", f"replay:{path}"],
                                   env=env_for(work / "stdio-home"))

    async def main() -> tuple[list[float], float]:
        t0 = time.perf_counter()
        async with Client(params, read_timeout_seconds=120) as client:
            await client.list_tools()
            ready = time.perf_counter() - t0
            return await _drive(client, model, n, warmup), ready

    return anyio.run(main)


def over_http(work: Path, model: str, n: int, warmup: int) -> tuple[list[float], float]:
    import anyio
    from mcp import Client

    path = replay(work, "http", n + warmup)
    log = work / "http-server.log"  # a file, not a pipe: a full pipe would stall the server
    t0 = time.perf_counter()
    with log.open("w") as err:
        proc = subprocess.Popen([*serve_command(), "--transport", "http", "--port", "0", "--lm", f"replay:{path}"],
                                env=env_for(work / "http-home"), stdout=subprocess.DEVNULL, stderr=err)
    try:
        while not (found := re.search(r"(http://127\.0\.0\.1:\d+/mcp)", log.read_text())):
            if proc.poll() is not None or time.perf_counter() - t0 > 120:
                raise SystemExit(f"the HTTP server did not announce its URL: {log.read_text()[-2000:]}")
            time.sleep(0.05)
        url = found.group(1)

        async def main() -> tuple[list[float], float]:
            async with Client(url, read_timeout_seconds=120) as client:
                await client.list_tools()
                ready = time.perf_counter() - t0
                return await _drive(client, model, n, warmup), ready

        return anyio.run(main)
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100, help="Timed calls per path.")
    parser.add_argument("--warmup", type=int, default=5, help="Untimed calls first, per path.")
    parser.add_argument("--model", default="anthropic/claude-sonnet-4-6", help="Model id (its tier picks the path).")
    args = parser.parse_args()
    apply_offline_defaults()
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        work = Path(tmp)
        runs = {"in-process Planner.plan": in_process(work, args.model, args.n, args.warmup),
                "MCP over stdio": over_stdio(work, args.model, args.n, args.warmup),
                "MCP over HTTP": over_http(work, args.model, args.n, args.warmup)}
    base = statistics.median(runs["in-process Planner.plan"][0])
    print(f"{args.n} calls per path after {args.warmup} warm-up calls; model {args.model}; replay LM\n")
    print(f"{'path':26} {'median ms':>10} {'p90 ms':>8} {'x in-proc':>10} {'overhead ms':>12} {'ready s':>8}")
    for name, (times, ready) in runs.items():
        med = statistics.median(times)
        p90 = statistics.quantiles(times, n=10)[-1]
        print(f"{name:26} {med * 1000:10.2f} {p90 * 1000:8.2f} {med / base:10.2f} {(med - base) * 1000:12.2f} "
              f"{ready:8.2f}")
    print("\nready: servers from process spawn to the first answered request; in-process from Planner.for_model "
          "(imports already done) to a built planner")


if __name__ == "__main__":
    main()
