"""The evaluation report: pydantic models (``report.json``) and building them from the group
accumulators (the Markdown is :mod:`helmdeck_dspy.evaluation.markdown`'s).

Every group, tier roll-up and comparison carries its ``kind`` (the records' source kind, from
:func:`~helmdeck_dspy.traces.record.source_kind`): groups of different kinds are never merged,
and every label shows the kind next to the model (:func:`group_label`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from helmdeck_dspy.evaluation.aggregate import PROMPT_BUCKET_TOKENS, GroupAgg, GroupKey
from helmdeck_dspy.evaluation.stats import newcombe_diff, newcombe_paired_diff, wilson
from helmdeck_dspy.traces.record import (
    IMPORTED,
    LIVE,
    MEASURED_KINDS,
    PUBLISHED,
    REPLAY,
    UNKNOWN,
    is_simulated,
)

SCHEMA_VERSION = 2
"""2: groups, tiers and comparisons carry ``kind``; ``kinds``; ``calls_per_plan`` per group. Later
additions are optional fields with defaults (``native``, ``native_rate``, ``request_modes``,
``modes``), so reports written before them still read."""

KIND_NOTES = {
    LIVE: "answered by the model in a recorded run",
    IMPORTED: "converted from a provider's request log",
    PUBLISHED: "figures from a publication (outcome labels, no content)",
    REPLAY: "re-served from a trace file by the replay LM; where the answers first came from is not known",
    UNKNOWN: "records whose source names no known kind",
}
SIM_NOTE = "SIMULATED by the project's simulator with that profile: not a measurement of the named model"


def kind_rank(kind: str) -> tuple[int, str]:
    """Sort key for kinds: measured ones first (live, imported, published), then replay,
    unknown, and the simulated ones last."""
    order = (*MEASURED_KINDS, REPLAY, UNKNOWN)
    return (order.index(kind), "") if kind in order else (len(order), kind)


def group_label(model: str, kind: str) -> str:
    """How a group is named in every table, plot and heading: the model with its kind beside it."""
    return f"{model} · {kind}"


class KindLabelled(BaseModel):
    """A result about one model's records of one source kind, named ``model · kind``."""

    kind: str
    model: str

    @property
    def label(self) -> str:
        """The model with its kind beside it."""
        return group_label(self.model, self.kind)


def kind_note(kind: str) -> str:
    """One phrase saying what records of ``kind`` are."""
    return SIM_NOTE if is_simulated(kind) else KIND_NOTES.get(kind, KIND_NOTES[UNKNOWN])


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


class CallsPerPlan(BaseModel):
    """LM calls (plan and filter records) per planning request in one group.

    A request is one ``(task_id, intent)`` of the group; records that name neither are each a
    request of one plan call. One successful plan is one plan call, plus one filter call when the
    budget asks for it: more plan calls for one request mean a retry or a hidden second request.
    """

    requests: int = Field(description="Planning requests: identified ones plus plan records that name none.")
    identified: int = Field(description="Requests identified by (task_id, intent).")
    calls: int = Field(description="Plan and filter records.")
    plan_calls: int
    filter_calls: int
    mean: float | None = Field(description="Records per request.")
    max: int | None = Field(description="Most records of one request.")
    repeated: int = Field(description="Requests with more than one plan call.")


class GroupReport(KindLabelled):
    """One kind x model x prompt_variant group (or a tier roll-up of one kind, with model ``tier:<T>``)."""

    kind: str = Field(description="The records' source kind: live, imported, published, replay, unknown or sim:<profile>.")
    model: str
    prompt_variant: str
    tier: str
    sources: dict[str, int]
    n: int
    strict: int
    tolerant: int
    native: int = Field(0, description="Plans given as native tool calls (not counted as strict or tolerant).")
    strict_rate: float
    strict_ci: tuple[float, float]
    tolerant_rate: float
    tolerant_ci: tuple[float, float]
    native_rate: float = 0.0
    request_modes: dict[str, int] = Field(
        default_factory=dict, description='Records per request mode: "text" (JSON asked for) or "native" (tools offered).')
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
    calls_per_plan: CallsPerPlan | None = None


