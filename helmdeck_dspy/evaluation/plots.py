"""PNG plots of an evaluation report: parse success, finish reasons, completion tokens vs the cap.

matplotlib is imported inside :func:`write_plots` (it is heavy) and only through the object API
(``Figure`` + the Agg canvas): pyplot's global state is never touched, so this is safe in
threads, workers and test processes alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helmdeck_dspy.domain import VARIANTS
from helmdeck_dspy.evaluation.report import EvalReport, GroupReport
from helmdeck_dspy.io.atomic import atomic_writer
from helmdeck_dspy.traces.record import is_simulated

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

PLOT_FILES = ("parse_success.png", "finish_reasons.png", "completion_tokens.png")
DPI = 120

VARIANT_COLORS = {"full_steps": "#2b6cb0", "single_pick": "#dd6b20"}
_FALLBACK_COLORS = ("#2f855a", "#805ad5", "#b7791f", "#d53f8c", "#319795", "#4a5568")

FINISH_ORDER = ("stop", "length", "safety", "tool_calls", "tool_error", "interrupted", "unknown", "none")
FINISH_COLORS = {
    "stop": "#38a169",
    "length": "#ed8936",
    "safety": "#c53030",
    "tool_calls": "#3182ce",
    "tool_error": "#2c5282",
    "interrupted": "#b7791f",
    "unknown": "#805ad5",
    "none": "#a0aec0",
}
CAP_COLOR = "#c53030"
SIM_LABEL_COLOR = "#6b46c1"  # a simulated group's label: never read as a measurement

LABEL_WIDTH = 34  # characters per line of a model label before it wraps
_ROW = 1.0  # height of one model x variant row, in data units
_BLOCK_GAP = 0.6  # extra space between two models' blocks


# ------------------------------------------------------------------------ labels and layout


def common_prefix(models: list[str]) -> str:
    """The leading ``/``-separated segments every model id shares (always leaving one segment)."""
    parts = [m.split("/") for m in models if m]
    if not parts:
        return ""
    limit = min(len(p) for p in parts) - 1
    k = 0
    while k < limit and all(p[k] == parts[0][k] for p in parts):
        k += 1
    return "/".join(parts[0][:k]) + "/" if k else ""


def wrap_label(text: str, width: int = LABEL_WIDTH) -> str:
    """Wrap a model id at ``/ - : _`` boundaries (hard-splitting any longer run)."""
    if len(text) <= width:
        return text
    tokens = re.findall(r"[^/\-:_]+[/\-:_]?|[/\-:_]", text)
    pieces: list[str] = []
    for tok in tokens:
        while len(tok) > width:
            pieces.append(tok[:width])
            tok = tok[width:]
        pieces.append(tok)
    lines: list[str] = []
    cur = ""
    for piece in pieces:
        if cur and len(cur) + len(piece) > width:
            lines.append(cur)
            cur = piece
        else:
            cur += piece
    if cur:
        lines.append(cur)
    return "\n".join(lines)


def _variant_color(variant: str, extra: dict[str, str]) -> str:
    if variant in VARIANT_COLORS:
        return VARIANT_COLORS[variant]
    if variant not in extra:
        extra[variant] = _FALLBACK_COLORS[len(extra) % len(_FALLBACK_COLORS)]
    return extra[variant]


@dataclass
class _Layout:
    """Rows (one per group) arranged in blocks (one per model and kind), top to bottom."""

    rows: list[tuple[float, GroupReport]]
    model_ticks: list[float]
    model_labels: list[str]
    label_colors: list[str]
    separators: list[float]
    prefix: str
    bottom: float
    variants: list[str]
    colors: dict[str, str]
    label_lines: int


def kind_line(kind: str) -> str:
    """A block label's kind line; a simulated kind says so in words."""
    return f"{kind} (simulated)" if is_simulated(kind) else kind


