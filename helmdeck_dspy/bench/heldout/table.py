"""Scoring the held-out runs: one :class:`RowScore` per (config, variant), from the trace files alone.

Each plan record is put through the evaluator's replay (:func:`~helmdeck_dspy.evaluation.replay.replay_record`:
the one decode → guard → score path), so a truncated or undecodable answer scores 0, invented
tools and recursion count against the plan, and single_pick is scored on its one step. Per task
the last plan record counts (a retried request's answer). Intervals are 95%: Wilson for the strict
rate, a seeded percentile bootstrap over tasks for the mean plan score and for the paired
difference against the baseline (the same tasks answered under both configs); the paired strict
difference uses Newcombe's interval for paired proportions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from helmdeck_dspy.bench.heldout.spec import HeldOutConfig, HeldOutSpec
from helmdeck_dspy.bench.provenance import recorded_rows
from helmdeck_dspy.budgets import load_budget_table
from helmdeck_dspy.catalog.models import load_catalog
from helmdeck_dspy.engines.lm_spec import trace_source
from helmdeck_dspy.evaluation.replay import RecordOutcome, ReplayContext, replay_record
from helmdeck_dspy.evaluation.stats import (
    bootstrap_mean_ci,
    newcombe_paired_diff,
    wilson,
)
from helmdeck_dspy.tasks import load_tasks
from helmdeck_dspy.traces.io import read_jsonl_traces
from helmdeck_dspy.traces.record import TraceRecord, is_simulated, source_kind


class Cost(BaseModel):
    """LM calls, tokens and wall time of a run (a scoring run, or a compile)."""

    calls: int = 0
    cached_calls: int = 0
    teacher_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    estimated_calls: int | None = None


class RowScore(BaseModel):
    """One config under one variant on the held-out split."""

    config: str
    label: str
    variant: str
    program: str | None = None
    n: int = 0
    strict: float | None = None
    strict_ci: tuple[float, float] | None = None
    score: float | None = None
    score_ci: tuple[float, float] | None = None
    paired_n: int = 0
    diff: float | None = None
    diff_ci: tuple[float, float] | None = None
    strict_diff: float | None = None
    strict_diff_ci: tuple[float, float] | None = None
    scoring: Cost | None = None
    compile: Cost | None = None

    @property
    def beats_baseline(self) -> bool:
        """Better than the baseline beyond the interval: the paired plan-score difference's lower bound is above 0."""
        return self.diff_ci is not None and self.diff_ci[0] > 0


def _plan_records(path: Path, variant: str) -> list[TraceRecord]:
    """Every plan record of ``variant`` in ``path`` (retries included)."""
    return [r for r in read_jsonl_traces(path) if r.call == "plan" and r.prompt_variant == variant]


def _outcomes(records: list[TraceRecord], ctx: ReplayContext) -> tuple[dict[str, RecordOutcome], list[TraceRecord]]:
    """The last record per task, replayed; and those records."""
    last = {r.task_id: r for r in records if r.task_id}
    return {t: replay_record(r, ctx) for t, r in last.items()}, list(last.values())


def _scoring_cost(records: list[TraceRecord]) -> Cost:
    """Calls, tokens and summed latency of every record."""
    return Cost(calls=len(records), prompt_tokens=sum(r.prompt_tokens or 0 for r in records),
                completion_tokens=sum(r.completion_tokens or 0 for r in records),
                seconds=round(sum((r.latency_ms or 0) / 1000 for r in records), 1))


def _program_name(records: list[TraceRecord], config: HeldOutConfig) -> str:
    """The program the records say they were planned with (``run.program``), else the config's."""
    seen = {json.dumps((r.run or {}).get("program"), sort_keys=True) for r in records if (r.run or {}).get("program")}
    if len(seen) == 1:
        ref = json.loads(seen.pop())
        return ref.get("path") or ref.get("kind", "")
    return config.program or config.optimizer or ""


def compile_cost(spec: HeldOutSpec, config: HeldOutConfig, variant: str) -> Cost | None:
    """The compile's calls, tokens and time from its manifest entry (None: nothing compiled)."""
    r = spec.manifest_entry(config, variant)
    if r is None:
        return None
    return Cost(calls=r.lm_calls, cached_calls=r.cached_calls, teacher_calls=r.teacher_calls,
                prompt_tokens=r.prompt_tokens_used, completion_tokens=r.completion_tokens_used, seconds=r.seconds,
                estimated_calls=r.estimated_calls)


def score_spec(spec: HeldOutSpec) -> list[RowScore]:
    """Score every (config, variant) whose trace file exists; the others come back with n = 0."""
    catalog = load_catalog()
    tasks = {t.id: t for t in load_tasks(spec.split)}
    ctx = ReplayContext(catalog_ids=catalog.id_set, pipeline_ids=catalog.pipeline_ids, tasks=tasks,
                        budgets=load_budget_table(None), pipeline_chains=catalog.pipeline_chains)
    rows: list[RowScore] = []
    for variant in spec.variants:
        base_out: dict[str, RecordOutcome] = {}
        scored: list[tuple[RowScore, dict[str, RecordOutcome]]] = []
        for config in spec.config:
            row = RowScore(config=config.id, label=config.label, variant=variant, compile=compile_cost(spec, config, variant))
            path = spec.trace_files(config)[variant]
            outs: dict[str, RecordOutcome] = {}
            if path.is_file():
                every = _plan_records(path, variant)
                outs, records = _outcomes(every, ctx)
                outs = {t: o for t, o in outs.items() if t in tasks}
                row.program = _program_name(records, config)
                row.scoring = _scoring_cost(every)
            if outs:
                _fill(row, outs)
            if config.id == spec.baseline:
                base_out = outs
            scored.append((row, outs))
        for row, outs in scored:
            if row.config != spec.baseline and outs and base_out:
                _compare(row, outs, base_out)
            rows.append(row)
    return rows


