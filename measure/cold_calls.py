"""Cold calls in an end-to-end study: model calls over a long prompt that the server evaluated from
the start, per row, from the run's own files.

A call is *long* when its prompt holds at least ``--tokens`` tokens (4,000: a prompt with the whole
tool list of the end-to-end servers, about 5,500 tokens; a narrowed recheck holds about 1,500), and
*cold* when it took at least ``--seconds`` (40 s). On 2 cores a long prompt whose prefix the server
kept answers in 2-10 s, one evaluated from the start in 80-115 s, so the two do not overlap. Calls
are the plan calls of the row's trace (``traces/<row>.jsonl``) and the conversation turns its result
lines keep (``turns``); a plan call that ended on its deadline is counted apart. Counting calls, not
seconds, compares runs on servers of different speed.

    .venv/bin/python measure/cold_calls.py experiments/e2e/openings-dev/study.toml
"""

from __future__ import annotations

import argparse
import statistics


def main() -> None:
    from helmdeck_dspy.bench.e2e.run import load_results
    from helmdeck_dspy.bench.study.spec import load_study_spec
    from helmdeck_dspy.traces.io import load_traces

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec")
    parser.add_argument("--tokens", type=int, default=4000, help="the least prompt of a long call")
    parser.add_argument("--seconds", type=float, default=40.0, help="the least time of a cold call")
    args = parser.parse_args()
    spec = load_study_spec(args.spec)
    print(f"{spec.path}: calls over {args.tokens:,} prompt tokens; cold = {args.seconds:g} s or more")
    print("| row | tasks | done | long calls | cold | deadlines | long warm p50 s | long cold p50 s |")
    print("|---|---|---|---|---|---|---|---|")
    for config in spec.config:
        results = load_results(spec.folder / f"{config.name}.jsonl")
        if not results:
            continue
        calls: list[tuple[int, float]] = []  # (prompt tokens, seconds)
        deadlines = 0
        trace = spec.folder / "traces" / f"{config.name}.jsonl"
        if trace.exists():
            for r in load_traces(trace, on_error="skip"):
                if r.error:
                    deadlines += "Deadline" in r.error
                elif r.prompt_tokens and r.latency_ms:
                    calls.append((r.prompt_tokens, r.latency_ms / 1000))
        for result in results.values():
            for turn in result.turns:
                if isinstance(turn, dict) and turn.get("prompt_tokens") and turn.get("latency_ms"):
                    calls.append((int(turn["prompt_tokens"]), float(turn["latency_ms"]) / 1000))
        long = [s for tokens, s in calls if tokens >= args.tokens]
        cold = [s for s in long if s >= args.seconds]
        warm = [s for s in long if s < args.seconds]
        done = sum(r.success for r in results.values())

        def p50(xs: list[float]) -> str:
            return f"{statistics.median(xs):.1f}" if xs else "-"

        print(f"| {config.name} | {len(results)} | {done} | {len(long)} | {len(cold)} | {deadlines} | "
              f"{p50(warm)} | {p50(cold)} |")


if __name__ == "__main__":
    main()
