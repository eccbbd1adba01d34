"""Warm latency of plan calls over a stable tool list, in blocks of consecutive calls (issue 38, item 4).

An agent sends the same tools on every call. Here one local llama.cpp server answers a block of N
consecutive requests of the MCP dev set (eval/tasks/mcp-servers.jsonl over its 37 tools) for each
arm, and the block runs once with the server's RAM cache of evaluated prompts (the default, 4
states) and once without it (llama.cpp's last prompt only):

- ``alone``: the model-alone request (every tool as a JSON function, the question, the ask);
- ``planner``: ``Planner.for_model`` as shipped: for the 1.5B the ``plain`` strategy, which shows
  the whole list when it fits and asks a declined first plan once more over the top 10 tools
  (that second prompt is what the cache keeps the whole list's state through).

The first call of each block is cold and reported apart. Per call, the server's log gives the
prompt tokens it evaluated and its prefill and decode times; the floor of a call is the request's
own tokens (the question and the ask after the shared list of tools) at the block's measured prefill rate plus
its output tokens at the measured decode rate (over the requests answered in one call), and is
printed beside the p50. llama-server (``--engine llama-server``) logs no timings for a request whose
stream was closed where its answer ended (most of them), so there the floor takes the rates given
with ``--prefill`` and ``--decode`` (tokens per second, from ``measure/engine_rates.py``), which
override the log's for either engine.

    .venv/bin/python measure/warm_latency.py [--model qwen2.5-coder-1.5b] [--n 12] [--engine llama-server
        --prefill 91 --decode 30]
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
import warnings
from pathlib import Path

from helmdeck_dspy.io.offline import apply_offline_defaults

ROOT = Path(__file__).resolve().parents[1]
CATALOG = ROOT / "eval" / "catalog" / "mcp-servers.json"
TASKS = ROOT / "eval" / "tasks" / "mcp-servers.jsonl"
TIMEOUT_S = 900.0
_PREFILL = re.compile(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")
_DECODE = re.compile(r"\beval time =\s*([\d.]+) ms /\s*(\d+) (?:runs|tokens)")


def server_times(log_text: str) -> list[tuple[float, int, float, int]]:
    """(prefill ms, tokens evaluated, decode ms, tokens decoded) of each completion in a log excerpt."""
    prefill = [(float(ms), int(n)) for ms, n in _PREFILL.findall(log_text)]
    decode = [(float(ms), int(n)) for ms, n in _DECODE.findall(log_text.replace("prompt eval time", "prompt-eval"))]
    return [(p[0], p[1], d[0], d[1]) for p, d in zip(prefill, decode)]


def run_block(arm: str, server, model_id: str, intents: list[str]) -> list[dict]:
    """One block: each intent planned in turn; per intent its latency and the server's timings."""
    from helmdeck_dspy.bench.bfcl.baseline import ask_plain
    from helmdeck_dspy.catalog.models import load_catalog
    from helmdeck_dspy.engines.lm_spec import make_lm
    from helmdeck_dspy.local.provider import PREFIX
    from helmdeck_dspy.planning.planner import Planner
    from helmdeck_dspy.planning.resilience.policy import RetryPolicy

    catalog = load_catalog(CATALOG)
    lm = make_lm(f"{PREFIX}/{server.alias}", api_base=server.api_base, api_key="none", cache=False, num_retries=0,
                 timeout=TIMEOUT_S)  # a cold prefill of the whole list takes minutes on 2 cores
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        planner = Planner.for_model(model_id, lm=lm, catalog=catalog, history=None, use_filter=False, cache=False,
                                    retry=RetryPolicy(max_attempts=1, timeout_s=TIMEOUT_S))
    rows = []
    for intent in intents:
        offset = server.log_path.stat().st_size
        t0 = time.perf_counter()
        if arm == "planner":
            result = planner.plan(intent)
            prompt, out = result.usage.get("prompt_tokens", 0), result.usage.get("completion_tokens", 0)
        else:
            done = ask_plain(lm, intent, catalog, max_tokens=planner.budget.output_tokens,
                             sampling={"temperature": 0.0, "seed": 7})
            prompt, out = done.prompt_tokens, done.completion_tokens
        ms = (time.perf_counter() - t0) * 1000
        time.sleep(0.3)  # the server writes its timing lines after answering
        with open(server.log_path, encoding="utf-8", errors="replace") as log:
            log.seek(offset)
            times = server_times(log.read())
        rows.append({"ms": ms, "calls": len(times), "prompt": prompt, "out": out, "times": times,
                     "own": own_tokens(intent)})
        print(f"  {arm:7} {ms / 1000:7.1f} s  {len(times)} call(s), evaluated {[t[1] for t in times]} of {prompt} "
              f"prompt tokens, {[t[3] for t in times]} decoded", flush=True)
    return rows


