"""The end-to-end study's table, from its results file alone: success per arm with its interval,
the planner paired against the model alone (overall, by task type, by kind), calls, tool errors
and recoveries, wall time; ``table.md``, ``table.json`` and a figure."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from helmdeck_dspy.bench.e2e.arms import ARMS, LEVER_ARMS, RETIRED_ARMS
from helmdeck_dspy.bench.e2e.checks import task_split
from helmdeck_dspy.bench.provenance import recorded_rows
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


def _comparison(first: dict[str, dict[str, Any]], second: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``first`` paired against ``second`` (task id → result) on the tasks both hold: overall, by
    task type, by kind and by split."""
    pairs = [(first[t], second[t]) for t in sorted(set(first) & set(second))]
    groups: dict[str, dict[str, list[tuple[dict[str, Any], dict[str, Any]]]]] = {"type": {}, "kind": {}, "split": {}}
    for p, a in pairs:
        for field, value in (("type", p["type"]), ("kind", p["kind"]), ("split", task_split(p["task_id"]))):
            groups[field].setdefault(value, []).append((p, a))
    return {"paired": _paired(pairs), **{f"by_{k}": {n: _paired(v) for n, v in sorted(g.items())}
                                         for k, g in groups.items()}}


def build_table(results: Path) -> dict[str, Any]:
    """Every model's figures from a results file (the last line of a (model, arm, task) wins): each
    arm's own figures, and each planner arm paired against the model alone (``paired``, ``by_type``,
    ``by_kind``, ``by_split`` for the shipped planner; ``comparisons`` for every arm)."""
    latest: dict[tuple[str, str, str], dict[str, Any]] = {}
    for _, row in iter_jsonl(results):
        latest[(row["model"], row["arm"], row["task_id"])] = row
    models: dict[str, Any] = {}
    for model in sorted({m for m, _, _ in latest}):
        present = [a for a in (*ARMS, *LEVER_ARMS, *RETIRED_ARMS) if any(m == model and arm == a for m, arm, _ in latest)]
        by_task = {arm: {t: r for (m, a, t), r in latest.items() if m == model and a == arm} for arm in present}
        alone = by_task.get("alone", {})
        comparisons = {arm: _comparison(rows, alone) for arm, rows in by_task.items() if arm != "alone"}
        models[model] = {
            "lm": sorted({r["lm"] for rows in by_task.values() for r in rows.values()}),
            "arms": {arm: _arm_stats(list(rows.values())) for arm, rows in by_task.items()},
            **comparisons.get("planner", _comparison({}, {})),
            "comparisons": comparisons,
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
        for arm, c in m["comparisons"].items():
            p = c["paired"]
            lines += ["", f"**{arm} against the model alone**, paired on {p['n']} tasks: {arm} {p['planner']}, alone "
                          f"{p['alone']} ({arm} only {p['planner_only']}, alone only {p['alone_only']}); "
                          f"difference in points {_diff(p)}.", "",
                      f"| group | tasks | {arm} | alone | {arm} − alone, points [95% CI] |", "|---|---|---|---|---|"]
            for label in ("type", "kind", "split"):
                for name, d in c[f"by_{label}"].items():
                    lines.append(f"| {label} {name} | {d['n']} | {d['planner']} | {d['alone']} | {_diff(d)} |")
        lines.append("")
    return "\n".join(lines)


def write_table(results: Path, out_dir: Path) -> dict[str, Any]:
    """Write ``table.json``, ``table.md`` and ``success-by-type.png`` beside the results."""
    table = {**build_table(results), "budget_rows": recorded_rows(out_dir)}
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
