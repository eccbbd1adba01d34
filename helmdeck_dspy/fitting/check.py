"""Checking a fitted profile against its real trace set: :func:`check_profile`.

The profile is simulated on the same tasks and variants as the real records, at the same cap,
under several seeds; the real records (the fitted model's; transport and rate-limit failures left
out, as in the fit) and the simulated ones are evaluated by the project's evaluator, and per variant:

- the strict rate, the tolerant rate and every failure cause's rate (of either side) must fall
  inside the real rate's Wilson 95% interval;
- completion tokens p50 and latency p50 must be within ``tolerance`` (a share) of the real ones.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from helmdeck_dspy.domain import FIT_CHECK_REPEATS as DEFAULT_REPEATS
from helmdeck_dspy.domain import FIT_CHECK_TOLERANCE as DEFAULT_TOLERANCE
from helmdeck_dspy.engines.profile import SimProfile
from helmdeck_dspy.evaluation.report import EvalReport, GroupReport
from helmdeck_dspy.evaluation.stats import wilson
from helmdeck_dspy.fitting.data import (
    read_trace_set,
    simulate_like,
    tasks_for,
    write_subset,
)


@dataclass(frozen=True)
class CheckRow:
    """One measure of one variant: the real value, its bounds, the simulated value."""

    variant: str
    measure: str  # strict, tolerant, cause:<cause>, completion_tokens_p50, latency_ms_p50
    real: float | None
    low: float | None
    high: float | None
    sim: float | None
    real_count: str = ""  # "k/n" for rates

    @property
    def ok(self) -> bool:
        if self.real is None and self.sim is None:
            return True
        if self.real is None or self.sim is None or self.low is None or self.high is None:
            return False
        return self.low - 1e-9 <= self.sim <= self.high + 1e-9


@dataclass
class FitCheck:
    """The check of one profile against one trace set."""

    profile: str
    traces: str
    model: str
    seeds: list[int]
    tolerance: float
    n_real: dict[str, int]
    n_sim: dict[str, int]
    excluded: int = 0
    rows: list[CheckRow] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rows)

    @property
    def failures(self) -> list[CheckRow]:
        return [r for r in self.rows if not r.ok]

    def table(self) -> str:
        """The comparison as a Markdown table."""
        head = (f"profile {self.profile} against {self.traces} ({self.model}; real n "
                + ", ".join(f"{v} {n}" for v, n in self.n_real.items())
                + (f", {self.excluded} transport or rate-limit failures left out" if self.excluded else "")
                + f"; simulated n {', '.join(f'{v} {n}' for v, n in self.n_sim.items())}, seeds {self.seeds[0]}-{self.seeds[-1]}; "
                f"p50s within {self.tolerance:.0%})")
        lines = [head, "", "| variant | measure | real | bounds | simulated | ok |", "|---|---|---|---|---|---|"]
        for r in self.rows:
            rate = not r.measure.endswith("_p50")
            lines.append(
                f"| {r.variant} | {r.measure} | {_fmt(r.real, rate)}{f' ({r.real_count})' if r.real_count else ''} | "
                f"[{_fmt(r.low, rate)}, {_fmt(r.high, rate)}] | {_fmt(r.sim, rate)} | {'yes' if r.ok else 'NO'} |"
            )
        lines.append("")
        lines.append("reproduces the real set" if self.ok else f"{len(self.failures)} measure(s) outside their bounds")
        return "\n".join(lines)


def fitted_traces_path(profile: SimProfile) -> Path:
    """The trace set a fitted profile names: as written (relative to the working directory), or,
    for a bundled set (``eval/...``), in the installed package's bundled data."""
    from helmdeck_dspy.io.resources import bundled_dir

    assert profile.fitted_to is not None
    path = Path(profile.fitted_to.traces)
    if not path.exists() and path.parts[:1] == ("eval",):
        bundled = bundled_dir().joinpath(*path.parts[1:])
        if bundled.exists():
            return bundled
    return path


def _fmt(x: float | None, rate: bool) -> str:
    if x is None:
        return "-"
    return f"{x:.3f}" if rate else f"{x:.0f}"


def _groups(report: EvalReport) -> dict[str, GroupReport]:
    """The report's groups by prompt variant (each report here holds one model of one kind)."""
    return {g.prompt_variant: g for g in report.groups}


def check_profile(
    profile: SimProfile,
    traces: str | Path | None = None,
    *,
    model: str | None = None,
    seed: int = 0,
    repeats: int = DEFAULT_REPEATS,
    tolerance: float = DEFAULT_TOLERANCE,
    work_dir: str | Path | None = None,
) -> FitCheck:
    """Simulate ``profile`` like ``traces`` (default: the set it was fitted to) and compare (see the module docstring).

    Raises:
        InputError: the trace set is missing, or holds no plan records of the model.
    """
    from helmdeck_dspy.evaluation.runner import build_context, evaluate
    from helmdeck_dspy.tasks import load_tasks

    src = profile.fitted_to
    if traces is None and src is None:
        from helmdeck_dspy.errors import InputError

        raise InputError(f"profile {profile.name} names no trace set (no [fitted_to]): give one")
    path = Path(traces) if traces is not None else fitted_traces_path(profile)
    gold = load_tasks()
    ctx = build_context(tasks=gold)
    ts = read_trace_set(path, ctx, model or (src.model if src is not None else profile.model))
    seeds = list(range(seed, seed + repeats))
    with tempfile.TemporaryDirectory(prefix="helmdeck-fit-check-") as scratch:
        where = Path(work_dir or scratch)
        real = evaluate([write_subset(ts, where / "real.jsonl")], tasks=gold, progress=False)
        files = simulate_like(profile, tasks_for(ts, gold), ts.max_tokens, seeds, where)
        sim = evaluate(files, tasks=gold, progress=False)
    rg, sg = _groups(real), _groups(sim)
    check = FitCheck(profile=profile.name, traces=str(path), model=ts.model, seeds=seeds, tolerance=tolerance,
                     n_real={v: g.n for v, g in rg.items()}, n_sim={v: g.n for v, g in sg.items()}, excluded=ts.excluded)
    for variant, r in rg.items():
        s = sg.get(variant)

        def rate(measure: str, k: int, sk: int | None, r: GroupReport = r, s: GroupReport | None = s,
                 variant: str = variant) -> CheckRow:
            lo, hi = wilson(k, r.n)
            sim_rate = sk / s.n if s is not None and s.n and sk is not None else None
            return CheckRow(variant, measure, k / r.n if r.n else None, lo, hi, sim_rate, f"{k}/{r.n}")

        check.rows.append(rate("strict", r.strict, s.strict if s else None))
        check.rows.append(rate("tolerant", r.tolerant, s.tolerant if s else None))
        causes = sorted(set(r.failure_cause_counts) | set(s.failure_cause_counts if s else {}))
        for cause in causes:
            check.rows.append(rate(f"cause:{cause}", r.failure_cause_counts.get(cause, 0),
                                   (s.failure_cause_counts.get(cause, 0) if s else None)))
        for measure, real_p50, sim_p50 in (
            ("completion_tokens_p50", r.completion_tokens.p50, s.completion_tokens.p50 if s else None),
            ("latency_ms_p50", r.latency_ms.p50, s.latency_ms.p50 if s else None),
        ):
            low: float | None = None
            high: float | None = None
            if real_p50 is not None:
                band = tolerance * abs(real_p50)
                low, high = real_p50 - band, real_p50 + band
            check.rows.append(CheckRow(variant, measure, real_p50, low, high, sim_p50))
    return check