def _layout(groups: list[GroupReport]) -> _Layout:
    by_model: dict[tuple[str, str], list[GroupReport]] = {}  # kinds are never merged into one block
    for g in groups:
        by_model.setdefault((g.kind, g.model), []).append(g)
    rank: dict[str, int] = {v: i for i, v in enumerate(VARIANTS)}  # a recorded variant may be another
    prefix = common_prefix([m for _, m in by_model])
    extra: dict[str, str] = {}
    rows: list[tuple[float, GroupReport]] = []
    ticks: list[float] = []
    labels: list[str] = []
    colors: list[str] = []
    seps: list[float] = []
    y = 0.0
    lines = 1
    for i, ((kind, model), gs) in enumerate(by_model.items()):
        gs = sorted(gs, key=lambda g: (rank.get(g.prompt_variant, len(rank)), g.prompt_variant))
        if i:
            seps.append(y + _BLOCK_GAP / 2)
            y += _BLOCK_GAP
        start = y
        for g in gs:
            rows.append((y + _ROW / 2, g))
            y += _ROW
        ticks.append((start + y) / 2)
        short = model[len(prefix):] if prefix and model.startswith(prefix) else model
        tiers = sorted({g.tier for g in gs})
        label = wrap_label(short or "(no model)") + f"\n{kind_line(kind)} · tier {'/'.join(tiers)}"
        lines = max(lines, label.count("\n") + 1)
        labels.append(label)
        colors.append(SIM_LABEL_COLOR if is_simulated(kind) else "#1a202c")
    variants = sorted({g.prompt_variant for g in groups}, key=lambda v: (rank.get(v, len(rank)), v))
    variant_colors = {v: _variant_color(v, extra) for v in variants}
    return _Layout(rows, ticks, labels, colors, seps, prefix, y, variants, variant_colors, lines)


def _fig_size(layout: _Layout) -> tuple[float, float]:
    # enough vertical room for the wrapped model labels of every block, plus title and legend
    per_block = 0.16 * layout.label_lines + 0.12
    body = max(0.34 * len(layout.rows) + 0.12 * len(layout.model_ticks), per_block * len(layout.model_ticks))
    return 10.5, max(3.4, 2.1 + body)


def _setup_rows(ax: Axes, layout: _Layout, transform: Any) -> None:
    """Model labels as y ticks, variant names in the gap beside the axis, block separators."""
    ax.set_ylim(layout.bottom + 0.1, -0.1)  # top to bottom
    ax.set_yticks(layout.model_ticks)
    ax.set_yticklabels(layout.model_labels, fontsize=8.5, linespacing=1.05)
    for tick, color in zip(ax.get_yticklabels(), layout.label_colors):
        tick.set_color(color)
    longest = max(len(v) for v in layout.variants)
    ax.tick_params(axis="y", length=0, pad=10 + 4.4 * longest)
    for y, g in layout.rows:
        ax.text(-0.008, y, g.prompt_variant, transform=transform, ha="right", va="center", fontsize=7.5,
                color=layout.colors[g.prompt_variant])
    for s in layout.separators:
        ax.axhline(s, color="#cbd5e0", lw=0.8, zorder=0)


def _title(ax: Axes, main: str, sub: str, layout: _Layout) -> None:
    if SIM_LABEL_COLOR in layout.label_colors:
        sub += "\nrows marked sim:<profile> (simulated) are the simulator's output, not measurements of the model"
    if layout.prefix:
        sub += f"\nmodel ids shown without their common prefix '{layout.prefix}'"
    ax.set_title(main, loc="left", fontsize=11, pad=8 + 13 * (sub.count("\n") + 1))
    ax.annotate(sub, xy=(0, 1), xycoords="axes fraction", xytext=(0, 6), textcoords="offset points",
                ha="left", va="bottom", fontsize=8.5, color="#4a5568", linespacing=1.35)


_LEGEND_INCHES = 0.42


def _legend(fig: Any, handles: list[Any]) -> None:
    fig.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 0.01), ncol=len(handles), fontsize=8,
               frameon=False, handlelength=1.8, columnspacing=1.6)


def _right_note(ax: Axes, transform: Any, y: float, text: str) -> None:
    ax.text(1.015, y, text, transform=transform, ha="left", va="center", fontsize=7.5, family="monospace",
            color="#2d3748")


# ------------------------------------------------------------------------ the three plots


