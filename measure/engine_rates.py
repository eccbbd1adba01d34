"""Prefill and decode rates of a local model on an engine, on this machine: the figures that set a
request's floor (issue 54, item 3). A benchmark, not a test.

For each engine asked, a server is started for the model (one slot, the prompt cache off so every
prefill is cold), then, ``--n`` times each: a prompt of about ``--prompt-tokens`` tokens (the bundled
MCP catalog's functions, cut to length, with a new first line each time so nothing is reused) asked for
1 token (cold), the same prompt for 1 token twice more (held: the least of the two is what a call
costs beyond prefill and decode), and once more for ``--decode`` + 1 tokens (the model writes what
it writes; its count is read back). Prefill rate: prompt tokens / (cold - held); decode rate: tokens
after the first / (that call - held). Rates are tokens per second, wall clock. The floor of a request is then ``prompt_tokens / prefill + output_tokens
/ decode`` (cold), ``output_tokens / decode`` when the prompt is cached.

    .venv/bin/python measure/engine_rates.py qwen2.5-coder-1.5b [--engine llama-cpp-python --engine llama-server]
        [--gguf OTHER.gguf]

``--gguf`` serves another file of the same model (a requantized one, say) in place of the installed
one; ``HELMDECK_LLAMA_SERVER`` names another llama-server build. Each output line says which.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from helmdeck_dspy.io.offline import apply_offline_defaults  # noqa: E402


def post_json(url: str, body: dict) -> dict:
    """POST ``body`` to a local server (no proxy) and return its JSON answer."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    call = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with opener.open(call, timeout=900) as reply:
        return json.loads(reply.read())


def measure(name: str, engine: str, n: int, prompt_tokens: int, decode: int, gguf: Path | None = None) -> dict:
    from helmdeck_dspy.local.engines import engine_named
    from helmdeck_dspy.local.install import require_installed
    from helmdeck_dspy.local.registry import get_model
    from helmdeck_dspy.local.server import LocalServer, ServerOptions

    model = get_model(name)
    server = LocalServer(gguf or require_installed(model), model.name,
                         options=ServerOptions(engine=engine, prompt_cache_entries=0))  # type: ignore[arg-type]
    prefill, decoding = [], []
    with server:
        url = server.api_base + "/chat/completions"

        def timed(messages: list[dict], max_tokens: int) -> tuple[float, dict]:
            t0 = time.perf_counter()
            done = post_json(url, {"model": model.name, "messages": messages, "max_tokens": max_tokens, "temperature": 0})
            return time.perf_counter() - t0, done

        for i in range(n + 1):  # the first round warms the process up and is not counted
            text = f"Request {i} {time.time_ns()}: which of these tools lists a directory?\n" + _catalog_text(prompt_tokens)
            messages = [{"role": "user", "content": text}]
            cold, first = timed(messages, 1)
            lookup = min(timed(messages, 1)[0] for _ in range(2))  # the same prompt, held: what a call costs besides
            warm, second = timed(messages, decode + 1)
            if i == 0:
                continue
            prefill.append((first.get("usage") or {}).get("prompt_tokens", prompt_tokens) / max(cold - lookup, 1e-6))
            made = (second.get("usage") or {}).get("completion_tokens") or decode + 1
            decoding.append((made - 1) / max(warm - lookup, 1e-6))
    program = getattr(engine_named(engine), "program", lambda: None)()  # the llama-server binary run
    return {"engine": engine, "program": program, "gguf": str(gguf or require_installed(model)), "model": name, "n": n, "prompt_tokens": (first.get("usage") or {}).get("prompt_tokens"),
            "prefill_tps": round(statistics.median(prefill), 1), "decode_tps": round(statistics.median(decoding), 2),
            "settings": {k: v for k, v in server.settings().items() if k not in ("port", "model_file")}}


def _catalog_text(tokens: int) -> str:
    """About ``tokens`` tokens of the bundled catalog (3.3 characters a token for its JSON)."""
    from helmdeck_dspy.io.resources import bundled_dir

    text = (bundled_dir() / "catalog" / "mcp-servers.json").read_text("utf-8")
    return (text * (1 + int(tokens * 3.3) // len(text)))[: int(tokens * 3.3)]


if __name__ == "__main__":
    apply_offline_defaults()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("--engine", action="append", choices=["llama-cpp-python", "llama-server"])
    parser.add_argument("--n", type=int, default=3)
    parser.add_argument("--prompt-tokens", type=int, default=1500)
    parser.add_argument("--decode", type=int, default=64)
    parser.add_argument("--gguf", type=Path, help="Serve this GGUF file of the model instead of the installed one.")
    args = parser.parse_args()
    for engine in args.engine or ["llama-cpp-python", "llama-server"]:
        print(json.dumps(measure(args.model, engine, args.n, args.prompt_tokens, args.decode, args.gguf)), flush=True)
