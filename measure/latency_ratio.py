"""Time per request (or per end-to-end task) of each row of a study against its baseline, from the
study's own files: p50 and p90 over the cases both rows answered, and the ratio of the p50s (issue 54,
item 4). A benchmark, not a test: the figures are what the study's run measured, both rows on the same
engine and settings in that one run.

    .venv/bin/python measure/latency_ratio.py experiments/e2e/stream-test/study.toml [MORE SPECS...]

A study whose rows ran in different runs (rows added later) is read the same way, but its ratio is
then not a same-run comparison: the spec's comments say which rows ran together.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from helmdeck_dspy.bench.study.spec import load_study_spec
from helmdeck_dspy.bench.study.table import outcomes_by_config


def quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile (inclusive method; the value itself for one)."""
    return values[0] if len(values) == 1 else statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]


def report(spec_path: Path) -> list[str]:
    spec = load_study_spec(spec_path)
    by_config = outcomes_by_config(spec)
    unit = "task" if spec.e2e is not None else "request"
    lines = [f"{spec_path}: seconds per {unit}, over the cases each row shares with `{spec.baseline}`",
             f"| row | cases | p50 | p90 | baseline p50 | baseline p90 | p50 ratio |", "|---|---|---|---|---|---|---|"]
    base = by_config.get(spec.baseline, {})
    for config in spec.config:
        mine = by_config.get(config.name, {})
        shared = [k for k in mine if k in base and mine[k].latency_ms is not None and base[k].latency_ms is not None]
        if not shared:
            continue
        a = [mine[k].latency_ms / 1000 for k in shared]  # type: ignore[operator]
        b = [base[k].latency_ms / 1000 for k in shared]  # type: ignore[operator]
        ratio = statistics.median(a) / statistics.median(b) if statistics.median(b) else float("nan")
        lines.append(f"| {config.name} | {len(shared)} | {statistics.median(a):.1f} | {quantile(a, 0.9):.1f} | "
                     f"{statistics.median(b):.1f} | {quantile(b, 0.9):.1f} | {ratio:.2f}x |")
    return lines


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print("\n".join(report(Path(arg))), end="\n\n")
