"""The evaluation report: pydantic models (``report.json``) and the Markdown rendering."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from helmdeck_dspy.evaluation.aggregate import PROMPT_BUCKET_TOKENS, GroupAgg, GroupKey
from helmdeck_dspy.evaluation.stats import newcombe_diff, wilson

SCHEMA_VERSION = 1


class Distribution(BaseModel):
    """Percentiles of a numeric field (exact while ``exact``; from a bounded sample beyond)."""

    n: int = 0
    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p95: float | None = None
    max: float | None = None
    exact: bool = True


class GoldStats(BaseModel):
    """Plan quality on records that name a gold task."""

    n: int
    valid_tool_rate: float | None = Field(description="Share of planned steps that survived the guards.")
    exact_rate: float
    exact_ci: tuple[float, float]
    tool_f1_mean: float
    plan_score_mean: float
    plan_score_sd: float


class GroupReport(BaseModel):
    """One model x prompt_variant group (or a tier roll-up, with model ``tier:<T>``)."""

    model: str
    prompt_variant: str
    tier: str
    sources: dict[str, int]
    n: int
    strict: int
    tolerant: int
    strict_rate: float
    strict_ci: tuple[float, float]
    tolerant_rate: float
    tolerant_ci: tuple[float, float]
    length_rate: float
    length_ci: tuple[float, float]
    finish_reason_counts: dict[str, int]
    finish_reason_raw_counts: dict[str, int]
    failure_cause_counts: dict[str, int]
    completion_tokens: Distribution
    clean_completion_tokens: Distribution
    latency_ms: Distribution
    prompt_tokens: Distribution
    length_by_prompt_tokens: list[dict[str, int]] = Field(
        default_factory=list,
        description=f"Per {PROMPT_BUCKET_TOKENS}-token prompt bucket: records, length cut-offs, and cut-offs "
        "well below the output cap (context pressure rather than the cap).",
    )
    length_below_cap: int = Field(0, description="Length cut-offs with completion tokens well below max_tokens.")
    max_tokens_counts: dict[str, int]
    reasoning_leak_count: int
    reasoning_leak_rate: float
    reasoning_tag_count: int
    reasoning_tag_kinds: dict[str, int] = Field(
        default_factory=dict, description="Responses containing each tag kind (think, thinking, reasoning...)."
    )
    reasoning_field_count: int
    from_label: int
    gold: GoldStats | None = None


class Comparison(BaseModel):
    """full_steps vs single_pick for one model: the difference and its 95% Newcombe interval."""

    model: str
    full_steps_n: int
    single_pick_n: int
    full_steps_strict_rate: float
    single_pick_strict_rate: float
    strict_diff: float = Field(description="single_pick minus full_steps.")
    strict_diff_ci: tuple[float, float]
    tolerant_diff: float
    tolerant_diff_ci: tuple[float, float]
    plan_score_diff: float | None = None


class InputFile(BaseModel):
    """One trace set read: where, in which format, its hash, and its records counted and skipped."""

    path: str
    format: str
    sha256: str
    records: int
    skipped: int = 0


class EvalReport(BaseModel):
    """Everything ``eval`` measured."""

    schema_version: int = SCHEMA_VERSION
    created_at: str
    tool_version: str
    inputs: list[InputFile]
    trace_set_sha256: str = Field(description="Hash over the input files' hashes, for provenance.")
    catalog_fingerprint: str
    tasks: int
    n_records: int
    n_skipped: int
    errors: list[str] = Field(default_factory=list, description="The first invalid-record messages.")
    groups: list[GroupReport]
    tiers: list[GroupReport]
    comparisons: list[Comparison]
    seconds: float
    workers: int


def _dist(res: Any) -> Distribution:
    return Distribution(**res.summary())


def group_report(model: str, variant: str, agg: GroupAgg) -> GroupReport:
    """A group's rates, intervals and distributions from its accumulator."""
    tolerant = agg.strict + agg.repaired
    length = agg.causes.get("length_truncated", 0)
    gold = None
    if agg.scored:
        mean = agg.score_sum / agg.scored
        var = max(0.0, agg.score_sq / agg.scored - mean * mean)
        gold = GoldStats(
            n=agg.scored,
            valid_tool_rate=(agg.valid_steps / agg.steps) if agg.steps else None,
            exact_rate=agg.exact / agg.scored,
            exact_ci=wilson(agg.exact, agg.scored),
            tool_f1_mean=agg.f1_sum / agg.scored,
            plan_score_mean=mean,
            plan_score_sd=var**0.5,
        )
    tier = agg.tiers.most_common(1)[0][0] if agg.tiers else "?"
    return GroupReport(
        model=model,
        prompt_variant=variant,
        tier=tier,
        sources=dict(agg.sources),
        n=agg.n,
        strict=agg.strict,
        tolerant=tolerant,
        strict_rate=agg.strict / agg.n if agg.n else 0.0,
        strict_ci=wilson(agg.strict, agg.n),
        tolerant_rate=tolerant / agg.n if agg.n else 0.0,
        tolerant_ci=wilson(tolerant, agg.n),
        length_rate=length / agg.n if agg.n else 0.0,
        length_ci=wilson(length, agg.n),
        finish_reason_counts=dict(agg.finish.most_common()),
        finish_reason_raw_counts=dict(agg.finish_raw.most_common()),
        failure_cause_counts=dict(agg.causes.most_common()),
        completion_tokens=_dist(agg.tokens),
        clean_completion_tokens=_dist(agg.clean_tokens),
        latency_ms=_dist(agg.latency),
        prompt_tokens=_dist(agg.prompt_tokens),
        length_by_prompt_tokens=[
            {"from_tokens": b * PROMPT_BUCKET_TOKENS, "n": n, "length": length_n, "length_below_cap": below}
            for b, (n, length_n, below) in sorted(agg.length_by_prompt.items())
        ],
        length_below_cap=agg.length_below_cap,
        max_tokens_counts={str(k): v for k, v in agg.max_tokens.most_common()},
        reasoning_leak_count=agg.leak,
        reasoning_leak_rate=agg.leak / agg.n if agg.n else 0.0,
        reasoning_tag_count=agg.tags,
        reasoning_tag_kinds=dict(agg.tag_kinds.most_common()),
        reasoning_field_count=agg.reasoning_field,
        from_label=agg.from_label,
        gold=gold,
    )