class Comparison(KindLabelled):
    """full_steps vs single_pick for one model of one kind: the difference and its 95% Newcombe interval."""

    full_steps_n: int = Field(description="full_steps records of this model and kind.")
    single_pick_n: int = Field(description="single_pick records of this model and kind.")
    full_steps_strict_rate: float
    single_pick_strict_rate: float
    strict_diff: float = Field(description="single_pick minus full_steps.")
    strict_diff_ci: tuple[float, float]
    tolerant_diff: float
    tolerant_diff_ci: tuple[float, float]
    plan_score_diff: float | None = None
    paired_n: int = Field(default=0, description="Requests (task_id, intent) answered under both variants.")
    paired_strict_diff: float | None = Field(
        default=None, description="single_pick minus full_steps strict rate over the paired requests only.")
    paired_strict_diff_ci: tuple[float, float] | None = Field(
        default=None, description="Its 95% interval for paired proportions (Newcombe's method 10).")


class ModeComparison(KindLabelled):
    """JSON-text requests vs native-tool-call requests for one model, kind and variant: the share of
    records that produced a plan each way (strict, repaired or native) and the difference with its
    95% Newcombe interval."""

    prompt_variant: str
    text_n: int
    text_plans: int
    text_rate: float
    native_n: int
    native_plans: int
    native_rate: float
    diff: float = Field(description="native minus text.")
    diff_ci: tuple[float, float]


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
    kinds: dict[str, int] = Field(default_factory=dict, description="Plan records per source kind.")
    errors: list[str] = Field(default_factory=list, description="The first invalid-record messages.")
    groups: list[GroupReport]
    tiers: list[GroupReport]
    comparisons: list[Comparison]
    modes: list[ModeComparison] = Field(
        default_factory=list, description="JSON text vs native tool calls, where a model was recorded both ways.")
    seconds: float
    workers: int


def _dist(res: Any) -> Distribution:
    return Distribution(**res.summary())


def calls_per_plan(agg: GroupAgg) -> CallsPerPlan:
    """LM calls per planning request from a group's accumulator."""
    keyed = list(agg.requests.values())
    plan_calls = sum(p for p, _ in keyed) + agg.unkeyed_plan
    filter_calls = sum(f for _, f in keyed) + agg.unkeyed_filter
    requests = len(keyed) + agg.unkeyed_plan
    most = max((p + f for p, f in keyed), default=0)
    if agg.unkeyed_plan:
        most = max(most, 1)
    return CallsPerPlan(
        requests=requests, identified=len(keyed), calls=plan_calls + filter_calls, plan_calls=plan_calls,
        filter_calls=filter_calls, mean=(plan_calls + filter_calls) / requests if requests else None,
        max=most or None, repeated=sum(1 for p, _ in keyed if p > 1),
    )


def group_report(kind: str, model: str, variant: str, agg: GroupAgg) -> GroupReport:
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
        kind=kind,
        model=model,
        prompt_variant=variant,
        tier=tier,
        sources=dict(agg.sources),
        n=agg.n,
        strict=agg.strict,
        tolerant=tolerant,
        native=agg.native,
        native_rate=agg.native / agg.n if agg.n else 0.0,
        request_modes=dict(agg.mode_n.most_common()),
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
        calls_per_plan=calls_per_plan(agg),
    )


def kind_counts(groups: dict[GroupKey, GroupAgg]) -> dict[str, int]:
    """Plan records per kind, measured kinds first."""
    counts: dict[str, int] = {}
    for (kind, _, _), agg in groups.items():
        counts[kind] = counts.get(kind, 0) + agg.n
    return {k: counts[k] for k in sorted(counts, key=kind_rank)}


