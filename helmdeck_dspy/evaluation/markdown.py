"""The evaluation report as text: the summary table (Markdown and the CLI) and ``report.md``.

Every row and heading names its group as ``model · kind`` (:func:`~helmdeck_dspy.evaluation.report.group_label`),
and the report opens with what each kind present means, so a simulated group never reads as a
measurement of the model it is named after.
"""

from __future__ import annotations

from helmdeck_dspy.decoding.causes import normalize_finish_reason, unknown_finish_label
from helmdeck_dspy.evaluation.report import EvalReport, GroupReport, kind_note
from helmdeck_dspy.traces.record import is_simulated


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _ci(ci: tuple[float, float]) -> str:
    return f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def _num(x: float | None) -> str:
    return "–" if x is None else f"{x:,.0f}"


def summary_rows(report: EvalReport) -> list[list[str]]:
    """The summary table's rows (shared by Markdown and the CLI)."""
    rows = []
    for g in report.groups:
        top_finish = ", ".join(f"{k} {v}" for k, v in list(g.finish_reason_counts.items())[:3])
        rows.append([
            g.label, g.prompt_variant, g.tier, str(g.n), f"{_pct(g.strict_rate)} {_ci(g.strict_ci)}",
            _pct(g.tolerant_rate), top_finish, _num(g.completion_tokens.p95),
            _pct(g.gold.plan_score_mean) if g.gold else "–",
        ])
    return rows


SUMMARY_HEADERS = ["model · kind", "variant", "tier", "n", "strict (95% CI)", "tolerant", "finish_reason", "tok p95",
                   "plan score"]


def calls_cells(g: GroupReport) -> list[str]:
    """A group's LM calls per plan request as table cells: requests, calls, mean / max, repeats."""
    c = g.calls_per_plan
    if c is None or not c.requests:
        return ["0", "–", "–", "–"]
    calls = f"{c.calls} ({c.plan_calls} + {c.filter_calls})"
    return [str(c.requests), calls, f"{c.mean:.2f} / {c.max}", str(c.repeated)]


def kinds_lines(report: EvalReport) -> list[str]:
    """What each kind in the report means, and a warning when any group is simulated."""
    if not report.kinds:
        return []
    lines = ["Each group is named `model · kind`; groups of different kinds are never merged. Kinds here:", ""]
    lines += [f"- `{k}` ({n} records): {kind_note(k)}." for k, n in report.kinds.items() if not is_simulated(k)]
    sim_kinds = [f"`{k}` ({n} records)" for k, n in report.kinds.items() if is_simulated(k)]
    if sim_kinds:
        lines.append(f"- {', '.join(sim_kinds)}: {kind_note('sim:')}.")
    simulated = [g for g in report.groups if is_simulated(g.kind)]
    if simulated:
        lines += ["", f"**{len(simulated)} of {len(report.groups)} groups are simulated** (`sim:<profile>`): the "
                      "simulator's output under a real model's name, not a measurement of that model."]
    return lines + [""]


def _raw_finish(spelling: str) -> str:
    """A raw finish_reason as the report shows it: an undocumented spelling says so."""
    if spelling != "(none)" and normalize_finish_reason(spelling) == "unknown":
        return unknown_finish_label(spelling)
    return f"`{spelling}`"


def _causes_section(report: EvalReport) -> list[str]:
    lines = ["", "## Failure causes and finish reasons"]
    for g in report.groups:
        causes = ", ".join(f"{k} {v}" for k, v in g.failure_cause_counts.items()) or "none"
        if g.native:
            causes += f"; {g.native} plans as native tool calls"
        raw = ", ".join(f"{_raw_finish(k)} {v}" for k, v in g.finish_reason_raw_counts.items())
        tags = ", ".join(f"{k} {v}" for k, v in g.reasoning_tag_kinds.items()) or "none"
        lines += [
            "", f"### {g.label} — {g.prompt_variant}", "",
            f"- causes: {causes}; finish_reason (raw): {raw}",
            f"- reasoning: {g.reasoning_tag_count} with tags ({tags}), {g.reasoning_field_count} with a separate "
            f"field, {g.reasoning_leak_count} leaks",
            f"- completion tokens p50 {_num(g.completion_tokens.p50)}, p95 {_num(g.completion_tokens.p95)}, max "
            f"{_num(g.completion_tokens.max)}; latency p50 {_num(g.latency_ms.p50)} ms, p95 {_num(g.latency_ms.p95)} ms",
        ]
    return lines


