"""Calibration: turn an evaluation report into proposed budget-table changes.

Per model with enough data (rules and thresholds in ``eval/calibration.toml``):

- ``output_tokens`` from the completion tokens of clean answers and the share cut off at the
  current cap (a right-censored log-normal fit when the cap censored many answers);
- ``tier`` from the lower Wilson bound of full_steps strict parse success (length cut-offs set
  aside when a larger cap is proposed) and the mean plan score;
- ``prompt_variant`` when the other variant beats the one the model runs today by a margin whose
  Newcombe interval excludes zero;
- ``is_hybrid_reasoning`` when reasoning shows in more than a set share of responses;
- ``max_catalog_bytes`` when length cut-offs rise with prompt size.

Models are calibrated per source kind (a report never merges kinds): every proposal, and its
evidence, names the kind it rests on. A field the data cannot assess (too few records of the
variant it needs) is listed under ``insufficient`` with that field. Applying proposals to the
table is :mod:`helmdeck_dspy.calibration.apply`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from helmdeck_dspy.budgets import (
    Budget,
    BudgetTable,
    resolve_prompt_variant,
)
from helmdeck_dspy.domain import TIERS, Variant
from helmdeck_dspy.errors import DataFileError, validation_message
from helmdeck_dspy.evaluation.report import (
    SCHEMA_VERSION,
    EvalReport,
    GroupReport,
    KindLabelled,
    kind_rank,
)
from helmdeck_dspy.evaluation.stats import newcombe_diff, wilson
from helmdeck_dspy.io.datafiles import read_json, read_toml
from helmdeck_dspy.io.resources import bundled_dir


class Proposal(KindLabelled):
    """One proposed change to a model's budget row, with the evidence for it."""

    model: str
    kind: str = Field(default="live", description="The source kind of the records the evidence comes from (live, "
                      "sim:<profile>...); :func:`calibrate` always sets it (the default mirrors a trace record's).")
    field: str
    current: Any
    proposed: Any
    evidence: dict[str, Any]


class Insufficient(BaseModel):
    """Too few records of one kind for a model (``field`` None) or for one field of its row."""

    model: str
    kind: str
    n_full_steps: int
    n_single_pick: int
    reason: str
    field: str | None = Field(default=None, description="The budget field left unassessed; None: the whole model.")


class Unchanged(BaseModel):
    """A model whose records of one kind are enough and call for no change."""

    model: str
    kind: str


class Assessment(BaseModel):
    """What the tier rule measured for a model from its full_steps records of one kind: the
    provenance ``--apply`` stamps on the row (n, strict rate, its Wilson interval)."""

    model: str
    kind: str
    evidence: dict[str, Any]


class Calibration(BaseModel):
    """What ``calibrate`` proposes for one report."""

    report_trace_set_sha256: str
    min_n: int
    proposals: list[Proposal] = Field(default_factory=list)
    insufficient: list[Insufficient] = Field(default_factory=list)
    unchanged: list[Unchanged] = Field(default_factory=list, description="Models with enough data and nothing to change.")
    assessed: list[Assessment] = Field(default_factory=list, description="The tier rule's evidence per model and kind.")


def load_rules(path: Path | None = None) -> dict[str, Any]:
    """The calibration rules (``eval/calibration.toml`` unless ``path`` is given)."""
    p = path or bundled_dir() / "calibration.toml"
    return read_toml(p)


def load_report(path: str | Path) -> EvalReport:
    """Read an eval ``report.json``.

    Raises:
        DataFileError: the file is not JSON, or not an eval report (the first problem is named).
    """
    p = Path(path)
    data = read_json(p, DataFileError, "not an eval report.json")
    version = data.get("schema_version") if isinstance(data, dict) else None
    if isinstance(version, int) and version != SCHEMA_VERSION:
        raise DataFileError(str(p), f"eval report schema_version {version}, this helmdeck-dspy reads {SCHEMA_VERSION}: "
                                    "run `helmdeck-dspy eval --out DIR` again to write a current report")
    try:
        return EvalReport.model_validate(data)
    except ValidationError as exc:
        detail = validation_message(exc, subject="report", count_more=True)
        raise DataFileError(str(p), f"not an eval report.json: {detail}") from None


def _ndtri(p: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(p))


def _cap_of(g: GroupReport, budget: Budget) -> int:
    if g.max_tokens_counts:
        return int(max(g.max_tokens_counts.items(), key=lambda kv: kv[1])[0])
    return budget.output_tokens


def _length_share(g: GroupReport) -> tuple[int, int]:
    """(cut-offs at the cap, answers that ran to the end or to the cap). Cut-offs far below the
    cap are not the cap's doing and are left to the catalog rule."""
    length = g.failure_cause_counts.get("length_truncated", 0) - g.length_below_cap
    return length, g.tolerant + length