def _plot_parse_success(fig: Any, report: EvalReport, layout: _Layout) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import PercentFormatter
    from matplotlib.transforms import blended_transform_factory

    ax = fig.add_subplot(1, 1, 1)
    trans = blended_transform_factory(ax.transAxes, ax.transData)
    h = 0.72 * _ROW
    for y, g in layout.rows:
        color = layout.colors[g.prompt_variant]
        if not g.n:
            ax.text(1, y, "no records", va="center", fontsize=8, color="#718096", style="italic")
            _right_note(ax, trans, y, "n=0")
            continue
        ax.barh(y, 100 * g.tolerant_rate, height=h, color=color, alpha=0.28, lw=0, zorder=1)
        ax.barh(y, 100 * g.strict_rate, height=h, color=color, lw=0, zorder=2)
        lo, hi = g.strict_ci
        s = 100 * g.strict_rate
        ax.errorbar(s, y, xerr=[[max(0.0, s - 100 * lo)], [max(0.0, 100 * hi - s)]], fmt="none",
                    ecolor="#1a202c", elinewidth=1.1, capsize=3, zorder=3)
        _right_note(ax, trans, y, f"{s:5.1f}% [{100 * lo:4.1f}, {100 * hi:4.1f}]  tol {100 * g.tolerant_rate:5.1f}%  n={g.n}")
    ax.set_xlim(0, 100)
    ax.xaxis.set_major_formatter(PercentFormatter(100))
    ax.set_xlabel("strict parse-success rate (95% Wilson interval); lighter bar: tolerant (strict or repaired)",
                  fontsize=9)
    ax.grid(axis="x", color="#e2e8f0", lw=0.8, zorder=0)
    ax.set_axisbelow(True)
    _setup_rows(ax, layout, trans)
    handles: list[Any] = [Patch(color=layout.colors[v], label=f"strict · {v}") for v in layout.variants]
    handles.append(Patch(color="#718096", alpha=0.28, label="tolerant"))
    handles.append(Line2D([], [], color="#1a202c", marker="|", markersize=8, lw=1.1, label="95% Wilson CI"))
    _legend(fig, handles)
    _title(ax, "Strict parse success by model · kind × prompt variant",
           f"n={report.n_records} records in {len(report.groups)} group(s)", layout)


def _plot_finish_reasons(fig: Any, report: EvalReport, layout: _Layout) -> None:
    from matplotlib.patches import Patch
    from matplotlib.ticker import PercentFormatter
    from matplotlib.transforms import blended_transform_factory

    ax = fig.add_subplot(1, 1, 1)
    trans = blended_transform_factory(ax.transAxes, ax.transData)
    h = 0.72 * _ROW
    for y, g in layout.rows:
        counts = dict.fromkeys(FINISH_ORDER, 0)
        for k, v in g.finish_reason_counts.items():
            counts[k if k in counts else "unknown"] += v  # a class an older report used ("other")
        total = sum(counts.values())
        if not total:
            ax.text(1, y, "no finish_reason counts", va="center", fontsize=8, color="#718096", style="italic")
            _right_note(ax, trans, y, f"n={g.n}")
            continue
        left = 0.0
        for reason in FINISH_ORDER:
            share = 100 * counts[reason] / total
            if not share:
                continue
            ax.barh(y, share, left=left, height=h, color=FINISH_COLORS[reason], edgecolor="white", lw=0.6, zorder=2)
            if share >= 9:
                ax.text(left + share / 2, y, f"{share:.0f}%", ha="center", va="center", fontsize=7,
                        color="white" if reason not in ("none",) else "#1a202c", zorder=3)
            left += share
        top = ", ".join(f"{k} {counts[k]}" for k in FINISH_ORDER if counts[k])
        _right_note(ax, trans, y, f"n={total} · {top}")
    ax.set_xlim(0, 100)
    ax.xaxis.set_major_formatter(PercentFormatter(100))
    ax.set_xlabel("share of completions by normalised finish_reason", fontsize=9)
    _setup_rows(ax, layout, trans)
    handles = [Patch(color=FINISH_COLORS[r], label=r) for r in FINISH_ORDER]
    _legend(fig, handles)
    _title(ax, "Normalised finish_reason by model · kind × prompt variant",
           f"n={report.n_records} records in {len(report.groups)} group(s)", layout)


def group_cap(g: GroupReport) -> int | None:
    """The group's most common ``max_tokens`` cap, if any was recorded."""
    best: tuple[int, int] | None = None
    for key, count in g.max_tokens_counts.items():
        try:
            cap = int(float(key))
        except ValueError:
            continue
        if best is None or count > best[1]:
            best = (cap, count)
    return best[0] if best else None


