"""Fitting a simulator profile to a real trace set: :func:`fit_profile`.

From the plan records of one model (both prompt variants), read through the evaluator's replay and
the planner's guards (:mod:`helmdeck_dspy.fitting.data`; calls the evaluator puts down to
``transport_error`` or ``rate_limited`` are left out, timeouts count as ``likely_timeout``), the fit
estimates:

- **the cause mix**: each failure cause's share becomes the shape rate that produces it (empty
  answers, prose with no JSON, JSON that is not a plan, JSON that does not decode, answers that
  run on until the cap cuts them), repaired answers ``malformed_rate``, fenced and prose-wrapped
  plans ``fence_rate`` / ``prose_rate``. A rate is pooled over the variants unless they differ
  (:func:`~helmdeck_dspy.fitting.values.split_rate`); when the strict or tolerant share, or
  any cause's, differs, the whole mix goes per variant;
- **completion tokens**: a log-normal for prose that ends on its own (fitted to those answers;
  its tail above the cap is cut), the rest of the cut answers as runaways, so cut-offs at the cap
  come out at the real share; a plan's length through ``completion_token_scale`` (the real clean
  answers' median over the simulator's, per variant where they differ by more than 5%);
- **plan noise**: the invented-tool rate (steps the guards demote for naming no catalog tool)
  and the self-call rate are counted; the missing-step and wrong-tool rates are solved by
  simulation (:mod:`~helmdeck_dspy.fitting.simulated`) so that the simulator's steps per plan and
  share of steps naming a tool of the gold plan match the real ones;
- **latency**: a Theil-Sen line through latency against completion tokens (tokens/s, when the
  tokens spread enough to show a slope), the time to first token as the median remainder.

Everything else keeps the base profile's value (the simulator's defaults unless one is given) and
is marked assumed: :attr:`FitResult.notes` says for each value whether it was fitted (from what)
or assumed (why). :mod:`~helmdeck_dspy.fitting.render` writes the documented TOML and
:mod:`~helmdeck_dspy.fitting.check` checks the profile against the set.
"""

from __future__ import annotations

import math
import statistics
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from helmdeck_dspy.engines.profile import (
    FAILURE_ROLL_RATES,
    FitSource,
    Shape,
    SimProfile,
)
from helmdeck_dspy.fitting.data import (
    Answer,
    TraceSet,
    read_answers,
    read_trace_set,
    simulate_like,
    step_counts,
    tasks_for,
)
from helmdeck_dspy.fitting.simulated import clean, plan_noise_simulated, token_scale
from helmdeck_dspy.fitting.values import ASSUMED, Builder, Value, split_rate

ROLL_CAUSES = {
    "content_filter_rate": "answers a safety filter stopped (safety_filtered)",
    "empty_rate": "empty answers with no finish_reason, or calls that timed out (likely_timeout)",
    "empty_stop_rate": "empty answers that ended normally (likely_timeout with a finish_reason)",
    "garbled_rate": "JSON-shaped answers that did not decode (constrained_deadlock)",
    "not_plan_rate": "valid JSON that was not a plan (schema_mismatch)",
    "no_json_rate": "prose answers with no JSON that end on their own (the log-normal's tail above the cap is cut)",
    "runaway_rate": "answers that ran on until the cap cut them (JSON, or prose beyond the log-normal's tail)",
}


@dataclass
class FitResult:
    profile: SimProfile
    notes: dict[str, Value]  # "shape.no_json_rate", "variants.single_pick.shape.no_json_rate", ...
    trace_set: TraceSet


def _roll_kind(a: Answer) -> str | None:
    """The shape rate that would produce this answer's failure (None: a plan, or not modelled)."""
    cause = a.cause
    if cause is None:
        return None
    if cause == "safety_filtered":
        return "content_filter_rate"
    if cause == "likely_timeout":
        return "empty_rate" if a.finish == "none" else "empty_stop_rate"
    if cause == "constrained_deadlock":
        return "garbled_rate"
    if cause == "schema_mismatch":
        return "not_plan_rate"
    if cause in ("no_json", "length_truncated"):
        return None if a.prose else "runaway_rate"  # prose: split between no_json_rate and runaway_rate below
    return None  # reasoning_only: the fit models no reasoning


