"""Soak benchmark of the MCP server's memory (issue 40, item 3): N ``helmdeck.plan`` calls over
streamable HTTP to one ``helmdeck-dspy serve`` process, with distinct intents, 50 caller tool lists
in turn (every other call plans over the server's own catalog) and four model ids, while the
server's RSS is sampled every 1,000 calls. Run twice: with the simulated LM, and against a loopback
OpenAI-compatible endpoint this script starts (so LiteLLM, the wire and DSPy's response cache, on
by default, are in the loop). It prints RSS per 1,000 calls, the slope per 1,000 calls after
warm-up, and the change between calls 5,000 and N.

    .venv/bin/python measure/soak_serve.py [--n 20000] [--only sim|loopback]
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
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from helmdeck_dspy.io.offline import apply_offline_defaults

MODELS = ["openai/gpt-4o", "anthropic/claude-sonnet-4-6", "local/qwen2.5-coder-1.5b-instruct", "groq/llama-3.1-8b-instant"]
PLAN = json.dumps({"steps": [{"order": 1, "tool": "tool_0_0", "args": {}, "rationale": "r"}]})


class _Loopback(BaseHTTPRequestHandler):
    """A chat-completions endpoint that answers every request with the same plan."""

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": PLAN}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def _args(i: int) -> dict:
    tools = [{"name": f"tool_{i % 50}_{k}", "description": f"Does thing {k} of set {i % 50}.",
              "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}} for k in range(3)]
    args = {"user_intent": f"please do thing {i} for me now", "model": MODELS[i % 4]}
    return {**args, "tools": tools} if i % 2 else args


def soak(lm_args: list[str], n: int, work: Path, env: dict[str, str]) -> list[tuple[int, float, float]]:
    """(calls done, server RSS MB, calls per second so far) every 1,000 calls."""
    import anyio
    from mcp import Client

    log = work / "server.log"
    command = [sys.executable, "-c", "from helmdeck_dspy.cli import main; main()", "serve", "--transport", "http",
               "--port", "0", "--no-history", *lm_args]
    with log.open("w") as err:
        proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=err)
    try:
        t0 = time.perf_counter()
        while not (found := re.search(r"(http://127\.0\.0\.1:\d+/mcp)", log.read_text())):
            if proc.poll() is not None or time.perf_counter() - t0 > 120:
                raise SystemExit(f"the server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.05)
        samples: list[tuple[int, float, float]] = []

        async def drive() -> None:
            async with Client(found.group(1), read_timeout_seconds=120) as client:
                start = time.perf_counter()
                for i in range(1, n + 1):
                    result = await client.call_tool("helmdeck.plan", _args(i))
                    if result.is_error and i == 1:
                        raise SystemExit(f"the first call failed: {result.content}")
                    if i % 1000 == 0:
                        samples.append((i, _rss_mb(proc.pid), i / (time.perf_counter() - start)))
                        print(f"  {i:6d} calls  RSS {samples[-1][1]:7.1f} MB  {samples[-1][2]:6.1f} calls/s", flush=True)

        anyio.run(drive)
        return samples
    finally:
        proc.terminate()
        proc.wait(30)


def report(name: str, samples: list[tuple[int, float, float]]) -> None:
    after = [(c, r) for c, r, _ in samples if c >= 5000]
    if len(after) >= 2:
        xs, ys = [c / 1000 for c, _ in after], [r for _, r in after]
        slope = statistics.linear_regression(xs, ys).slope
        first, last = after[0][1], after[-1][1]
        print(f"{name}: slope after 5,000 calls {slope:+.2f} MB per 1,000 calls; RSS {first:.1f} MB at 5,000, "
              f"{last:.1f} MB at {after[-1][0]:,} ({(last - first) / first * 100:+.1f}%)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20_000, help="Calls per run.")
    parser.add_argument("--only", choices=["sim", "loopback"], default=None, help="Run one of the two.")
    args = parser.parse_args()
    apply_offline_defaults()
    with tempfile.TemporaryDirectory(prefix="helmdeck-soak-") as tmp:
        work = Path(tmp)
        env = {**os.environ, "HELMDECK_DSPY_HOME": str(work / "home"), "HELMDECK_DSPY_CACHE": str(work / "cache"),
               "DSPY_CACHEDIR": str(work / "cache"), "OPENAI_API_KEY": "sk-soak-loopback"}
        if args.only in (None, "sim"):
            print("simulated LM (sim:mid-tier)")
            report("sim", soak(["--lm", "sim:mid-tier"], args.n, work, env))
        if args.only in (None, "loopback"):
            server = ThreadingHTTPServer(("127.0.0.1", 0), _Loopback)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            try:
                url = f"http://127.0.0.1:{server.server_address[1]}/v1"
                print(f"loopback OpenAI-compatible endpoint ({url}), DSPy's response cache on")
                report("loopback", soak(["--lm", "openai/soak-model", "--api-base", url], args.n, work, env))
            finally:
                server.shutdown()


if __name__ == "__main__":
    main()
