"""`make demo-live`'s agent: end-to-end tasks run by the planner's loop over the six real MCP servers
with a local model, each in a fresh sandbox, printed as the conversation went and checked as the
study checks them (issue 55). Every model call is live: on 2 cores a task takes 5-100 s.

    .venv/bin/python scripts/demo_agent.py --model local/qwen2.5-coder-1.5b-instruct \
        --lm local:qwen2.5-coder-1.5b git-08 filesystem-12 multi-server-06
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from helmdeck_dspy.io.offline import apply_offline_defaults  # noqa: E402


def main() -> None:
    apply_offline_defaults()
    parser = argparse.ArgumentParser(description="Run end-to-end tasks live and print each conversation.")
    parser.add_argument("--model", required=True)
    parser.add_argument("--lm", required=True)
    parser.add_argument("tasks", nargs="+", help="Task ids of eval/e2e/tasks.jsonl")
    args = parser.parse_args()

    from helmdeck_dspy.bench.e2e import MAX_STEPS, TIME_CAP_S
    from helmdeck_dspy.bench.e2e.checks import load_e2e_tasks
    from helmdeck_dspy.bench.e2e.run import StudySetup, run_task
    from helmdeck_dspy.planning.dialogue import task_agent
    from helmdeck_dspy.planning.planner import Planner

    from helmdeck_dspy.io.resources import bundled_dir

    tasks = {t.id: t for t in load_e2e_tasks(bundled_dir() / "e2e" / "tasks.jsonl")[0]}
    unknown = [t for t in args.tasks if t not in tasks]
    if unknown:
        raise SystemExit(f"unknown task ids: {unknown}")
    setup = StudySetup(npm_dir=Path(".mcp-servers").resolve(),
                       sqlite_command=Path(".mcp-servers/sqlite/bin/mcp-server-sqlite").resolve())
    done = 0
    for task_id in args.tasks:
        task = tasks[task_id]
        print(f"\n\033[1m== {task.id}: {task.intent}\033[0m")
        result = run_task(task, "planner", lambda catalog: task_agent(Planner.for_model(
                              args.model, lm=args.lm, catalog=catalog, history=None, cache=False)),
                          setup=setup, model=args.model, lm=args.lm, max_steps=MAX_STEPS, time_cap_s=TIME_CAP_S)
        for i, step in enumerate(result.steps, 1):
            mark = "error" if step.error else "ok"
            print(f"  {i}. {step.tool}({json.dumps(step.args, ensure_ascii=False)}) -> {mark}: "
                  f"{step.result[:160].strip()!r}")
        if not result.steps:
            print("  (no call)")
        print(f"  the loop stopped: {result.stopped_because}; {result.plan_calls} plan call(s), {result.seconds:.1f} s")
        print(f"  checks: {'all held: DONE' if result.success else 'NOT DONE'} {result.checks}")
        done += result.success
    print(f"\n{done} of {len(args.tasks)} tasks done (live, {args.lm})")


if __name__ == "__main__":
    main()
