"""A per-model decline threshold fitted on dev answers (issue 38, item 2).

Each dev request gives one :class:`DecisionPoint`: the first answer's decline probability
(``planning.decision``), whether the answer declined, and whether declining was right (no tool
serves the request). A threshold ``t`` declines exactly the requests with ``p_decline >= t``.
:func:`fit_threshold` scores every threshold that splits the points differently by call-or-not
accuracy, each dev set weighted equally (as the strategy rule weighs benchmarks), and keeps the best;
the model's own choice (its answers as they came) is scored the same way beside it.

The rule, written before any probability was recorded (docs/results/strategies.md): a threshold
replaces the model's own choice only when it raises that weighted accuracy by at least
:data:`MIN_GAIN` (1 point); ties between thresholds go to the one nearest 0.5, where the model's own
greedy choice roughly sits. Otherwise the fit proposes none (``threshold`` None).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from pydantic import BaseModel, Field

from helmdeck_dspy.evaluation.stats import wilson

MIN_GAIN = 0.01
"""Weighted accuracy a threshold must add over the model's own choice to be proposed."""
BINS = 10


class DecisionPoint(BaseModel):
    """One dev request's first answer: how likely it declined, whether it did, whether it should."""

    dev_set: str = Field(description="Which dev set (each is weighted equally).")
    task_id: str
    p_decline: float = Field(ge=0.0, le=1.0)
    declined: bool
    unserved: bool = Field(description="No tool serves the request: declining is right.")


class ReliabilityBin(BaseModel):
    """Requests whose decline probability lies in ``[low, high]``: how often declining was right."""

    low: float
    high: float
    n: int
    mean_p: float
    unserved: int
    interval: tuple[float, float]


class ThresholdFit(BaseModel):
    """What a fit found (see the module docstring)."""

    n: int
    served: int
    unserved: int
    dev_sets: dict[str, int]
    own_accuracy: float = Field(description="Weighted call-or-not accuracy of the answers as they came.")
    best: float = Field(description="The best threshold's cut (decline when p_decline >= best).")
    best_accuracy: float
    threshold: float | None = Field(description="The proposed threshold: best, when it gains MIN_GAIN; else None.")
    served_declined: int = Field(description="At the proposed threshold (or as the answers came, when None).")
    unserved_declined: int
    bins: list[ReliabilityBin]


def _accuracy(points: list[DecisionPoint], declines: list[bool]) -> float:
    """Call-or-not accuracy, each dev set weighted equally."""
    right: dict[str, list[bool]] = defaultdict(list)
    for point, declined in zip(points, declines):
        right[point.dev_set].append(declined == point.unserved)
    return sum(sum(r) / len(r) for r in right.values()) / len(right)