def estimate_output_tokens(g: GroupReport, budget: Budget, rules: dict[str, Any]) -> tuple[int | None, dict[str, Any]]:
    """The output cap the data support, and the evidence; None when the data say nothing."""
    r = rules["output_tokens"]
    cap = _cap_of(g, budget)
    length, finished = _length_share(g)
    share = length / finished if finished else 0.0
    clean = g.clean_completion_tokens
    evidence: dict[str, Any] = {"n": g.n, "variant": g.prompt_variant, "cap_seen": cap, "length_cutoffs": length,
                                "length_rate": round(share, 4), "length_ci": [round(x, 4) for x in wilson(length, finished)],
                                "clean_p50": clean.p50, "clean_p95": clean.p95}
    if share > r["length_rate_trigger"]:
        if clean.p50 and clean.p50 < cap and share < 1.0:
            # The cap censored the tail: fit a log-normal to F(cap) = 1 - share and the clean median.
            z_cap = _ndtri(1 - share)
            z_med = _ndtri(0.5 * (1 - share))
            sigma = (math.log(cap) - math.log(clean.p50)) / (z_cap - z_med)
            mu = math.log(cap) - sigma * z_cap
            fitted = math.exp(mu + sigma * _ndtri(r["quantile"]))
            need = fitted / r["headroom"]  # a fitted tail already errs high: no headroom on top
            evidence.update(method=f"log-normal fitted to the clean median and the cut-off share: q{r['quantile']} = {fitted:.0f} tok",
                            fitted_median=round(math.exp(mu)), fitted_q=round(fitted))
        else:
            need = cap * 1.5
            evidence.update(method="cap x 1.5: too few clean answers below the cap to fit")
    elif clean.p95:
        need = clean.p95
        evidence.update(method="p95 of clean answers")
    else:
        return None, evidence
    proposed = math.ceil(need * r["headroom"] / r["round_to"]) * r["round_to"]
    proposed = int(min(max(proposed, r["minimum"]), r["maximum"]))
    return proposed, evidence


def _tier(g: GroupReport, rules: dict[str, Any], drop_length: bool) -> tuple[str, dict[str, Any]]:
    length = _length_share(g)[0] if drop_length else 0
    n = g.n - length
    lo, hi = wilson(g.strict, n)
    score = g.gold.plan_score_mean if g.gold else None
    if score is not None and length and g.gold and g.gold.n > length:
        score = score * g.gold.n / (g.gold.n - length)  # cut-offs scored 0; set them aside here too
    evidence = {"n": n, "strict": g.strict, "strict_rate": round(g.strict / n, 4) if n else 0.0,
                "strict_ci": [round(lo, 4), round(hi, 4)], "plan_score": None if score is None else round(score, 4),
                "length_cutoffs_set_aside": length}
    *gated, lowest = TIERS  # every tier but the last has a gate; the last takes the rest
    for tier in gated:
        rule = rules["tier"][tier]
        if lo >= rule["strict_lb"] and (score is None or score >= rule["plan_score"]):
            return tier, evidence
    return lowest, evidence


def _conclusively_below(current: str, evidence: dict[str, Any], rules: dict[str, Any]) -> bool:
    """Whether the data rule out the current tier (upper bound or plan score below its gate)."""
    rule = rules["tier"].get(current)
    if rule is None:
        return True  # Tier C has no gate to fall below
    score = evidence["plan_score"]
    return evidence["strict_ci"][1] < rule["strict_lb"] or (score is not None and score < rule["plan_score"])


def _catalog_signal(g: GroupReport, rules: dict[str, Any]) -> dict[str, Any] | None:
    """Cut-offs below the output cap that rise with prompt size: the prompt is crowding the answer."""
    buckets = [b for b in g.length_by_prompt_tokens if b["n"]]
    if len(buckets) < 2:
        return None
    half = len(buckets) // 2
    low, high = buckets[:half], buckets[half:]
    ln, ll = sum(b["n"] for b in low), sum(b.get("length_below_cap", 0) for b in low)
    hn, hl = sum(b["n"] for b in high), sum(b.get("length_below_cap", 0) for b in high)
    d, lo, hi = newcombe_diff(hl, hn, ll, ln)
    if lo <= 0 or d < rules["catalog"]["min_diff"]:
        return None
    return {"low_prompts": {"n": ln, "length": ll}, "high_prompts": {"n": hn, "length": hl},
            "diff": round(d, 4), "diff_ci": [round(lo, 4), round(hi, 4)]}