def _fill(row: RowScore, outs: dict[str, RecordOutcome]) -> None:
    n = len(outs)
    strict = sum(1 for o in outs.values() if o.outcome == "strict")
    scores = [o.score for o in outs.values()]
    row.n, row.strict, row.strict_ci = n, strict / n, wilson(strict, n)
    row.score, row.score_ci = sum(scores) / n, bootstrap_mean_ci(scores)


def _compare(row: RowScore, outs: dict[str, RecordOutcome], base: dict[str, RecordOutcome]) -> None:
    shared = sorted(outs.keys() & base.keys())
    if not shared:
        return
    diffs = [outs[t].score - base[t].score for t in shared]
    row.paired_n = len(shared)
    row.diff, row.diff_ci = sum(diffs) / len(diffs), bootstrap_mean_ci(diffs)
    cells = [0, 0, 0, 0]  # both strict, this only, baseline only, neither
    for t in shared:
        a, b = outs[t].outcome == "strict", base[t].outcome == "strict"
        cells[0 if a and b else 1 if a else 2 if b else 3] += 1
    d, lo, hi = newcombe_paired_diff(*cells)
    row.strict_diff, row.strict_diff_ci = d, (lo, hi)


def _pct(x: float | None, ci: tuple[float, float] | None = None, signed: bool = False) -> str:
    if x is None:
        return "—"
    text = f"{100 * x:+.1f}" if signed else f"{100 * x:.1f}"
    return text + (f" [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]" if signed and ci else f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else "")


def _num(x: float | None, ci: tuple[float, float] | None = None, signed: bool = False) -> str:
    if x is None:
        return "—"
    fmt = "{:+.3f}" if signed else "{:.3f}"
    return fmt.format(x) + (f" [{fmt.format(ci[0])}, {fmt.format(ci[1])}]" if ci else "")


def _cost(c: Cost | None) -> str:
    if c is None:
        return "—"
    cached = f" (+{c.cached_calls} cached)" if c.cached_calls else ""
    teacher = f", {c.teacher_calls} teacher" if c.teacher_calls else ""
    return (f"{c.calls}{cached}{teacher} calls; {c.prompt_tokens:,} + {c.completion_tokens:,} tok; "
            f"{c.seconds / 60:.1f} min")


def render_markdown(spec: HeldOutSpec, rows: list[RowScore]) -> str:
    """The table (a)–(e) as Markdown, one section per variant."""
    base = spec.get(spec.baseline)
    kind = source_kind(trace_source(spec.lm))
    measured = ("SIMULATED: the simulator's answers, not a measurement of the model" if is_simulated(kind)
                else f"Measured on the model itself ({kind} calls)")
    lines = [
        f"# Held-out comparison: {spec.model} on the {spec.split} split",
        "",
        f"Task LM `{spec.lm}`" + (f", teacher `{spec.teacher}`" if spec.teacher else "") +
        f"; temperature {spec.temperature}, seed {spec.seed}; optimizers validate on the first {spec.valset} dev tasks. "
        f"{measured}. Strict: the share of answers that parse as strict JSON "
        f"(Wilson 95%). Plan score: mean per task, 0 for a truncated or failed answer (bootstrap 95%). "
        f"Δ: paired by task against ({base.id}) {base.label}. Costs: LM calls, prompt + completion tokens and "
        f"wall time of the scoring run (summed call latency) and of the compile (whole run).",
    ]
    for variant in spec.variants:
        lines += ["", f"## {variant}", "",
                  "| config | n | strict % [95% CI] | plan score [95% CI] | Δ plan score [95% CI] | Δ strict pts [95% CI] "
                  "| scoring run | compile |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in (r for r in rows if r.variant == variant):
            name = f"({r.config}) {r.label}" + (" **better**" if r.beats_baseline else "")
            if r.n == 0:
                lines.append(f"| {name} | — | not run yet | | | | | {_cost(r.compile)} |")
                continue
            lines.append(
                f"| {name} | {r.n} | {_pct(r.strict, r.strict_ci)} | {_num(r.score, r.score_ci)} "
                f"| {_num(r.diff, r.diff_ci, signed=True) if r.paired_n else '—'} "
                f"| {_pct(r.strict_diff, r.strict_diff_ci, signed=True) if r.paired_n else '—'} "
                f"| {_cost(r.scoring)} | {_cost(r.compile)} |")
    return "\n".join(lines) + "\n"


def table_json(spec: HeldOutSpec, rows: list[RowScore]) -> dict[str, Any]:
    """The table as JSON (what ``table.json`` holds)."""
    return {"model": spec.model, "lm": spec.lm, "teacher": spec.teacher, "split": spec.split,
            "baseline": spec.baseline, "temperature": spec.temperature, "seed": spec.seed, "valset": spec.valset,
            "rows": [r.model_dump(mode="json") | {"beats_baseline": r.beats_baseline} for r in rows],
            "budget_rows": recorded_rows(spec.folder)}
