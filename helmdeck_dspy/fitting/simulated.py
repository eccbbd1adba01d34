"""The parts of a fit solved by simulation: the missing-step and wrong-tool rates (so the simulator's
steps per plan and share of steps naming a gold tool match the real ones) and the completion-token
scale (so its clean answers' median length matches)."""

from __future__ import annotations

import statistics
from typing import Any

from helmdeck_dspy.engines.profile import FAILURE_ROLL_RATES, SimProfile
from helmdeck_dspy.fitting.data import Answer, right_tool_share, step_counts
from helmdeck_dspy.fitting.values import Builder, split_rate

MIN_STEPS = 10  # valid steps needed before the wrong-tool rate is solved by simulation
BISECT_STEPS = 6  # wrong-tool rate to 1/64


def clean(profile: SimProfile, unscaled: bool = False) -> SimProfile:
    """``profile`` with no shape failures (plans are drawn before the shape: the same steps, all decoded),
    and with ``unscaled`` a completion_token_scale of 1."""
    zero: dict[str, float] = {r: 0.0 for r in FAILURE_ROLL_RATES} | ({"completion_token_scale": 1.0} if unscaled else {})
    variants = {v: o.model_copy(update={"shape": {k: x for k, x in o.shape.items() if k not in zero}})
                for v, o in profile.variants.items()}
    return profile.model_copy(update={"shape": profile.shape.model_copy(update=zero), "variants": variants})


def plan_noise_simulated(b: Builder, real: dict[str, list[Answer]], make: Any, run: Any, tasks: dict, pipes) -> None:
    """Missing-step and wrong-tool rates, solved by simulating the clean profile."""
    sim = run(clean(make()))
    full_real = [a for a in real.get("full_steps", []) if a.steps is not None]
    full_sim = [a for a in sim if a.variant == "full_steps" and a.steps is not None]
    if len(full_real) >= 5 and full_sim:
        r_mean = statistics.mean(step_counts([a])[1] for a in full_real)
        s_counts = [step_counts([a])[1] for a in full_sim]
        s_mean, multi = statistics.mean(s_counts), sum(c > 1 for c in s_counts) / len(s_counts)
        rate = min(1.0, max(0.0, (s_mean - r_mean) / multi)) if multi else 0.0
        b.set("planning", "missing_step_rate", rate, "fitted",
              f"full_steps plans: {r_mean:.2f} steps a plan real, {s_mean:.2f} simulated with none missing")
    _wrong_tool_rate(b, real, make, run, tasks, pipes)


def _wrong_tool_rate(b: Builder, real: dict[str, list[Answer]], make: Any, run: Any, tasks: dict, pipes) -> None:
    """The wrong-tool rate that makes the simulator's share of steps naming a gold tool the real one,
    pooled over the variants unless their shares differ; solved by bisection."""
    counts = {v: right_tool_share(answers, tasks, pipes) for v, answers in real.items()}
    usable = {v: c for v, c in counts.items() if c[1] >= MIN_STEPS}
    if not usable:
        b.set("planning", "wrong_tool_rate", b.base.planning.wrong_tool_rate, "assumed", "too few steps naming a "
              f"catalog tool to fit ({', '.join(f'{n} {v}' for v, (_, n) in counts.items())}; {MIN_STEPS} needed)")
        return
    _, per, evidence = split_rate(usable)
    groups = [[v] for v in usable] if per else [list(usable)]
    for group in groups:
        right, valid = (sum(usable[v][i] for v in group) for i in (0, 1))
        target = right / valid

        def share(rate: float, group: list[str] = group) -> float:
            for v in group:
                if per:
                    b.override(v, "planning", "wrong_tool_rate", rate, "fitted", "")
                else:
                    b.set("planning", "wrong_tool_rate", rate, "fitted", "")
            got = [right_tool_share(run(clean(make()), v), tasks, pipes) for v in group]
            n = sum(g[1] for g in got)
            return sum(g[0] for g in got) / n if n else 0.0

        lo, hi = 0.0, 1.0
        if share(0.0) <= target:
            hi = 0.0
        elif share(1.0) >= target:
            lo = 1.0
        else:
            for _ in range(BISECT_STEPS):
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if share(mid) > target else (lo, mid)
        note = (f"steps naming a catalog tool that name one of the gold plan's ({evidence}), matched by simulation "
                "(the simulator's wrong pick is the runner-up entry)")
        if per:
            b.override(group[0], "planning", "wrong_tool_rate", (lo + hi) / 2, "fitted", note)
        else:
            b.set("planning", "wrong_tool_rate", (lo + hi) / 2, "fitted", note)


def token_scale(b: Builder, real: dict[str, list[Answer]], sim: list[Answer]) -> None:
    for v, answers in real.items():
        r = [a.tokens for a in answers if a.outcome == "strict" and a.tokens]
        s = [a.tokens for a in sim if a.variant == v and a.outcome == "strict" and a.tokens]
        if len(r) >= 3 and s:
            scale = statistics.median(r) / statistics.median(s)
            b.override(v, "shape", "completion_token_scale", scale, "fitted",
                       f"median completion tokens of clean {v} answers: {statistics.median(r):g} real, "
                       f"{statistics.median(s):g} simulated at scale 1")
        else:
            b.override(v, "shape", "completion_token_scale", 1.0, "assumed", f"too few clean {v} answers to fit")
    scales = [b.over[v]["shape"]["completion_token_scale"] for v in real]
    if max(scales) <= 1.05 * min(scales):  # within 5% of each other: one value
        first = next(iter(real))
        b.set("shape", "completion_token_scale", statistics.mean(scales), b.notes[f"variants.{first}.shape.completion_token_scale"].how,
              "; ".join(b.notes[f"variants.{v}.shape.completion_token_scale"].note for v in real))
        for v in real:
            del b.over[v]["shape"]["completion_token_scale"]
            del b.notes[f"variants.{v}.shape.completion_token_scale"]