def _shape_rates(b: Builder, by: dict[str, list[Answer]], tail: float) -> None:
    """The failure mix; ``tail``: the share of prose answers that end on their own the cap still cuts."""
    # counts by kind, fractional where an estimate splits answers between two kinds (no_json_rate, runaway_rate)
    kinds: dict[str, defaultdict[str | None, float]] = {
        v: defaultdict(float, Counter(_roll_kind(a) for a in answers)) for v, answers in by.items()}
    n = {v: len(answers) for v, answers in by.items()}
    for v, answers in by.items():
        kinds[v]["strict"] += sum(a.outcome == "strict" for a in answers)
        kinds[v]["ok"] += sum(a.ok for a in answers)
        kinds[v]["repaired"] += sum(a.outcome == "repaired" for a in answers)
        # prose the cap cut: the log-normal's tail accounts for some, the rest ran on (runaways)
        ended = sum(a.prose and a.finish != "length" for a in answers)
        cut = sum(a.prose and a.finish == "length" for a in answers)
        from_tail = min(cut, ended * tail / (1 - tail)) if tail < 1 else cut
        kinds[v]["no_json_rate"] = ended + from_tail
        kinds[v]["runaway_rate"] += cut - from_tail
    # The mix as a whole goes per variant when the strict or tolerant shares, or any one cause's, differ
    # at 95%: pooling causes that all lean the same way would shift a variant's strict rate.
    split = len(by) > 1 and any(split_rate({v: (kinds[v][k], n[v]) for v in by})[1]
                                for k in (*ROLL_CAUSES, "strict", "ok", "repaired"))
    for name, what in ROLL_CAUSES.items():
        b.rate("shape", name, {v: (kinds[v][name], n[v]) for v in by}, what, split=split)
    leaks = sum(a.cause == "reasoning_only" for answers in by.values() for a in answers)
    b.set("shape", "leak_rate", 0.0, "fitted" if not leaks else "assumed",
          "no reasoning-only answers" if not leaks else f"{leaks} reasoning-only answers are not modelled (no reasoning)")
    reasoning = sum(a.reasoning for answers in by.values() for a in answers)
    b.set("shape", "reasoning", "none", "fitted" if not reasoning else "assumed",
          "no answer carries reasoning" if not reasoning else f"{reasoning} answers carry reasoning; not modelled")
    # repaired answers come from the answers no failure took: scale by the share left
    room = {v: max(1 - sum(b.value(v, "shape", r) for r in FAILURE_ROLL_RATES), 1e-9) for v in by}
    b.rate("shape", "malformed_rate", {v: (kinds[v]["repaired"], n[v]) for v in by},
           "repaired answers, over the share of answers no failure took", split=split,
           scale={v: 1 / room[v] for v in by})
    decoded = {v: [a for a in answers if a.ok] for v, answers in by.items()}
    fenced = {v: (sum("fenced" in a.notes for a in ok), len(ok)) for v, ok in decoded.items()}
    prose = {v: (sum("prose" in a.notes for a in ok), len(ok)) for v, ok in decoded.items()}
    b.rate("shape", "fence_rate", fenced, "decoded plans in a code fence")
    for v in by:  # a variant whose mix of pooled and own rates exceeds 1 takes its own rates
        if sum(b.value(v, "shape", r) for r in FAILURE_ROLL_RATES) > 1:
            for name in ROLL_CAUSES:
                b.override(v, "shape", name, kinds[v][name] / n[v], "fitted", f"{ROLL_CAUSES[name]} in {v}")
    b.rate("shape", "prose_rate", prose, "decoded plans with prose around the JSON")