def _plot_completion_tokens(fig: Any, report: EvalReport, layout: _Layout) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import FuncFormatter
    from matplotlib.transforms import blended_transform_factory

    ax = fig.add_subplot(1, 1, 1)
    trans = blended_transform_factory(ax.transAxes, ax.transData)
    h = 0.5 * _ROW
    values: list[float] = []
    for _, g in layout.rows:
        d = g.completion_tokens
        if d.n:
            values += [v for v in (d.p50, d.p95, d.max) if v is not None]
        cap = group_cap(g)
        if cap is not None:
            values.append(cap)
    positive = [v for v in values if v > 0]
    lo = min(positive) if positive else 1.0
    hi = max(positive) if positive else 10.0
    log = hi / lo > 20
    if log:
        ax.set_xscale("log")
        ax.set_xlim(max(1.0, lo / 1.6), hi * 1.6)
    else:
        ax.set_xlim(0, hi * 1.08)
    floor = ax.get_xlim()[0]
    n_tokens = 0
    for y, g in layout.rows:
        d = g.completion_tokens
        cap = group_cap(g)
        if cap is not None:
            ax.vlines(cap, y - 0.45 * _ROW, y + 0.45 * _ROW, color=CAP_COLOR, lw=2.2, zorder=4)
        if not d.n or d.p50 is None:
            ax.text(0.01, y, "no token counts", transform=trans, va="center", fontsize=7.5, color="#718096",
                    style="italic")
            _right_note(ax, trans, y, f"n=0  cap {cap if cap is not None else '–'}")
            continue
        n_tokens += d.n
        color = layout.colors[g.prompt_variant]
        p50 = max(d.p50, floor)
        p95 = max(d.p95 if d.p95 is not None else d.p50, floor)
        ax.barh(y, max(p95 - p50, 0.0), left=p50, height=h, color=color, alpha=0.45, lw=0, zorder=2)
        ax.plot([p50], [y], marker="o", ms=5, color=color, mec="white", mew=0.8, zorder=3, ls="none")
        if d.p90 is not None:
            ax.plot([max(d.p90, floor)], [y], marker="|", ms=11, mew=1.6, color=color, zorder=3, ls="none")
        if d.max is not None:
            ax.plot([max(d.max, floor)], [y], marker="x", ms=6, mew=1.4, color="#1a202c", zorder=3, ls="none")
        _right_note(ax, trans, y, f"n={d.n}  p95 {d.p95 if d.p95 is not None else d.p50:,.0f}  cap {cap if cap is not None else '–'}")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.set_xlabel("completion tokens" + (" (log scale)" if log else ""), fontsize=9)
    ax.grid(axis="x", which="major", color="#e2e8f0", lw=0.8, zorder=0)
    ax.set_axisbelow(True)
    _setup_rows(ax, layout, trans)
    handles: list[Any] = [Patch(color=layout.colors[v], alpha=0.45, label=f"p50–p95 · {v}") for v in layout.variants]
    handles += [
        Line2D([], [], color="#4a5568", marker="o", ls="none", ms=5, label="p50"),
        Line2D([], [], color="#4a5568", marker="|", ls="none", ms=10, mew=1.6, label="p90"),
        Line2D([], [], color="#1a202c", marker="x", ls="none", ms=6, mew=1.4, label="max"),
        Line2D([], [], color=CAP_COLOR, marker="|", ls="none", ms=12, mew=2.2, label="max_tokens cap"),
    ]
    _legend(fig, handles)
    _title(ax, "Completion tokens against the max_tokens cap",
           f"n={n_tokens} completions with token counts in {len(report.groups)} group(s)", layout)


# ------------------------------------------------------------------------ entry point


def write_plots(report: EvalReport, out_dir: Path) -> list[str]:
    """Write ``parse_success.png``, ``finish_reasons.png`` and ``completion_tokens.png`` into ``out_dir``.

    Returns the file names (relative to ``out_dir``) in that order; an empty report writes nothing
    and returns ``[]``.
    """
    if not report.groups:
        return []
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    layout = _layout(report.groups)
    width, height = _fig_size(layout)
    written: list[str] = []
    for name, draw in zip(PLOT_FILES, (_plot_parse_success, _plot_finish_reasons, _plot_completion_tokens)):
        fig = Figure(figsize=(width, height), dpi=DPI)
        FigureCanvasAgg(fig)
        draw(fig, report, layout)
        fig.tight_layout(rect=(0, _LEGEND_INCHES / height, 1, 1))
        with atomic_writer(out / name, "wb") as handle:  # a kill never leaves a half-written PNG
            fig.savefig(handle, format="png", dpi=DPI, metadata={"Software": None})
        written.append(name)
    return written
