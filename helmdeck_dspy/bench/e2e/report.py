"""The end-to-end study's table, from its results file alone: success per arm with its interval,
the planner paired against the model alone (overall, by task type, by kind), calls, tool errors
and recoveries, wall time; ``table.md``, ``table.json`` and a figure."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from helmdeck_dspy.evaluation.stats import newcombe_paired_diff, wilson
from helmdeck_dspy.io.atomic import atomic_write_text
from helmdeck_dspy.io.jsonl import iter_jsonl


def _arm_stats(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    wins = sum(r["success"] for r in rows)
    low, high = wilson(wins, n) if n else (0.0, 1.0)
    erred = [r for r in rows if r["tool_errors"]]
    return {
        "n": n, "success": wins, "rate": wins / n if n else 0.0, "ci": [low, high],
        "calls_per_task": sum(len(r["steps"]) for r in rows) / n if n else 0.0,
        "plan_calls_per_task": sum(r["plan_calls"] for r in rows) / n if n else 0.0,
        "tool_errors": sum(r["tool_errors"] for r in rows),
        "tasks_with_errors": len(erred), "recovered": sum(r["success"] for r in erred),
        "median_seconds": statistics.median(r["seconds"] for r in rows) if rows else 0.0,
        "stopped": dict(sorted(_count(r["stopped_because"] for r in rows).items())),
    }


def _count(values: Any) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for v in values:
        out[v] += 1
    return out


def _paired(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, Any]:
    both = sum(1 for p, a in pairs if p["success"] and a["success"])
    p_only = sum(1 for p, a in pairs if p["success"] and not a["success"])
    a_only = sum(1 for p, a in pairs if a["success"] and not p["success"])
    neither = len(pairs) - both - p_only - a_only
    diff, low, high = newcombe_paired_diff(both, p_only, a_only, neither)
    return {"n": len(pairs), "planner": both + p_only, "alone": both + a_only, "planner_only": p_only,
            "alone_only": a_only, "diff": diff, "ci": [low, high]}


def build_table(results: Path) -> dict[str, Any]:
    """Every model's figures from a results file (the last line of a (model, arm, task) wins)."""
    latest: dict[tuple[str, str, str], dict[str, Any]] = {}
    for _, row in iter_jsonl(results):
        latest[(row["model"], row["arm"], row["task_id"])] = row
    models: dict[str, Any] = {}
    for model in sorted({m for m, _, _ in latest}):
        arms = {arm: [r for (m, a, _), r in latest.items() if m == model and a == arm] for arm in ("planner", "alone")}
        by_task = {arm: {r["task_id"]: r for r in rows} for arm, rows in arms.items()}
        paired_ids = sorted(set(by_task["planner"]) & set(by_task["alone"]))
        pairs = [(by_task["planner"][t], by_task["alone"][t]) for t in paired_ids]
        groups: dict[str, dict[str, list[tuple[dict[str, Any], dict[str, Any]]]]] = {"type": {}, "kind": {}}
        for p, a in pairs:
            groups["type"].setdefault(p["type"], []).append((p, a))
            groups["kind"].setdefault(p["kind"], []).append((p, a))
        models[model] = {
            "lm": sorted({r["lm"] for rows in arms.values() for r in rows}),
            "arms": {arm: _arm_stats(rows) for arm, rows in arms.items() if rows},
            "paired": _paired(pairs),
            "by_type": {k: _paired(v) for k, v in sorted(groups["type"].items())},
            "by_kind": {k: _paired(v) for k, v in sorted(groups["kind"].items())},
        }
    return {"results": str(results.name), "models": models}


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _diff(d: dict[str, Any]) -> str:
    return f"{100 * d['diff']:+.1f} [{100 * d['ci'][0]:+.1f}, {100 * d['ci'][1]:+.1f}]"


def table_markdown(table: dict[str, Any]) -> str:
    """The table as Markdown: per model, arms, then the paired rows by type and kind."""
    lines = ["# End-to-end study: what the tools did", ""]
    for model, m in table["models"].items():
        lines += [f"## {model} ({', '.join(m['lm'])})", "",
                  "| arm | tasks | success % [95% CI] | calls/task | plan calls/task | tool errors | "
                  "tasks with an error: recovered | median s/task | stopped |", "|---|---|---|---|---|---|---|---|---|"]
        for arm, s in m["arms"].items():
            stopped = ", ".join(f"{k} {v}" for k, v in s["stopped"].items())
            lines.append(f"| {arm} | {s['n']} | {_pct(s['rate'])} [{_pct(s['ci'][0])}, {_pct(s['ci'][1])}] | "
                         f"{s['calls_per_task']:.2f} | {s['plan_calls_per_task']:.2f} | {s['tool_errors']} | "
                         f"{s['tasks_with_errors']}: {s['recovered']} | {s['median_seconds']:.1f} | {stopped} |")
        p = m["paired"]
        lines += ["", f"Paired on {p['n']} tasks: planner {p['planner']}, alone {p['alone']} "
                      f"(planner only {p['planner_only']}, alone only {p['alone_only']}); "
                      f"difference in points {_diff(p)}.", "",
                  "| group | tasks | planner | alone | planner − alone, points [95% CI] |", "|---|---|---|---|---|"]
        for label, groups in (("type", m["by_type"]), ("kind", m["by_kind"])):
            for name, d in groups.items():
                lines.append(f"| {label} {name} | {d['n']} | {d['planner']} | {d['alone']} | {_diff(d)} |")
        lines.append("")
    return "\n".join(lines)


def write_table(results: Path, out_dir: Path) -> dict[str, Any]:
    """Write ``table.json``, ``table.md`` and ``success-by-type.png`` beside the results."""
    table = build_table(results)
    atomic_write_text(out_dir / "table.json", json.dumps(table, indent=1) + "\n")
    atomic_write_text(out_dir / "table.md", table_markdown(table))
    _figure(table, out_dir / "success-by-type.png")
    return table


def _figure(table: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = list(table["models"].items())
    if not models:
        return
    fig, axes = plt.subplots(len(models), 1, figsize=(10, 3.2 * len(models)), squeeze=False)
    for ax, (model, m) in zip(axes[:, 0], models):
        types = list(m["by_type"])
        x = range(len(types))
        for offset, arm in ((-0.2, "planner"), (0.2, "alone")):
            rates = [m["by_type"][t][arm] / max(m["by_type"][t]["n"], 1) for t in types]
            ax.bar([i + offset for i in x], [100 * r for r in rates], width=0.4, label=arm)
        ax.set_xticks(list(x), [f"{t}\n(n={m['by_type'][t]['n']})" for t in types], fontsize=8)
        ax.set_ylabel("tasks done %")
        ax.set_ylim(0, 100)
        ax.set_title(f"{model}: planner {_pct(m['paired']['planner'] / max(m['paired']['n'], 1))}% vs alone "
                     f"{_pct(m['paired']['alone'] / max(m['paired']['n'], 1))}% (live)", fontsize=10)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