def _key_order(key: GroupKey) -> tuple:
    kind, model, variant = key
    return (kind_rank(kind), model, variant)


def group_reports(groups: dict[GroupKey, GroupAgg]) -> list[GroupReport]:
    """One report per (kind, model, variant) group: measured kinds first, simulated ones last."""
    return [group_report(k, m, v, groups[(k, m, v)]) for k, m, v in sorted(groups, key=_key_order)]


def tier_rollups(groups: dict[GroupKey, GroupAgg]) -> list[GroupReport]:
    """One report per kind and tier (model ``tier:T``), the kind's models and variants merged; a
    group counts under its most common tier. Kinds are never merged."""
    by_tier: dict[tuple[str, str], GroupAgg] = {}
    for (kind, _, _), agg in groups.items():
        tier = agg.tiers.most_common(1)[0][0] if agg.tiers else "?"
        by_tier.setdefault((kind, tier), GroupAgg()).merge(agg)
    order = sorted(by_tier, key=lambda kt: (kind_rank(kt[0]), kt[1]))
    return [group_report(k, f"tier:{t}", "*", by_tier[(k, t)]) for k, t in order]


def _paired(single: dict[int, int], full: dict[int, int]) -> dict[str, Any]:
    """The paired strict comparison over requests answered under both variants (empty when none)."""
    shared = single.keys() & full.keys()
    if not shared:
        return {}
    cells = [0, 0, 0, 0]  # both strict, single_pick only, full_steps only, neither
    for key in shared:
        s, f = single[key] == 2, full[key] == 2
        cells[0 if s and f else 1 if s else 2 if f else 3] += 1
    d, lo, hi = newcombe_paired_diff(*cells)
    return {"paired_n": len(shared), "paired_strict_diff": d, "paired_strict_diff_ci": (lo, hi)}


def mode_comparisons(groups: dict[GroupKey, GroupAgg]) -> list[ModeComparison]:
    """Native tool-call requests against JSON-text requests, for every group recorded both ways."""
    out = []
    for key in sorted(groups, key=_key_order):
        agg = groups[key]
        tn, nn = agg.mode_n.get("text", 0), agg.mode_n.get("native", 0)
        if not tn or not nn:
            continue
        tp, np_ = agg.mode_ok.get("text", 0), agg.mode_ok.get("native", 0)
        d, lo, hi = newcombe_diff(np_, nn, tp, tn)
        out.append(ModeComparison(kind=key[0], model=key[1], prompt_variant=key[2], text_n=tn, text_plans=tp,
                                  text_rate=tp / tn, native_n=nn, native_plans=np_, native_rate=np_ / nn, diff=d,
                                  diff_ci=(lo, hi)))
    return out


def comparisons(groups: dict[GroupKey, GroupAgg]) -> list[Comparison]:
    """single_pick against full_steps for every model with records of one kind in both."""
    out = []
    for kind, model in sorted({(k, m) for k, m, _ in groups}, key=lambda km: (kind_rank(km[0]), km[1])):
        full, single = groups.get((kind, model, "full_steps")), groups.get((kind, model, "single_pick"))
        if full is None or single is None or not full.n or not single.n:
            continue
        d, lo, hi = newcombe_diff(single.strict, single.n, full.strict, full.n)
        td, tlo, thi = newcombe_diff(single.strict + single.repaired, single.n, full.strict + full.repaired, full.n)
        score_diff = None
        if full.scored and single.scored:
            score_diff = single.score_sum / single.scored - full.score_sum / full.scored
        paired = _paired(single.answers, full.answers)
        out.append(Comparison(
            **paired,
            kind=kind, model=model, full_steps_n=full.n, single_pick_n=single.n,
            full_steps_strict_rate=full.strict / full.n, single_pick_strict_rate=single.strict / single.n,
            strict_diff=d, strict_diff_ci=(lo, hi), tolerant_diff=td, tolerant_diff_ci=(tlo, thi),
            plan_score_diff=score_diff,
        ))
    return out
