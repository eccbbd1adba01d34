"""Check every end-to-end task against its known solution (bench/e2e/gold.py) on the real servers:
the solution passes, doing nothing (or, for a task that must not act, one write) fails.

    .venv/bin/python experiments/e2e/verify_tasks.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from helmdeck_dspy.bench.e2e.checks import load_e2e_tasks
from helmdeck_dspy.bench.e2e.gold import GOLD, verify_task
from helmdeck_dspy.bench.e2e.run import StudySetup

ROOT = Path(__file__).resolve().parents[2]
tasks, digest = load_e2e_tasks(ROOT / "eval" / "e2e" / "tasks.jsonl")
setup = StudySetup(npm_dir=ROOT / ".mcp-servers", sqlite_command=ROOT / ".mcp-servers" / "sqlite" / "bin" / "mcp-server-sqlite")
assert set(GOLD) == {t.id for t in tasks}, sorted(set(GOLD) ^ {t.id for t in tasks})
problems = [p for t in tasks for p in verify_task(t, setup)]
print("\n".join(problems) or f"all {len(tasks)} tasks verified (sha256 {digest})")
sys.exit(1 if problems else 0)