def tier_rollups(groups: dict[GroupKey, GroupAgg]) -> list[GroupReport]:
    """One report per tier (``tier:T``), every variant merged; a group counts under its most common tier."""
    by_tier: dict[str, GroupAgg] = {}
    for agg in groups.values():
        tier = agg.tiers.most_common(1)[0][0] if agg.tiers else "?"
        by_tier.setdefault(tier, GroupAgg()).merge(agg)
    return [group_report(f"tier:{t}", "*", a) for t, a in sorted(by_tier.items())]


def comparisons(groups: dict[GroupKey, GroupAgg]) -> list[Comparison]:
    """single_pick against full_steps for every model with records in both."""
    out = []
    for model in sorted({m for m, _ in groups}):
        full, single = groups.get((model, "full_steps")), groups.get((model, "single_pick"))
        if full is None or single is None or not full.n or not single.n:
            continue
        d, lo, hi = newcombe_diff(single.strict, single.n, full.strict, full.n)
        td, tlo, thi = newcombe_diff(single.strict + single.repaired, single.n, full.strict + full.repaired, full.n)
        score_diff = None
        if full.scored and single.scored:
            score_diff = single.score_sum / single.scored - full.score_sum / full.scored
        out.append(Comparison(
            model=model, full_steps_n=full.n, single_pick_n=single.n,
            full_steps_strict_rate=full.strict / full.n, single_pick_strict_rate=single.strict / single.n,
            strict_diff=d, strict_diff_ci=(lo, hi), tolerant_diff=td, tolerant_diff_ci=(tlo, thi),
            plan_score_diff=score_diff,
        ))
    return out


# ------------------------------------------------------------------------ markdown


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
            g.model, g.prompt_variant, g.tier, str(g.n), f"{_pct(g.strict_rate)} {_ci(g.strict_ci)}",
            _pct(g.tolerant_rate), top_finish, _num(g.completion_tokens.p95),
            _pct(g.gold.plan_score_mean) if g.gold else "–",
        ])
    return rows