def calibrate(report: EvalReport, table: BudgetTable, *, min_n: int | None = None, rules: dict[str, Any] | None = None) -> Calibration:
    """Propose budget-table changes for every model in ``report``, from each kind of its records
    separately (a model with live and simulated groups gets two sets of proposals)."""
    rules = rules or load_rules()
    need = min_n if min_n is not None else int(rules["min_n"])
    out = Calibration(report_trace_set_sha256=report.trace_set_sha256, min_n=need)
    pairs = sorted({(g.kind, g.model) for g in report.groups}, key=lambda km: (kind_rank(km[0]), km[1]))
    for kind, model in pairs:
        groups = {g.prompt_variant: g for g in report.groups if g.model == model and g.kind == kind}
        full, single = groups.get("full_steps"), groups.get("single_pick")
        n_full, n_single = (full.n if full else 0), (single.n if single else 0)
        if max(n_full, n_single) < need:
            out.insufficient.append(Insufficient(model=model, kind=kind, n_full_steps=n_full, n_single_pick=n_single,
                                                 reason=f"insufficient data: fewer than {need} records per variant"))
            continue
        budget = table.lookup(model)
        found: list[Proposal] = []

        def short(field: str, reason: str, kind: str = kind, model: str = model, n_full: int = n_full,
                  n_single: int = n_single) -> None:
            out.insufficient.append(Insufficient(model=model, kind=kind, n_full_steps=n_full, n_single_pick=n_single,
                                                 field=field, reason=f"{field} not assessed: {reason}"))

        def propose(field: str, current: Any, proposed: Any, evidence: dict[str, Any], kind: str = kind,
                    model: str = model, found: list[Proposal] = found) -> None:
            if proposed != current:
                found.append(Proposal(model=model, kind=kind, field=field, current=current, proposed=proposed,
                                      evidence={"kind": kind, **evidence}))

        if full is not None and n_full >= need:
            cap_full, _ = estimate_output_tokens(full, budget, rules)
            raising = cap_full is not None and cap_full > _cap_of(full, budget)
            tier, evidence = _tier(full, rules, drop_length=raising)
            out.assessed.append(Assessment(model=model, kind=kind, evidence={"kind": kind, **evidence}))
            if "ABC".index(tier) > "ABC".index(budget.tier) and not _conclusively_below(budget.tier, evidence, rules):
                tier = budget.tier  # the interval still reaches the current tier: keep it
            propose("tier", budget.tier, tier, evidence)
        else:
            tier = budget.tier
            short("tier", f"{n_full} full_steps records, fewer than {need}")

        # The variant the model runs today, and whether the other one clearly beats it.
        running = resolve_prompt_variant(budget.tier, budget.prompt_variant)
        variant = resolve_prompt_variant(tier, budget.prompt_variant)
        if full is not None and single is not None and n_full >= need and n_single >= need:
            d, lo, hi = newcombe_diff(single.strict, single.n, full.strict, full.n)  # single - full
            margin = rules["prompt_variant"]["margin"]
            better: Variant | None = (
                "single_pick" if (d >= margin and lo > 0) else "full_steps" if (d <= -margin and hi < 0) else None
            )
            evidence = {"single_pick": {"n": single.n, "strict": single.strict}, "full_steps": {"n": full.n, "strict": full.strict},
                        "diff_single_minus_full": round(d, 4), "diff_ci": [round(lo, 4), round(hi, 4)]}
            if better is not None and better != running:
                propose("prompt_variant", budget.prompt_variant, better, evidence)
                variant = better
        else:
            short("prompt_variant", f"needs {need} records of each variant")

        # The output cap for the variant the model will run.
        g = groups.get(variant)
        if g is not None and g.n >= need:
            cap, evidence = estimate_output_tokens(g, budget, rules)
            r = rules["output_tokens"]
            lowering_ok = r.get("allow_lowering", False) or (cap is not None and cap > budget.output_tokens)
            if cap is not None and lowering_ok and abs(cap - budget.output_tokens) >= r["min_change"] * budget.output_tokens:
                propose("output_tokens", budget.output_tokens, cap, evidence)
            signal = _catalog_signal(g, rules)
            if signal and budget.max_catalog_bytes > 0:
                c = rules["catalog"]
                smaller = max(int(budget.max_catalog_bytes * c["shrink"]), c["minimum"])
                propose("max_catalog_bytes", budget.max_catalog_bytes, smaller, signal)
        else:
            short("output_tokens", f"{g.n if g else 0} {variant} records (the variant it runs), fewer than {need}")

        total = n_full + n_single
        seen = sum((x.reasoning_tag_count + x.reasoning_field_count) for x in (full, single) if x is not None)
        if total and seen / total > rules["hybrid_reasoning"]["share"] and not budget.is_hybrid_reasoning:
            propose("is_hybrid_reasoning", False, True, {"n": total, "with_reasoning": seen, "share": round(seen / total, 4)})

        if found:
            out.proposals.extend(found)
        else:
            out.unchanged.append(Unchanged(model=model, kind=kind))
    return out