def _prose_length(b: Builder, answers: list[Answer], cap: int | None) -> float:
    """A log-normal for the length of a prose answer that ends on its own; returns the share of such
    answers it puts above the cap (the cap cuts those; the rest of the cut prose ran on: runaways)."""
    ended = [math.log(max(a.tokens, 1)) for a in answers if a.prose and a.tokens is not None and a.finish != "length"]
    n_cut = sum(a.prose and a.finish == "length" for a in answers)
    what = f"{len(ended)} prose answers that ended on their own ({n_cut} more were cut by the cap)"
    if not ended:
        return 0.0
    mu = statistics.mean(ended)
    sigma = statistics.stdev(ended) if len(ended) > 1 else Shape.model_fields["no_json_sigma"].default
    b.set("shape", "no_json_tokens", math.exp(mu), "fitted", f"{what}: median of a log-normal fitted to them")
    b.set("shape", "no_json_sigma", sigma, "fitted" if len(ended) > 1 else "assumed",
          f"{what}: spread of that log-normal" if len(ended) > 1 else "one prose answer ended on its own: the base spread")
    if not cap:
        return 0.0
    return 0.5 * math.erfc((math.log(cap) - mu) / (max(sigma, 1e-9) * math.sqrt(2)))


def _timing(b: Builder, by: dict[str, list[Answer]]) -> None:
    """Tokens/s from the slope of latency on completion tokens (one server: pooled), then the time to
    first token as the median remainder, per variant when the remainders differ (Mann-Whitney, 5%)."""
    pts = {v: [(a.tokens, a.latency_ms) for a in answers if a.tokens is not None and a.latency_ms is not None]
           for v, answers in by.items()}
    pooled = [pt for v in pts for pt in pts[v]]
    if len(pooled) < 3:
        return
    from scipy.stats import mannwhitneyu, theilslopes

    tokens, latency = [t for t, _ in pooled], [ms for _, ms in pooled]
    slope, _icpt, low, _high = theilslopes(latency, tokens)
    if low > 0:
        tps = 1000 / slope
        b.set("timing", "tokens_per_s", tps, "fitted",
              f"Theil-Sen slope of latency on completion tokens over {len(pooled)} answers: {slope:.1f} ms a token")
    else:
        tps = b.base.timing.tokens_per_s
        b.set("timing", "tokens_per_s", tps, "assumed", f"the base value: the completion tokens ({min(tokens)}-"
              f"{max(tokens)}) do not spread enough to show a slope in the latency")
    rest = {v: [ms - 1000 * t / tps for t, ms in p] for v, p in pts.items()}
    _first_token(b, "", [r for v in rest for r in rest[v]])
    usable = [v for v, r in rest.items() if len(r) >= 3]
    if len(usable) == 2 and mannwhitneyu(rest[usable[0]], rest[usable[1]]).pvalue < 0.05:
        for v in usable:
            _first_token(b, v, rest[v])


def _first_token(b: Builder, variant: str, rest: list[float]) -> None:
    """Time to first token and its spread from the latencies less their generation time."""
    where = f" ({variant}: the variants' latencies differ, Mann-Whitney p < 0.05)" if variant else ""
    ttft = max(statistics.median(rest), 1.0)
    logs = [math.log(r) for r in rest if r > 0]
    mad = statistics.median(abs(x - statistics.median(logs)) for x in logs) if logs else 0.0
    for name, value, note in (
        ("ttft_ms", ttft, f"median latency less the generation time, over {len(rest)} answers{where}"),
        ("ttft_sigma", 1.4826 * mad, f"robust spread (1.4826 MAD) of the log of that remainder{where}"),
    ):
        if variant:
            b.override(variant, "timing", name, value, "fitted", note)
        else:
            b.set("timing", name, value, "fitted", note)


