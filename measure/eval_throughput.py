"""Replay-evaluation throughput, memory against record count, and scaling to 2 workers.

Writes synthetic trace files from the labelled parser corpus (measure/parse_corpus.py),
then runs ``evaluate()`` on each in a fresh process and reads that process's peak RSS. The
baseline for throughput is the same run with one worker; for memory, the smallest file.

    .venv/bin/python measure/eval_throughput.py [--sizes 20000,200000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from parse_corpus import make_corpus  # noqa: E402

MODELS = ["openrouter/nvidia/nemotron-3-super-120b-a12b:free", "anthropic/claude-sonnet-4-6", "openrouter/deepseek/deepseek-v3.2"]

CHILD = """
import json, resource, sys, time
from helmdeck_dspy.evaluation.runner import evaluate
path, workers = sys.argv[1], int(sys.argv[2])
t0 = time.perf_counter()
r = evaluate([path], workers=workers, progress=False)
secs = time.perf_counter() - t0
rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
child_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"records": r.n_records, "seconds": secs, "rss_mb": rss_kb / 1024, "worker_rss_mb": child_kb / 1024}))
"""


def write_set(path: Path, n: int) -> None:
    corpus = make_corpus(min(n, 12_000))
    with path.open("w") as f:
        for i in range(n):
            rec = corpus[i % len(corpus)]
            f.write(json.dumps({
                "id": f"r{i}", "source": "bench", "model": MODELS[i % 3],
                "prompt_variant": "full_steps" if i % 2 else "single_pick", "content": rec.content,
                "finish_reason": rec.finish_reason, "reasoning_content": rec.reasoning_content,
                "completion_tokens": 100 + i % 900, "latency_ms": 500.0 + i % 5000, "max_tokens": 1500,
            }) + "\n")


def run(path: Path, workers: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), str(workers)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="20000,200000")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for n in sizes:
            path = Path(tmp) / f"t{n}.jsonl"
            write_set(path, n)
            one, two = run(path, 1), run(path, 2)
            rows.append((n, one, two))
    print(f"{'records':>8} {'1 worker rec/s':>15} {'2 workers rec/s':>16} {'speed-up':>9} {'peak RSS MB (1w)':>17}")
    for n, one, two in rows:
        r1, r2 = one["records"] / one["seconds"], two["records"] / two["seconds"]
        print(f"{n:8d} {r1:15,.0f} {r2:16,.0f} {r2 / r1:8.2f}x {one['rss_mb']:17.1f}")
    base = rows[0][1]["rss_mb"]
    last = rows[-1][1]["rss_mb"]
    print(f"\nmemory: {rows[-1][0] // rows[0][0]}x the records -> {last / base:.2f}x the peak RSS "
          f"({base:.1f} -> {last:.1f} MB); times cover evaluate() only: loading the catalog, tasks and budgets, starting workers, replaying")


if __name__ == "__main__":
    main()
