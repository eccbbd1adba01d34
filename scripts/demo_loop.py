"""The single_pick loop against a live model, for `make demo-live`.

Plans one step, pretends to run it (the demo has no tool gateway: each step's output is a short
stand-in text), and plans again with the executed steps, until the model says no more steps are
likely or the step cap is reached.

    .venv/bin/python scripts/demo_loop.py --model MODEL_ID --lm LM_SPEC "an intent" [--max-steps 4]
"""

from __future__ import annotations

import argparse
import time

from helmdeck_dspy import Planner
from helmdeck_dspy.io.offline import apply_offline_defaults


def main() -> None:
    apply_offline_defaults()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("intent")
    parser.add_argument("--model", required=True)
    parser.add_argument("--lm", required=True)
    parser.add_argument("--max-steps", type=int, default=4)
    args = parser.parse_args()

    planner = Planner.for_model(args.model, lm=args.lm, variant="single_pick")
    t0 = time.perf_counter()

    def execute(step):
        print(f"  run step {step.order}: {step.tool} {step.args or ''}".rstrip())
        return f"(demo: {step.tool} was not really run)"

    loop = planner.run_loop(args.intent, execute=execute, max_steps=args.max_steps)
    for i, plan in enumerate(loop.plans, 1):
        what = f"{len(plan.steps)} step(s), more likely: {plan.more_steps_likely}" if plan.ok else \
            f"failed: {plan.failure_cause}"
        print(f"  call {i}: {plan.parse_outcome or '-'}; {what}")
    print(f"stopped: {loop.stopped_because} after {len(loop.executed)} step(s), {len(loop.plans)} plan call(s), "
          f"{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
