"""What ``logits_all`` costs on one block of dev requests (issue 38, item 2: price it before using it).

llama-cpp-python returns logprobs only when the model was loaded with ``logits_all=True``, which keeps
an ``n_ctx x vocabulary`` float array and computes the output layer for every prompt token. This
runs the same block of model-alone requests (the first N of the MCP dev set, eval/tasks/mcp-servers.jsonl,
over its 37 tools) through ``llama_cpp.Llama`` in a fresh process per setting, and prints per setting
the median call time, the peak resident memory, and the first answer's logprobs (present or not),
with the ratios against ``logits_all=False`` measured in the same run. The route the planner uses
instead (``local/next_token.py``) needs neither.

    .venv/bin/python measure/logits_all_cost.py [--model qwen2.5-coder-1.5b] [--n 6] [--n-ctx 8192]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CATALOG = ROOT / "eval" / "catalog" / "mcp-servers.json"
TASKS = ROOT / "eval" / "tasks" / "mcp-servers.jsonl"

_CHILD = r"""
import json, resource, statistics, sys, time
from llama_cpp import Llama
gguf, n_ctx, logits_all, prompts = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", json.loads(sys.stdin.read())
llama = Llama(model_path=gguf, n_ctx=n_ctx, n_threads=2, n_threads_batch=2, logits_all=logits_all, verbose=False)
times, logprobs = [], None
for text in prompts:
    t0 = time.perf_counter()
    out = llama.create_chat_completion(messages=[{"role": "user", "content": text}], temperature=0.0, seed=7,
                                       max_tokens=96, **({"logprobs": True, "top_logprobs": 5} if logits_all else {}))
    times.append(time.perf_counter() - t0)
    if logprobs is None:
        logprobs = out["choices"][0].get("logprobs") is not None
print(json.dumps({"median_s": statistics.median(times), "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "logprobs": logprobs, "calls": len(times)}))
"""


def prompts(n: int) -> list[str]:
    from helmdeck_dspy.catalog.models import load_catalog
    from helmdeck_dspy.program.plain_prompt import plain_functions, plain_request

    functions = plain_functions(load_catalog(CATALOG))
    intents = [json.loads(line)["intent"] for line in TASKS.read_text().splitlines() if line.strip()][:n]
    return [plain_request(functions, intent) for intent in intents]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--n", type=int, default=6)
    parser.add_argument("--n-ctx", type=int, default=8192)
    args = parser.parse_args()
    from helmdeck_dspy.local.registry import get_model, models_dir

    gguf = models_dir() / get_model(args.model).file_name
    block = json.dumps(prompts(args.n))
    results = {}
    for logits_all in (False, True):
        done = subprocess.run([sys.executable, "-c", _CHILD, str(gguf), str(args.n_ctx), "1" if logits_all else "0"],
                              input=block, capture_output=True, text=True, check=True)
        results[logits_all] = json.loads(done.stdout.strip().splitlines()[-1])
    base = results[False]
    print(f"{args.model}, {args.n} MCP dev requests (37 tools, model-alone prompt), n_ctx {args.n_ctx}, 2 threads")
    print("| logits_all | median call | peak RSS | logprobs returned |")
    print("|---|---|---|---|")
    for logits_all, r in results.items():
        time_note = f" ({r['median_s'] / base['median_s']:.2f}x)" if logits_all else ""
        rss_note = f" ({r['peak_rss_mb'] / base['peak_rss_mb']:.2f}x)" if logits_all else ""
        print(f"| {logits_all} | {r['median_s']:.1f} s{time_note} | {r['peak_rss_mb']:.0f} MB{rss_note} | {r['logprobs']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
