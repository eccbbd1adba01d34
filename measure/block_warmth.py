"""Prompt-prefix reuse in a lever run: the first call of each block against the calls after it.

A lever run (``bench study``) asks a block of questions under one row, then the same block under
the next row. On llama.cpp the server keeps the last prompt's evaluated tokens, so the first call of
a block re-evaluates the whole prompt (cold: the previous call was another row's prompt), and the
calls after it evaluate only what differs from the call before (warm: same instructions, same tool
list, only the request changes). Printed per row: median latency and prompt tokens of the cold and
the warm calls, and their ratio, all from the trace files of the same run.

    .venv/bin/python measure/block_warmth.py experiments/mcp/qwen2.5-coder-1.5b/study.toml
"""

from __future__ import annotations

import argparse
import statistics


def main() -> None:
    from helmdeck_dspy.bench.study.questions import load_questions
    from helmdeck_dspy.bench.study.spec import load_study_spec
    from helmdeck_dspy.traces.io import load_traces

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec")
    args = parser.parse_args()
    spec = load_study_spec(args.spec)
    order = [q.id for q in load_questions(spec).questions]
    first_of_block = {qid for i, qid in enumerate(order) if i % spec.block == 0}
    print(f"{'row':<16} {'cold n':>6} {'cold p50 s':>10} {'warm n':>6} {'warm p50 s':>10} {'cold/warm':>9} {'prompt tok p50':>14}")
    for config in spec.config:
        path = spec.trace_path(config)
        if not path.exists():
            continue
        records = [r for r in load_traces(path, on_error="skip") if r.call == "plan" and not r.error and r.latency_ms]
        cold = [r.latency_ms / 1000 for r in records if r.task_id in first_of_block]
        warm = [r.latency_ms / 1000 for r in records if r.task_id not in first_of_block]
        if not cold or not warm:
            continue
        c, w = statistics.median(cold), statistics.median(warm)
        tokens = statistics.median(r.prompt_tokens for r in records if r.prompt_tokens)
        print(f"{config.name:<16} {len(cold):>6} {c:>10.1f} {len(warm):>6} {w:>10.1f} {c / w:>8.1f}× {tokens:>14g}")


if __name__ == "__main__":
    main()