def _plan_noise_direct(b: Builder, by: dict[str, list[Answer]]) -> None:
    counts = {v: step_counts(a) for v, a in by.items()}
    plans = {v: sum(a.steps is not None for a in answers) for v, answers in by.items()}
    b.rate("planning", "invented_tool_rate", {v: (c[0], c[1]) for v, c in counts.items()},
           "steps the guards demote for naming no catalog tool (or pipeline), over all steps but self-calls")
    b.rate("planning", "self_call_rate", {v: (c[2], plans[v]) for v, c in counts.items()},
           "decoded plans with a call to the planner itself")


def fit_profile(path: str | Path, *, name: str, model: str | None = None, base: SimProfile | None = None,
                description: str | None = None, seed: int = 0, repeats: int = 2, fitted_on: str | None = None,
                work_dir: str | Path | None = None) -> FitResult:
    """Fit a profile to the plan records of ``model`` in ``path`` (see the module docstring).

    Args:
        path: A trace set (JSONL, Parquet or a saved dataset).
        name: The profile's name.
        model: The model whose records to fit (default: the only one in the set).
        base: Where assumed values come from (default: the simulator's defaults).
        seed / repeats: The simulator seeds the simulated parts use (``repeats`` of them from ``seed``).
        fitted_on: The date to record (default: today, UTC).
        work_dir: Where simulated trace files go (default: a temporary directory).

    Raises:
        InputError: the set has no plan records of ``model`` or names no gold task.
    """
    from datetime import datetime, timezone

    from helmdeck_dspy.evaluation.runner import build_context
    from helmdeck_dspy.tasks import load_tasks

    gold = load_tasks()
    ctx = build_context(tasks=gold)
    ts = read_trace_set(path, ctx, model)
    by = ts.by_variant()
    b = Builder(base or SimProfile(name=name, model=ts.model))
    _shape_rates(b, by, _prose_length(b, ts.answers, ts.max_tokens))
    _timing(b, by)
    _plan_noise_direct(b, by)
    for name_ in ("demo_gain", "pipeline_blindness"):
        b.set("planning", name_, 0.0, "assumed", ASSUMED[name_])
    for name_ in ("wrong_tool_rate", "missing_step_rate"):  # solved by simulation below when the records allow
        b.set("planning", name_, 0.0, "assumed", "too few decoded plans to fit")
    rel = _display_path(ts.path)
    source = FitSource(traces=rel, sha256=ts.sha256, model=ts.model, records={v: len(a) for v, a in by.items()},
                       excluded=ts.excluded, max_tokens=ts.max_tokens,
                       fitted_on=fitted_on or datetime.now(timezone.utc).date().isoformat())
    text = description or f"Fitted to {rel} ({len(ts.answers)} plan records of {ts.model})."

    def make() -> SimProfile:
        return b.profile(name, ts.model, text, source)

    plan_tasks = tasks_for(ts, gold)
    seeds = range(seed, seed + repeats)

    by_id = {t.id: t for t in gold}
    with tempfile.TemporaryDirectory(prefix="helmdeck-fit-") as scratch:
        where = work_dir or scratch

        def run(profile: SimProfile, variant: str | None = None) -> list[Answer]:
            chosen = {v: t for v, t in plan_tasks.items() if variant in (None, v)}
            return read_answers(simulate_like(profile, chosen, ts.max_tokens, seeds, where), ctx)

        plan_noise_simulated(b, by, make, run, by_id, ctx.pipeline_ids)
        token_scale(b, by, run(clean(make(), unscaled=True)))
    b.assume_rest()
    profile = make()
    notes = {k: v for k, v in b.notes.items() if not k.startswith("variants.") or _has_override(profile, k)}
    return FitResult(profile=profile, notes=notes, trace_set=ts)


def _has_override(profile: SimProfile, key: str) -> bool:
    _, variant, part, name = key.split(".", 3)
    over = profile.variants.get(variant)  # type: ignore[call-overload]
    return over is not None and name in getattr(over, part)


def _display_path(path: Path) -> str:
    """``path`` relative to the working directory when inside it (how a repository's files are named)."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(path)
