"""Write budget-rows.json for the studies that ran before their runners recorded it (issue 41, item 5).

A study's runner now records the budget row it runs under (``helmdeck_dspy.bench.provenance``). The
studies committed before that are recovered from git: for every commit that added or changed a
study's answers (its trace files, result lines or compiled programs), the model's row in
``compiled/budgets.toml`` just before that commit and at it, reduced to the fields that shape a
plan call. Each distinct row becomes an entry with the commits it was found at. Run from the
repository root; it rewrites the files it names and nothing else. (``experiments/e2e/study`` has since
been split into ``experiments/e2e/qwen2.5-coder-0.5b`` and ``-1.5b``, each with its model's rows.)
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

from helmdeck_dspy.budgets import PLAN_FIELDS, BudgetFields, row_sha

STUDIES = {
    "experiments/bfcl/qwen2.5-coder-0.5b": ["local/qwen2.5-coder-0.5b-instruct"],
    "experiments/bfcl/qwen2.5-coder-1.5b": ["local/qwen2.5-coder-1.5b-instruct"],
    "experiments/catalog-size/qwen2.5-coder-0.5b": ["local/qwen2.5-coder-0.5b-instruct"],
    "experiments/catalog-size/qwen2.5-coder-1.5b": ["local/qwen2.5-coder-1.5b-instruct"],
    "experiments/heldout/qwen2.5-coder-0.5b": ["local/qwen2.5-coder-0.5b-instruct"],
    "experiments/test-split/qwen2.5-coder-0.5b": ["local/qwen2.5-coder-0.5b-instruct"],
    "experiments/test-split/qwen2.5-coder-1.5b": ["local/qwen2.5-coder-1.5b-instruct"],
    "experiments/mcp/qwen2.5-coder-1.5b": ["local/qwen2.5-coder-1.5b-instruct"],
    "experiments/e2e/study": ["local/qwen2.5-coder-0.5b-instruct", "local/qwen2.5-coder-1.5b-instruct"],
    "experiments/e2e/fill-test": ["local/qwen2.5-coder-1.5b-instruct"],
}
ANSWERS = ("*.jsonl", "traces", "programs")
DEFAULTS = {name: field.default for name, field in BudgetFields.model_fields.items() if not field.is_required()}


def git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


def plan_row_at(commit: str, model: str) -> dict | None:
    try:
        table = tomllib.loads(git("show", f"{commit}:compiled/budgets.toml"))
    except subprocess.CalledProcessError:
        return None
    row = next((r for r in table.get("model", []) if r["match"] == model), None)
    return None if row is None else {name: row.get(name, DEFAULTS.get(name)) for name in PLAN_FIELDS}


def recover(folder: str, models: list[str]) -> dict[str, list[dict]]:
    commits = git("log", "--format=%h", "--", *(f"{folder}/{pattern}" for pattern in ANSWERS)).split()[::-1]
    out: dict[str, list[dict]] = {}
    for model in models:
        entries: dict[str, dict] = {}
        for commit in commits:
            for at in (f"{commit}^", commit):
                fields = plan_row_at(at, model)
                if fields is None:
                    continue
                sha = row_sha(fields)
                entry = entries.setdefault(sha, {"sha": sha, "fields": fields, "recovered_from_git": []})
                if commit not in entry["recovered_from_git"]:
                    entry["recovered_from_git"].append(commit)
        out[model] = list(entries.values())
    return out


def main() -> int:
    for folder, models in STUDIES.items():
        rows = recover(folder, models)
        Path(folder, "budget-rows.json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
        print(folder, {m: [e["sha"] for e in v] for m, v in rows.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