def own_tokens(intent: str) -> int:
    """The tokens of a request after the shared list of tools: the question, the ask and the chat
    template's closing turn (about 10 tokens), counted with cl100k_base."""
    from helmdeck_dspy.io.tokens import count_tokens
    from helmdeck_dspy.program.plain_prompt import ASK

    return count_tokens(f"Question: {intent}\n\n{ASK}") + 10


def floor_ms(rows: list[dict], rates: tuple[float, float] | None = None) -> float:
    """Median floor of the warm one-call requests: own tokens at the block's prefill rate plus output at
    its decode rate (a recheck's second prompt shares no prefix: its floor is not a warm call's);
    ``rates`` (prefill, decode tokens per second) in place of the log's."""
    times = [t for r in rows for t in r["times"]]
    if rates:
        per_prefill, per_decode = 1000 / rates[0], 1000 / rates[1]
    else:
        per_prefill = sum(t[0] for t in times) / max(sum(t[1] for t in times), 1)
        per_decode = sum(t[2] for t in times) / max(sum(t[3] for t in times), 1)
    single = [r for r in rows if r["calls"] == 1] or rows
    return statistics.median(r["own"] * per_prefill + r["out"] * per_decode for r in single)


def main() -> None:
    apply_offline_defaults()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b", help="An installed local model.")
    parser.add_argument("--n", type=int, default=12, help="Consecutive requests per block (the first is cold).")
    parser.add_argument("--cache", type=int, nargs="+", default=[4, 0], help="RAM cache sizes to run (0: off).")
    parser.add_argument("--engine", choices=["llama-cpp-python", "llama-server"], default="llama-cpp-python")
    parser.add_argument("--context", type=int, default=8192, help="The served context (tokens).")
    parser.add_argument("--prefill", type=float, help="Prefill rate for the floor, tokens/s (default: the log's).")
    parser.add_argument("--decode", type=float, help="Decode rate for the floor, tokens/s (default: the log's).")
    args = parser.parse_args()
    if (args.prefill is None) != (args.decode is None):
        parser.error("--prefill and --decode go together")
    rates = (args.prefill, args.decode) if args.prefill else None

    from helmdeck_dspy.local.install import require_installed
    from helmdeck_dspy.local.registry import get_model
    from helmdeck_dspy.local.server import LocalServer, ServerOptions
    from helmdeck_dspy.tasks import load_tasks

    model = get_model(args.model)
    intents = [t.intent for t in load_tasks(path=TASKS)][: args.n]
    results = []
    for entries in args.cache:
        server = LocalServer(require_installed(model), model.name,
                             options=ServerOptions(n_ctx=args.context, prompt_cache_entries=entries, engine=args.engine))
        server.start()
        print(f"{model.name} on {args.engine}, RAM cache {entries or 'off'}; log {server.log_path}", flush=True)
        try:
            for arm in ("alone", "planner"):
                rows = run_block(arm, server, model.model_id, intents)
                results.append((entries, arm, rows))
        finally:
            server.stop()
    print(f"\n{'cache':>5} {'arm':8} {'cold s':>7} {'warm p50 s':>10} {'floor p50 s':>11} {'p50/floor':>9} "
          f"{'warm mean s':>11} {'calls':>5}")
    for entries, arm, rows in results:
        warm = rows[1:]
        p50 = statistics.median(r["ms"] for r in warm)
        floor = floor_ms(warm, rates)
        print(f"{entries or 'off':>5} {arm:8} {rows[0]['ms'] / 1000:7.1f} {p50 / 1000:10.1f} {floor / 1000:11.1f} "
              f"{p50 / floor:9.2f} {statistics.mean(r['ms'] for r in warm) / 1000:11.1f} "
              f"{sum(r['calls'] for r in warm):5d}")


if __name__ == "__main__":
    main()