def render_markdown(report: EvalReport, plots: list[str] | None = None) -> str:
    """The report as Markdown, linking ``plots`` (file names next to it)."""
    lines = [
        "# Evaluation report",
        "",
        f"{report.n_records} records from {len(report.inputs)} file(s) "
        f"({report.n_skipped} skipped); trace set sha256 `{report.trace_set_sha256[:16]}`; "
        f"catalog `{report.catalog_fingerprint}`; {report.tasks} gold tasks; "
        f"{report.seconds:.2f} s with {report.workers} worker(s). Created {report.created_at} by helmdeck-dspy {report.tool_version}.",
        "",
        *kinds_lines(report),
        "Strict: a standard JSON parse after removing reasoning, fences and prose. Tolerant: strict or "
        "repaired. Native: a plan given as native tool calls naming catalog tools (counted apart from both). "
        "Intervals are 95% Wilson. A completion cut by the token limit never counts as a success.",
        "",
        "## Groups (model · kind x prompt variant)",
        "",
        "| " + " | ".join(SUMMARY_HEADERS) + " |",
        "|" + "---|" * len(SUMMARY_HEADERS),
    ]
    lines += ["| " + " | ".join(r) + " |" for r in summary_rows(report)]
    lines += ["", "## Tiers (per kind)", "", "| tier | kind | n | strict (95% CI) | tolerant | length | reasoning leak |",
              "|---|---|---|---|---|---|---|"]
    for t in report.tiers:
        lines.append(
            f"| {t.tier} | {t.kind} | {t.n} | {_pct(t.strict_rate)} {_ci(t.strict_ci)} | {_pct(t.tolerant_rate)} | "
            f"{_pct(t.length_rate)} | {_pct(t.reasoning_leak_rate)} |"
        )
    if report.comparisons:
        lines += [
            "", "## single_pick vs full_steps (per model and kind)", "",
            "| model · kind | n (full / single) | strict full | strict single | difference (95% CI) "
            "| paired: n, difference (95% CI) | plan score diff |",
            "|---|---|---|---|---|---|---|",
        ]
        for c in report.comparisons:
            lines.append(
                f"| {c.label} | {c.full_steps_n} / {c.single_pick_n} | {_pct(c.full_steps_strict_rate)} | "
                f"{_pct(c.single_pick_strict_rate)} | {100 * c.strict_diff:+.1f} pts {_ci(c.strict_diff_ci)} | "
                f"{_paired_text(c)} | "
                f"{'–' if c.plan_score_diff is None else f'{c.plan_score_diff:+.3f}'} |"
            )
    lines += _modes_section(report)
    lines += [
        "", "## LM calls per plan request", "",
        "Trace records (plan and filter calls) per planning request; a request is one (task_id, intent) of the "
        "group, and a plan record naming neither is a request of its own. A plan is one plan call, plus one "
        "filter call when the budget asks for it; a request with more than one plan call was retried or sent twice.",
        "",
        "| model · kind | variant | requests | calls (plan + filter) | per request (mean / max) | >1 plan call |",
        "|---|---|---|---|---|---|",
    ]
    lines += [f"| {g.label} | {g.prompt_variant} | " + " | ".join(calls_cells(g)) + " |" for g in report.groups]
    lines += _causes_section(report)
    if any(g.gold for g in report.groups):
        lines += ["", "## Plan quality (records with a gold task)", "",
                  "| model · kind | variant | n | valid tools | exact (95% CI) | tool F1 | plan score |",
                  "|---|---|---|---|---|---|---|"]
        for g in report.groups:
            if g.gold:
                q = g.gold
                lines.append(f"| {g.label} | {g.prompt_variant} | {q.n} | {_pct(q.valid_tool_rate)} | "
                             f"{_pct(q.exact_rate)} {_ci(q.exact_ci)} | {q.tool_f1_mean:.3f} | {q.plan_score_mean:.3f} |")
    if report.errors:
        lines += ["", "## Skipped records", ""] + [f"- {e}" for e in report.errors]
    if plots:
        lines += ["", "## Plots", ""] + [f"![{p}]({p})" for p in plots]
    lines += ["", "## Inputs", ""] + [f"- `{i.path}` ({i.format}, {i.records} records, sha256 `{i.sha256[:16]}`)" for i in report.inputs]
    return "\n".join(lines) + "\n"


def _modes_section(report: EvalReport) -> list[str]:
    """JSON-text requests beside native-tool-call requests, where a model was recorded both ways."""
    if not report.modes:
        return []
    lines = [
        "", "## JSON text vs native tool calls (per model, kind and variant)", "",
        ("Records whose request offered the catalog as native tools (`native`) beside records that asked for JSON "
         "text (`text`); a plan is a strict, repaired or native answer."), "",
        "| model · kind | variant | text: plans / n | native: plans / n | difference (95% CI) |",
        "|---|---|---|---|---|",
    ]
    for m in report.modes:
        lines.append(f"| {m.label} | {m.prompt_variant} | {m.text_plans} / {m.text_n} ({_pct(m.text_rate)}) | "
                     f"{m.native_plans} / {m.native_n} ({_pct(m.native_rate)}) | "
                     f"{100 * m.diff:+.1f} pts {_ci(m.diff_ci)} |")
    return lines


def _paired_text(c) -> str:
    """The paired difference of a comparison (requests answered under both variants), or a dash."""
    if c.paired_strict_diff is None or c.paired_strict_diff_ci is None:
        return "–"
    return f"{c.paired_n}, {100 * c.paired_strict_diff:+.1f} pts {_ci(c.paired_strict_diff_ci)}"