def reliability(points: list[DecisionPoint], bins: int = BINS) -> list[ReliabilityBin]:
    """The points in ``bins`` bins of near-equal size by ``p_decline`` (a small model's probabilities
    crowd near 0, where equal-width bins would hide them in one), with how often declining was right."""
    ordered = sorted(points, key=lambda p: p.p_decline)
    size = max(1, -(-len(ordered) // bins))
    out = []
    for start in range(0, len(ordered), size):
        inside = ordered[start:start + size]
        hits = sum(p.unserved for p in inside)
        lo, hi = wilson(hits, len(inside))
        out.append(ReliabilityBin(low=inside[0].p_decline, high=inside[-1].p_decline, n=len(inside), unserved=hits,
                                  mean_p=round(sum(p.p_decline for p in inside) / len(inside), 4),
                                  interval=(round(lo, 4), round(hi, 4))))
    return out


def fit_threshold(points: list[DecisionPoint]) -> ThresholdFit:
    """The best decline threshold on ``points`` and whether it beats the model's own choice.

    Raises:
        ValueError: No points.
    """
    if not points:
        raise ValueError("no decision points to fit a threshold on")
    own = _accuracy(points, [p.declined for p in points])
    values = sorted({p.p_decline for p in points})
    cuts = [values[0], *((a + b) / 2 for a, b in zip(values, values[1:])), 1.0 + 1e-9]
    scored = [(round(_accuracy(points, [p.p_decline >= t for p in points]), 6), -abs(t - 0.5), t) for t in cuts]
    accuracy, _, best = max(scored)
    threshold = round(best, 6) if accuracy >= own + MIN_GAIN else None
    declines = [p.p_decline >= best if threshold is not None else p.declined for p in points]
    per_set: dict[str, int] = defaultdict(int)
    for p in points:
        per_set[p.dev_set] += 1
    return ThresholdFit(
        n=len(points), served=sum(not p.unserved for p in points), unserved=sum(p.unserved for p in points),
        dev_sets=dict(per_set), own_accuracy=round(own, 4), best=round(best, 6), best_accuracy=accuracy,
        threshold=threshold, served_declined=sum(d and not p.unserved for p, d in zip(points, declines)),
        unserved_declined=sum(d and p.unserved for p, d in zip(points, declines)), bins=reliability(points))


def write_reliability_plot(fit: ThresholdFit, path: str | Path, title: str) -> None:
    """Draw the fit's reliability bins (how often declining was right against the mean decline
    probability, with Wilson intervals) and the threshold, as a PNG written whole or not at all."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from helmdeck_dspy.io.atomic import atomic_writer

    fig = Figure(figsize=(5.5, 5.0), dpi=120)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    low = max(1e-4, min(b.low for b in fit.bins) / 2)
    high = min(1 - 1e-4, max(0.99, max(b.high for b in fit.bins)))
    ax.set_xscale("logit")  # a small model's probabilities crowd near 0: a logit axis spreads them
    grid = [low * (high / low) ** (i / 200) for i in range(201)]
    ax.plot(grid, grid, color="0.7", linestyle="--", linewidth=1, label="perfectly calibrated")
    for b in fit.bins:
        rate = b.unserved / b.n
        ax.errorbar(b.mean_p, rate, yerr=[[rate - b.interval[0]], [b.interval[1] - rate]], fmt="o", color="C0",
                    markersize=5, capsize=2, linewidth=1)
    cut = fit.threshold if fit.threshold is not None else fit.best
    ax.axvline(cut, color="C3" if fit.threshold is not None else "0.5", linewidth=1,
               label=(f"threshold {cut:.3g}" if fit.threshold is not None else f"best cut {cut:.3g} (not adopted)"))
    ax.set_xlim(low, high)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("decline probability of the first answer (bin mean, logit scale)")
    ax.set_ylabel("share of requests no tool serves (95% interval)")
    ax.set_title(f"{title}\n{fit.n} requests ({fit.unserved} unserved) in bins of about {fit.bins[0].n}\ncall-or-not "
                 f"accuracy {100 * fit.own_accuracy:.1f}% as answered, {100 * fit.best_accuracy:.1f}% at the best cut",
                 fontsize=8)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    with atomic_writer(Path(path), "wb") as handle:
        fig.savefig(handle, format="png", metadata={"Software": None})


def apply_threshold(model: str, strategy: str, fit: ThresholdFit, folders: list[str],
                    path: str | Path | None = None) -> list[str]:
    """Write ``fit.threshold`` as ``model``'s ``decline_thresholds[strategy]``, with the study folders
    as its ``decided_by`` and the fit's figures in a comment, into the model's exact row of the
    budget table (``path``, default the bundled one); returns the touched ``match`` keys.

    Raises:
        ValueError: The fit proposes no threshold.
        BudgetTableError: The table has no exact row for ``model``, or would not load after the change.
    """
    import tomlkit

    from helmdeck_dspy.budgets import parse_budget_table
    from helmdeck_dspy.calibration.apply import rewrite_table
    from helmdeck_dspy.errors import BudgetTableError

    if fit.threshold is None:
        raise ValueError("the fit proposes no threshold")
    threshold = fit.threshold

    def change(text: str, where: str) -> tuple[str, list[str]]:
        doc = tomlkit.parse(text)
        row = next((r for r in doc.get("model", []) if r.get("match") == model), None)
        if row is None:
            raise BudgetTableError(where, f"no row matches {model!r} exactly; add one before applying a threshold")
        thresholds = tomlkit.inline_table()
        thresholds.update({**dict(row.get("decline_thresholds", {})), strategy: threshold})
        row["decline_thresholds"] = thresholds
        row["decline_thresholds"].comment(
            f"calibrate --decisions: call-or-not {100 * fit.own_accuracy:.1f}% as answered, "
            f"{100 * fit.best_accuracy:.1f}% at {threshold:.4g} over {fit.n} dev requests")
        decided = tomlkit.inline_table()
        decided.update({**{k: list(v) for k, v in dict(row.get("decided_by", {})).items()},
                        "decline_thresholds": folders})
        row["decided_by"] = decided
        new_text = tomlkit.dumps(doc)
        parse_budget_table(new_text, where)  # never write a table that would not load
        return new_text, [model]

    return rewrite_table(path, change)
