"""How long a stalled model server holds a plan call, against the attempt deadline.

Each fault of the test matrix whose reply comes too late (a first byte after 3 s, headers then
nothing, half a body then nothing, a body a byte every 0.2 s) is served from a loopback fault
server to ``Planner.plan`` with one attempt under a 0.6 s deadline. The baseline, measured in the
same run, is the same call with no deadline of the planner's (only the client's own timeout, as
a caller of ``dspy.LM`` gets): how long the stall would have held the caller without it.

    .venv/bin/python measure/fault_deadlines.py [--repeat 3]

Run it from the project root (it imports the test suite's fault server).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from helmdeck_dspy.io.offline import apply_offline_defaults  # noqa: E402

DEADLINE_S = 0.6
CLIENT_TIMEOUT_S = 8.0
"""The baseline's client timeout: the server stalls 10 s, so the baseline ends by it or by the reply."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    apply_offline_defaults()
    from helmdeck_dspy.planning.planner import Planner
    from helmdeck_dspy.planning.resilience.policy import RetryPolicy
    from tests.fault_server import FaultServer, ok, slow, stall_body, stall_headers, trickle

    plan = '{"steps": [], "complexity": "single-action", "more_steps_likely": false, "reasoning": "none"}'
    faults = {"first_byte_late": lambda: slow(3.0, ok(plan)), "stall_after_headers": stall_headers,
              "stall_mid_body": stall_body, "trickle_body": lambda: trickle(0.2, ok(plan))}

    def timed(reply, timeout_s: float) -> tuple[float, str | None]:
        with FaultServer([reply], deadline_s=30) as server, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            planner = Planner.for_model("openai/fault-model", lm="openai/fault-model", api_base=server.url,
                                        api_key="sk-fake", engine="litellm", cache=False, use_filter=False,
                                        retry=RetryPolicy(max_attempts=1, timeout_s=timeout_s))
            t0 = time.perf_counter()
            result = planner.plan("write a blog post")
            return time.perf_counter() - t0, result.failure_cause

    timed(ok(plan), 30)  # warm the client: its first call imports LiteLLM
    print(f"{'fault':<22} {'deadline s':>10} {'with it s':>10} {'without s':>10} {'ratio':>6}  cause")
    for name, reply in faults.items():
        with_runs = [timed(reply(), DEADLINE_S) for _ in range(args.repeat)]
        without_runs = [timed(reply(), CLIENT_TIMEOUT_S) for _ in range(args.repeat)]
        w = statistics.median(t for t, _ in with_runs)
        wo = statistics.median(t for t, _ in without_runs)
        print(f"{name:<22} {DEADLINE_S:>10.1f} {w:>10.2f} {wo:>10.2f} {wo / w:>6.1f}  {with_runs[0][1]}")


if __name__ == "__main__":
    main()
