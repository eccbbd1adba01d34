"""Time per request (or per end-to-end task) of each row of a study against its baseline, from the
study's own files: p50 and p90 over the cases both rows answered, and the ratio of the p50s (issue 54,
item 4). A benchmark, not a test: the figures are what the study's run measured, both rows on the same
engine and settings in that one run.

    .venv/bin/python measure/latency_ratio.py experiments/e2e/stream-test/study.toml [MORE SPECS...]
        [--prefill TPS --decode TPS] [--baseline ROW]

With the engine's rates (``measure/engine_rates.py`` on the same machine and engine), each row of a
request study also shows its floor, p50 over its requests: every prompt token prefilled and every
output token decoded at those rates (``cold``), and the output tokens alone (``cached``: the prompt
already evaluated, as over a stable tool list). An end-to-end task's floor sums its model calls
(``model_tokens`` in its result line: each plan call or turn's prompt and completion tokens, of a plan
asked more than once its last): cold counts every prompt token, so a conversation's re-sent history is
counted at each turn and the true floor lies between the two. Result lines recorded before
2026-12-01 hold no tokens: their floor is shown as ``-``.

``--baseline`` reads every row against another row than the spec's baseline (an end-to-end study
has two model-alone loops: the JSON-list one and the chat-format one).

A study whose rows ran in different runs (rows added later) is read the same way, but its ratio is
then not a same-run comparison: the spec's comments say which rows ran together.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from helmdeck_dspy.bench.study.spec import load_study_spec
from helmdeck_dspy.bench.study.table import outcomes_by_config


def quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile (inclusive method; the value itself for one)."""
    return values[0] if len(values) == 1 else statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]


def floors(outcomes: list, prefill: float, decode: float) -> tuple[float, float] | None:
    """The p50 of each request's cold floor and of its output-only floor, in seconds (None without tokens)."""
    known = [o for o in outcomes if o.prompt_tokens is not None and o.completion_tokens is not None]
    if not known:
        return None
    cold = [o.prompt_tokens / prefill + o.completion_tokens / decode for o in known]
    return statistics.median(cold), statistics.median([o.completion_tokens / decode for o in known])


def report(spec_path: Path, rates: tuple[float, float] | None = None, baseline: str | None = None) -> list[str]:
    spec = load_study_spec(spec_path)
    by_config = outcomes_by_config(spec)
    baseline = baseline or spec.baseline
    if baseline not in by_config:
        raise SystemExit(f"{spec_path}: no row named {baseline!r} has results (rows: {', '.join(sorted(by_config))})")
    unit = "task" if spec.e2e is not None else "request"
    lines = [f"{spec_path}: seconds per {unit}, over the cases each row shares with `{baseline}`"
             + (f"; floors at {rates[0]:g} prefill and {rates[1]:g} decode tokens/s" if rates else ""),
             "| row | cases | p50 | p90 | baseline p50 | baseline p90 | p50 ratio |" + (" floor p50 cold / cached |" if rates else ""),
             "|---|---|---|---|---|---|---|" + ("---|" if rates else "")]
    base = by_config[baseline]
    for config in spec.config:
        mine = by_config.get(config.name, {})
        shared = [k for k in mine if k in base and mine[k].latency_ms is not None and base[k].latency_ms is not None]
        if not shared:
            continue
        a = [mine[k].latency_ms / 1000 for k in shared]  # type: ignore[operator]
        b = [base[k].latency_ms / 1000 for k in shared]  # type: ignore[operator]
        ratio = statistics.median(a) / statistics.median(b) if statistics.median(b) else float("nan")
        line = (f"| {config.name} | {len(shared)} | {statistics.median(a):.1f} | {quantile(a, 0.9):.1f} | "
                f"{statistics.median(b):.1f} | {quantile(b, 0.9):.1f} | {ratio:.2f}x |")
        if rates:
            floor = floors([mine[k] for k in shared], *rates)
            line += f" {floor[0]:.1f} / {floor[1]:.1f} |" if floor else " - |"
        lines.append(line)
    return lines


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("specs", nargs="+", type=Path)
    parser.add_argument("--prefill", type=float, help="prefill tokens per second (measure/engine_rates.py)")
    parser.add_argument("--decode", type=float, help="decode tokens per second (measure/engine_rates.py)")
    parser.add_argument("--baseline", help="the row to read every row against (default: the spec's baseline)")
    args = parser.parse_args()
    if (args.prefill is None) != (args.decode is None):
        parser.error("--prefill and --decode go together")
    for path in args.specs:
        print("\n".join(report(path, (args.prefill, args.decode) if args.prefill else None, args.baseline)), end="\n\n")
