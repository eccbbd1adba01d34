"""A study's table as Markdown and JSON, and its figure (exact calls per config and category)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helmdeck_dspy.bench.study.table import Rate, StudyRow, median_of
from helmdeck_dspy.bench.study.spec import StudySpec
from helmdeck_dspy.bench.provenance import recorded_rows
from helmdeck_dspy.io.atomic import atomic_write_text
from helmdeck_dspy.io.jsonl import iter_jsonl

HEADER = ("| config | scope | n | exact calls | tool-name accuracy | argument accuracy | irrelevance | strict parse "
          "| prompt / completion tokens (p50) | latency p50 | exact vs baseline (paired) | latency ratio |")


def _rate(r: Rate) -> str:
    if r.rate is None:
        return "–"
    return f"{100 * r.rate:.1f}% [{100 * (r.low or 0):.1f}, {100 * (r.high or 0):.1f}] ({r.k}/{r.n})"


def _diff(row: StudyRow) -> str:
    if row.exact_diff is None:
        return "baseline" if row.paired_n == 0 else "–"
    return (f"{100 * row.exact_diff:+.1f} [{100 * (row.exact_diff_low or 0):+.1f}, "
            f"{100 * (row.exact_diff_high or 0):+.1f}] (n={row.paired_n})")


def _num(x: float | None, unit: str = "") -> str:
    return "–" if x is None else f"{x:g}{unit}"


def _score(row: StudyRow) -> str:
    if row.plan_score is None:
        return "–"
    text = f"{row.plan_score:.3f} [{row.plan_score_low or 0:.3f}, {row.plan_score_high or 0:.3f}]"
    if row.plan_score_diff is not None:
        text += (f"; {row.plan_score_diff:+.3f} [{row.plan_score_diff_low or 0:+.3f}, "
                 f"{row.plan_score_diff_high or 0:+.3f}] paired")
    return text


def table_lines(rows: list[StudyRow]) -> list[str]:
    """The rows as one Markdown table (with a plan-score column when the rows have one: gold tasks)."""
    scored = any(r.plan_score is not None for r in rows)
    header = HEADER + (" plan score (vs baseline, paired) |" if scored else "")
    lines = [header, "|" + "---|" * (header.count("|") - 1)]
    for r in rows:
        lines.append(
            f"| {r.config} | {r.scope} | {r.n} | {_rate(r.exact)} | {_rate(r.tool_accuracy)} | "
            f"{_rate(r.argument_accuracy)} | {_rate(r.irrelevance)} | {_rate(r.strict)} | "
            f"{_num(r.prompt_tokens_p50)} / {_num(r.completion_tokens_p50)} | {_num(r.latency_p50_s, ' s')} | "
            f"{_diff(r)} | {_num(r.latency_ratio, '×')} |" + (f" {_score(r)} |" if scored else "")
        )
    return lines


def calls_lines(rows: list[StudyRow]) -> list[str]:
    """How many calls each row made where a call serves the question, against the number asked, and
    how often it declined a served question (the table's irrelevance column is the unserved side)."""
    served = [r for r in rows if r.served_declined is not None]
    if not served:
        return []
    lines = ["| config | scope | served questions declined | fewer calls than asked | more calls than asked |",
             "|---|---|---|---|---|"]
    for r in served:
        assert r.served_declined is not None and r.calls_short is not None and r.calls_long is not None
        lines.append(f"| {r.config} | {r.scope} | {_rate(r.served_declined)} | {_rate(r.calls_short)} | "
                     f"{_rate(r.calls_long)} |")
    return ["", *lines]


def run_lines(rows: list[StudyRow]) -> list[str]:
    """An end-to-end study's rows: tasks done, paired against the baseline, and how the runs went."""
    lines = ["| config | scope | tasks | done [95% CI] | done vs baseline, paired | calls/task | plan calls/task | "
             "tool errors | tasks with an error: done | median s/task | stopped |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        assert r.runs is not None
        g = r.runs
        stopped = ", ".join(f"{k} {v}" for k, v in g.stopped.items())
        lines.append(f"| {r.config} | {r.scope} | {r.n} | {_rate(r.exact)} | {_diff(r)} | {g.calls_per_task:.2f} | "
                     f"{g.plan_calls_per_task:.2f} | {g.tool_errors} | {g.tasks_with_errors}: {g.recovered} | "
                     f"{_num(r.latency_p50_s)} | {stopped} |")
    return lines


def turn_lines(rows: list[StudyRow]) -> list[str]:
    """A multi-turn study's rows: how far the runs got before their first failing turn (the package's
    checker asked of each run's leading turns), where every result of the row says."""
    counted = [r for r in rows if r.runs is not None and r.runs.turns]
    if not counted:
        return []
    lines = ["", "| config | questions | first turn passed | leading turns passed, of all turns |", "|---|---|---|---|"]
    for r in counted:
        g = r.runs
        assert g is not None and g.turns and g.turns_passed is not None and g.first_turns_passed is not None
        lines.append(f"| {r.config} | {r.n} | {g.first_turns_passed} | {g.turns_passed} of {g.turns} "
                     f"({100 * g.turns_passed / g.turns:.1f}%) |")
    return lines


def answers_in(value: Any) -> list[dict[str, Any]]:
    """Every object in ``value`` (a result line, a trace record) that holds a model answer: its
    ``content`` and ``finish_reason``."""
    if isinstance(value, list):
        return [a for item in value for a in answers_in(item)]
    if not isinstance(value, dict):
        return []
    own = [value] if isinstance(value.get("content"), str) and "finish_reason" in value else []
    return own + [a for item in value.values() for a in answers_in(item)]


def _ends(answers: list[dict[str, Any]]) -> str:
    """How answers ended, as table cells: ran to the cap; stopped as a runaway (a list that wrote one
    call a third time: cut, as the cap would have, sooner); stopped where the answer closed."""
    length = [a for a in answers if a.get("finish_reason") == "length"]
    runaway = sum(1 for a in length if a.get("answer_cut"))
    closed = sum(1 for a in answers if a.get("answer_cut") and a.get("finish_reason") != "length")
    return f"{len(length) - runaway} | {runaway} | {closed}"


def plan_call_lines(spec: StudySpec) -> list[str]:
    """A looped study's answers: each row's, from its result lines (every turn's answer the results
    kept), and the plan calls of each trace file under ``traces/``: how many ended at the attempt
    deadline, ran to their output cap, were stopped as runaways or where their JSON closed, and the
    finished answers' median length (issue 54: no run may end by a deadline because an answer ran on)."""
    ends = "ran to the cap | stopped as a runaway | stopped where the answer closed"
    lines: list[str] = []
    for path in dict.fromkeys(spec.trace_path(c) for c in spec.config):
        answers = ([a for _, line in iter_jsonl(path, on_error="skip") for a in answers_in(line.get("turns"))]
                   if path.is_file() else [])
        if answers:  # a planner row keeps its plan calls in traces/, below
            lines.append(f"| {path.name} | {len(answers)} | {_ends(answers)} |")
    if lines:
        lines[:0] = ["", f"| results | answers kept | {ends} |", "|---|---|---|---|---|"]
    files = sorted((spec.folder / "traces").glob("*.jsonl"))
    if files:
        lines += ["", f"| plan traces | plan calls | ended at the deadline | {ends} | finished answer tokens (p50) |",
                  "|---|---|---|---|---|---|---|"]
    for path in files:
        records = [r for _, r in iter_jsonl(path, on_error="skip") if r.get("call", "plan") == "plan"]
        finished = [int(r["completion_tokens"]) for r in records
                    if r.get("finish_reason") == "stop" and isinstance(r.get("completion_tokens"), int)]
        deadlines = sum(1 for r in records if "DeadlineExceeded" in str(r.get("error") or ""))
        lines.append(f"| {path.name} | {len(records)} | {deadlines} | {_ends(records)} | "
                     f"{_num(median_of([float(x) for x in finished]))} |")
    return lines


def measured(spec: StudySpec) -> str:
    """How the rows were answered: live, or SIMULATED (the ``sim:`` LM)."""
    return "SIMULATED: the LM is the simulator, not a model." if spec.lm.startswith("sim:") else "Measured live."


def rows_lines(spec: StudySpec, rows: list[StudyRow]) -> list[str]:
    """The rows as the spec's kind of table (:func:`run_lines` for end-to-end tasks, else :func:`table_lines`)."""
    return run_lines(rows) if spec.loops else table_lines(rows)


def _about(spec: StudySpec) -> str:
    """What the rows answered, in a clause."""
    if spec.e2e is not None:
        kinds = f"types {', '.join(spec.categories)}" if spec.categories else "every type"
        return (f"the end-to-end tasks ({spec.e2e.tasks or 'bundled'}, split {spec.e2e.split}, {kinds}), each run in a "
                f"fresh sandbox over the real MCP servers (at most {spec.e2e.max_steps} steps, "
                f"{spec.e2e.time_cap_s:g} s) and done when every check holds")
    if spec.multi_turn is not None:
        from helmdeck_dspy.bench.multi_turn import CATEGORY, PACKAGE, VERSION

        m = spec.multi_turn
        return (f"BFCL v4 {CATEGORY} ({PACKAGE}=={VERSION}, split {m.split}{', only ' + ', '.join(m.only) if m.only else ''}), "
                f"each question's turns run in order over the package's API classes (at most {m.max_steps} calls and "
                f"{m.time_cap_s:g} s a turn) and done when the package's multi-turn checker passes it")
    return f"categories {', '.join(spec.categories)}, the first {spec.limit} questions of each"


def compile_lines(spec: StudySpec) -> list[str]:
    """What each compile arm's compile cost: LM calls (live, cached and the teacher's), tokens and time."""
    from helmdeck_dspy.bench.study.compiled import entry

    arms = [(c, entry(spec, c)) for c in spec.config if c.optimizer is not None]
    if not arms:
        return []
    lines = ["", "| compile arm | optimizer | LM calls (cached, teacher) | prompt + completion tokens | time |",
             "|---|---|---|---|---|"]
    for c, e in arms:
        if e is None:
            lines.append(f"| {c.name} | {c.optimizer} | not compiled yet | | |")
            continue
        lines.append(f"| {c.name} | {c.optimizer} | {e.lm_calls} ({e.cached_calls}, {e.teacher_calls}) | "
                     f"{e.prompt_tokens_used:,} + {e.completion_tokens_used:,} | {e.seconds / 60:.1f} min |")
    return lines


def render_markdown(spec: StudySpec, rows: list[StudyRow]) -> str:
    """The table page: what ran, the configs, then the table (written beside the spec)."""
    out = [
        f"# {'End-to-end' if spec.e2e else 'BFCL multi-turn' if spec.multi_turn else 'Gold-task' if spec.tasks else 'BFCL'}"
        f" study: {spec.model}",
        "",
        f"LM `{spec.lm}`, temperature {spec.temperature:g}, seed {spec.seed}; {_about(spec)}. Every row is paired against "
        f"`{spec.baseline}`" + (" (or the row its paired_with names)" if any(c.paired_with for c in spec.config) else "")
        + " on the questions both answered. "
        + measured(spec),
        "",
        "| config | what it is |",
        "|---|---|",
        *[f"| {c.name} | {c.description or '–'} |" for c in spec.config],
        "",
        *rows_lines(spec, rows),
        *calls_lines(rows),
        *turn_lines(rows),
        *(plan_call_lines(spec) if spec.loops else []),
        *compile_lines(spec),
        "",
    ]
    return "\n".join(out)


def _bar(row: StudyRow, metric: str) -> tuple[float, float, float]:
    """A row's value and interval on ``metric`` (``exact``: the exact-call rate; ``plan_score``)."""
    if metric == "plan_score":
        return row.plan_score or 0, row.plan_score_low or 0, row.plan_score_high or 0
    return row.exact.rate or 0, row.exact.low or 0, row.exact.high or 0


def plot_rows(rows: list[StudyRow], path: Path, metric: str = "exact", baseline: str | None = None) -> Path:
    """Exact-call rate (``metric="done"``: tasks done; ``"plan_score"``: the plan score) with its
    interval, per scope (panels, six to a line) and config (bars; the ``baseline`` row's grey, else
    the first row's)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scopes = list(dict.fromkeys(r.scope for r in rows))
    configs = list(dict.fromkeys(r.config for r in rows))
    ncols = min(len(scopes), 6)
    nrows = -(-len(scopes) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 3.6 * nrows), sharey=True, squeeze=False)
    for ax in axes.flat[len(scopes):]:
        ax.set_visible(False)
    for ax, scope in zip(axes.flat, scopes):
        here = {r.config: r for r in rows if r.scope == scope}
        xs = [c for c in configs if c in here]
        bars = [_bar(here[c], metric) for c in xs]
        ax.bar(range(len(xs)), [100 * v for v, _, _ in bars], yerr=[[100 * (v - lo) for v, lo, _ in bars],
                                                                    [100 * (hi - v) for v, _, hi in bars]],
               capsize=3, color=["#888888" if c == (baseline or configs[0]) else "#3b6ea8" for c in xs])
        ax.set_xticks(range(len(xs)), [f"{c} ({here[c].n})" for c in xs], rotation=45, ha="right", fontsize=8)
        ax.set_title(scope, fontsize=9)  # rows may cover different questions: each bar says how many
        ax.set_ylim(0, 100)
    label = {"plan_score": "plan score × 100 (95% CI)", "done": "tasks done, % (95% CI)"}.get(metric, "exact calls, % (95% CI)")
    for ax in axes[:, 0]:
        ax.set_ylabel(label)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_study(spec: StudySpec, rows: list[StudyRow]) -> list[Path]:
    """``table.md``, ``table.json`` and ``exact.png`` beside the spec, and ``plan_score.png`` for
    gold tasks."""
    folder = spec.folder
    md, js = folder / "table.md", folder / "table.json"
    atomic_write_text(md, render_markdown(spec, rows))
    payload: dict[str, Any] = {"model": spec.model, "lm": spec.lm, "baseline": spec.baseline,
                               "rows": [r.model_dump(mode="json") for r in rows], "budget_rows": recorded_rows(folder)}
    atomic_write_text(js, json.dumps(payload, indent=1) + "\n")
    written = [md, js, plot_rows(rows, folder / "exact.png", "done" if spec.loops else "exact", spec.baseline)]
    if any(r.plan_score is not None for r in rows):  # gold tasks: the metric the compiler optimises
        written.append(plot_rows(rows, folder / "plan_score.png", "plan_score", spec.baseline))
    return written
