"""One row of one study against a row of another run of the same cases: exact on the cases both
answered, the paired difference with its Newcombe interval, and how many cases changed each way.
For an engine or setting that cannot share a run with the row it is held against (issue 54: the
planner on llama-server against the planner as shipped on llama-cpp-python). A benchmark, not a test.

    .venv/bin/python measure/paired_runs.py AFTER_SPEC AFTER_ROW BEFORE_SPEC BEFORE_ROW
"""

from __future__ import annotations

import argparse
from pathlib import Path

from helmdeck_dspy.bench.study.spec import load_study_spec
from helmdeck_dspy.bench.study.table import outcomes_by_config
from helmdeck_dspy.evaluation.stats import newcombe_paired_diff


def compare(after: dict, before: dict) -> str:
    shared = sorted(k for k in after if k in before)
    both = sum(after[k].exact and before[k].exact for k in shared)
    gained = sum(after[k].exact and not before[k].exact for k in shared)
    lost = sum(before[k].exact and not after[k].exact for k in shared)
    neither = len(shared) - both - gained - lost
    d, low, high = newcombe_paired_diff(both, gained, lost, neither)
    return (f"{len(shared)} cases: exact {both + gained} after, {both + lost} before; paired "
            f"{100 * d:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}] points; {gained} gained "
            f"({', '.join(k for k in shared if after[k].exact and not before[k].exact) or '-'}), {lost} lost "
            f"({', '.join(k for k in shared if before[k].exact and not after[k].exact) or '-'})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("after_spec", type=Path)
    parser.add_argument("after_row")
    parser.add_argument("before_spec", type=Path)
    parser.add_argument("before_row")
    args = parser.parse_args()
    after = outcomes_by_config(load_study_spec(args.after_spec))[args.after_row]
    before = outcomes_by_config(load_study_spec(args.before_spec))[args.before_row]
    print(f"{args.after_spec} {args.after_row} against {args.before_spec} {args.before_row}: {compare(after, before)}")