SUMMARY_HEADERS = ["model", "variant", "tier", "n", "strict (95% CI)", "tolerant", "finish_reason", "tok p95", "plan score"]


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
        "Strict: a standard JSON parse after removing reasoning, fences and prose. Tolerant: strict or "
        "repaired. Intervals are 95% Wilson. A completion cut by the token limit never counts as a success.",
        "",
        "## Groups (model x prompt variant)",
        "",
        "| " + " | ".join(SUMMARY_HEADERS) + " |",
        "|" + "---|" * len(SUMMARY_HEADERS),
    ]
    lines += ["| " + " | ".join(r) + " |" for r in summary_rows(report)]
    lines += ["", "## Tiers", "", "| tier | n | strict (95% CI) | tolerant | length | reasoning leak |", "|---|---|---|---|---|---|"]
    for t in report.tiers:
        lines.append(
            f"| {t.tier} | {t.n} | {_pct(t.strict_rate)} {_ci(t.strict_ci)} | {_pct(t.tolerant_rate)} | "
            f"{_pct(t.length_rate)} | {_pct(t.reasoning_leak_rate)} |"
        )
    if report.comparisons:
        lines += [
            "", "## single_pick vs full_steps", "",
            "| model | n (full / single) | strict full | strict single | difference (95% CI) | plan score diff |",
            "|---|---|---|---|---|---|",
        ]
        for c in report.comparisons:
            lines.append(
                f"| {c.model} | {c.full_steps_n} / {c.single_pick_n} | {_pct(c.full_steps_strict_rate)} | "
                f"{_pct(c.single_pick_strict_rate)} | {100 * c.strict_diff:+.1f} pts {_ci(c.strict_diff_ci)} | "
                f"{'–' if c.plan_score_diff is None else f'{c.plan_score_diff:+.3f}'} |"
            )
    lines += ["", "## Failure causes and finish reasons", ""]
    for g in report.groups:
        causes = ", ".join(f"{k} {v}" for k, v in g.failure_cause_counts.items()) or "none"
        raw = ", ".join(f"`{k}` {v}" for k, v in g.finish_reason_raw_counts.items())
        lines.append(f"- **{g.model}** / {g.prompt_variant}: causes: {causes}; finish_reason (raw): {raw}; "
                     f"reasoning: {g.reasoning_tag_count} with tags "
                     f"({', '.join(f'{k} {v}' for k, v in g.reasoning_tag_kinds.items()) or 'none'}), "
                     f"{g.reasoning_field_count} with a separate field, "
                     f"{g.reasoning_leak_count} leaks; completion tokens p50 {_num(g.completion_tokens.p50)}, "
                     f"p95 {_num(g.completion_tokens.p95)}, max {_num(g.completion_tokens.max)}; latency p50 "
                     f"{_num(g.latency_ms.p50)} ms, p95 {_num(g.latency_ms.p95)} ms.")
    if any(g.gold for g in report.groups):
        lines += ["", "## Plan quality (records with a gold task)", "",
                  "| model | variant | n | valid tools | exact (95% CI) | tool F1 | plan score |", "|---|---|---|---|---|---|---|"]
        for g in report.groups:
            if g.gold:
                q = g.gold
                lines.append(f"| {g.model} | {g.prompt_variant} | {q.n} | {_pct(q.valid_tool_rate)} | "
                             f"{_pct(q.exact_rate)} {_ci(q.exact_ci)} | {q.tool_f1_mean:.3f} | {q.plan_score_mean:.3f} |")
    if report.errors:
        lines += ["", "## Skipped records", ""] + [f"- {e}" for e in report.errors]
    if plots:
        lines += ["", "## Plots", ""] + [f"![{p}]({p})" for p in plots]
    lines += ["", "## Inputs", ""] + [f"- `{i.path}` ({i.format}, {i.records} records, sha256 `{i.sha256[:16]}`)" for i in report.inputs]
    return "\n".join(lines) + "\n"
