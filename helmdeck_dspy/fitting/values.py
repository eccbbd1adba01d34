"""Profile values as a fit collects them: each with a note saying whether it was fitted (and from
what) or assumed (and why), pooled over the prompt variants or per variant where they differ."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from helmdeck_dspy.engines.profile import FitSource, SimProfile
from helmdeck_dspy.evaluation.stats import newcombe_diff, wilson


@dataclass(frozen=True)
class Value:
    """How one profile value came about: ``fitted`` (with the evidence) or ``assumed`` (with why)."""

    how: str
    note: str


def split_rate(counts: Mapping[str, tuple[float, int]]) -> tuple[float, dict[str, float], str]:
    """(pooled rate, per-variant rates when the variants differ, evidence text).

    The variants differ when the Newcombe 95% interval of their difference excludes 0, or when the
    pooled rate falls outside one variant's own Wilson 95% interval. A count may be fractional (an
    estimated split of answers between two behaviours).
    """
    k = sum(c for c, _ in counts.values())
    n = sum(m for _, m in counts.values())
    pooled = k / n if n else 0.0
    parts = ", ".join(f"{_count(c)}/{m} {v}" for v, (c, m) in counts.items())
    if len(counts) == 2 and all(m for _, m in counts.values()):
        (k1, n1), (k2, n2) = counts.values()
        _, lo, hi = newcombe_diff(k1, n1, k2, n2)
        outside = any(not (w[0] - 1e-12 <= pooled <= w[1] + 1e-12) for w in (wilson(k1, n1), wilson(k2, n2)))
        if lo > 0 or hi < 0 or outside:
            return pooled, {v: c / m for v, (c, m) in counts.items()}, f"{parts}; the variants differ at 95%"
    return pooled, {}, parts


def _count(c: float) -> str:
    return f"{c:.0f}" if abs(c - round(c)) < 1e-9 else f"{c:.1f}"


class Builder:
    """Collects profile values with their notes, pooled or per variant."""

    def __init__(self, base: SimProfile) -> None:
        self.base = base
        self.values: dict[str, dict[str, Any]] = {"planning": {}, "shape": {}, "timing": {}}
        self.over: dict[str, dict[str, dict[str, Any]]] = {}
        self.notes: dict[str, Value] = {}

    def set(self, part: str, name: str, value: Any, how: str, note: str) -> None:
        self.values[part][name] = round_value(value)
        self.notes[f"{part}.{name}"] = Value(how, note)

    def rate(self, part: str, name: str, counts: Mapping[str, tuple[float, int]], what: str,
             scale: dict[str, float] | None = None, split: bool | None = None) -> None:
        """A rate counted per variant (``k/n`` each, times its ``scale``): pooled in the table, and per
        variant too where the variants differ at 95% (``split`` None), or always / never."""
        if not sum(m for _, m in counts.values()):
            self.set(part, name, getattr(getattr(self.base, part), name), "assumed", f"nothing to count ({what})")
            return
        pooled, per, evidence = split_rate(counts)
        factor = scale or {}
        mean_factor = sum(factor.get(v, 1.0) * m for v, (_, m) in counts.items()) / max(sum(m for _, m in counts.values()), 1)
        if split and not per and len(counts) > 1:
            per = {v: c / m if m else 0.0 for v, (c, m) in counts.items()}
            if len({round_value(r * factor.get(v, 1.0)) for v, r in per.items()}) > 1:
                evidence += "; per variant, as the variants' mixes differ at 95%"
            else:
                per = {}  # the same for every variant: said once
        elif split is False:
            per = {}
        self.set(part, name, min(1.0, pooled * mean_factor), "fitted", f"{what}: {evidence}")
        for v, r in per.items():
            self.override(v, part, name, min(1.0, r * factor.get(v, 1.0)), "fitted", f"{what} in {v}")

    def override(self, variant: str, part: str, name: str, value: Any, how: str, note: str) -> None:
        self.over.setdefault(variant, {}).setdefault(part, {})[name] = round_value(value)
        self.notes[f"variants.{variant}.{part}.{name}"] = Value(how, note)

    def value(self, variant: str, part: str, name: str) -> Any:
        got = self.over.get(variant, {}).get(part, {})
        return got[name] if name in got else self.values[part].get(name, getattr(getattr(self.base, part), name))

    def assume_rest(self) -> None:
        for part in ("planning", "shape", "timing"):
            obj = getattr(self.base, part)
            for name in type(obj).model_fields:
                if name not in self.values[part]:
                    self.set(part, name, getattr(obj, name), "assumed", ASSUMED.get(name, "the base profile's value"))

    def profile(self, name: str, model: str, description: str, source: FitSource | None) -> SimProfile:
        data = self.base.model_dump(exclude={"variants", "fitted_to"})
        data.update(name=name, model=model, description=description, fitted_to=source)
        for part in ("planning", "shape", "timing"):
            data[part] = {**data[part], **self.values[part]}
        over: dict[str, dict[str, dict[str, Any]]] = {}
        for v, parts in self.over.items():
            for part, vals in parts.items():
                # a variant's value equal to the table's says nothing: left out
                own = {k: x for k, x in vals.items() if x != data[part].get(k)}
                if own:
                    over.setdefault(v, {})[part] = own
        data["variants"] = over
        return SimProfile.model_validate(data)


ASSUMED = {
    "pipeline_blindness": "not told apart from wrong-tool picks in these records",
    "demo_gain": "one prompt per variant in the set, so the demos' effect cannot be measured",
    "reasoning_base_tokens": "no reasoning modelled",
    "reasoning_per_step_tokens": "no reasoning modelled",
    "reasoning_sigma": "no reasoning modelled",
    "reasoning_counts_toward_cap": "no reasoning modelled",
    "verbose_rate": "answer length is fitted through completion_token_scale instead",
    "verbose_tokens_per_step": "unused (verbose_rate 0)",
    "verbose_sigma": "unused (verbose_rate 0)",
    "rationale_words": "the base profile's value (the scale absorbs the rationale's length)",
    "strict_json_obeys": "the base profile's value (the budget decides whether JSON mode is asked for)",
    "tokens_per_s_sigma": "not told apart from the time-to-first-token spread",
    "no_json_tokens": "no prose answers in the set",
    "no_json_sigma": "no prose answers in the set",
}


def round_value(value: Any) -> Any:
    if isinstance(value, float) and not isinstance(value, bool):
        return float(f"{value:.4g}") if abs(value) >= 1 else round(value, 4)
    return value
