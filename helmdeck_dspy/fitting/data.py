"""What a fit reads: the plan records of one model in a trace set, each seen through the project's
own decoding and scoring, and simulated records of a profile on the same tasks.

Every record goes through :func:`~helmdeck_dspy.evaluation.replay.replay_record` (the evaluator's
outcome, cause, finish, tokens and latency) and :func:`~helmdeck_dspy.evaluation.scoring.guard_completion`
(the planner's decoder and guards, for the steps). Nothing here classifies a completion itself.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from helmdeck_dspy.decoding.parsing import parse_completion
from helmdeck_dspy.domain import PLANNER_TOOL_IDS, VARIANTS
from helmdeck_dspy.engines.profile import SimProfile
from helmdeck_dspy.errors import InputError
from helmdeck_dspy.evaluation.metric import expected_plans, step_key
from helmdeck_dspy.evaluation.replay import ReplayContext, replay_record
from helmdeck_dspy.evaluation.scoring import guard_completion
from helmdeck_dspy.io.datafiles import file_sha256
from helmdeck_dspy.planning.guards import GuardedStep
from helmdeck_dspy.tasks import PlanTask
from helmdeck_dspy.traces.io import load_traces
from helmdeck_dspy.traces.record import TraceRecord, write_jsonl_traces

TRANSPORT_CAUSES = frozenset({"transport_error", "rate_limited"})
"""Causes of an HTTP call that failed: the server's doing, not the model's; a fit leaves them out."""


@dataclass(slots=True)
class Answer:
    """One plan record as the evaluator and the planner's guards see it."""

    variant: str
    task_id: str | None
    outcome: str  # strict | repaired | failed
    cause: str | None
    finish: str  # normalised finish_reason
    tokens: int | None
    latency_ms: float | None
    max_tokens: int | None
    prose: bool  # the visible text holds no JSON at all (parse_completion says no_json with a stop finish)
    notes: tuple[str, ...]
    reasoning: bool
    steps: list[GuardedStep] | None

    @property
    def ok(self) -> bool:
        return self.outcome != "failed"


@dataclass
class TraceSet:
    """The plan records of one model in a trace file, read for a fit or a check."""

    path: Path
    sha256: str
    model: str
    records: list[TraceRecord]
    answers: list[Answer]
    excluded: int = 0  # plan records whose HTTP call failed
    tasks: dict[str, list[str]] = field(default_factory=dict)  # variant -> task ids, in file order

    def by_variant(self) -> dict[str, list[Answer]]:
        out: dict[str, list[Answer]] = {v: [] for v in VARIANTS}
        for a in self.answers:
            out.setdefault(a.variant, []).append(a)
        return {v: answers for v, answers in out.items() if answers}

    @property
    def max_tokens(self) -> int | None:
        caps = Counter(a.max_tokens for a in self.answers if a.max_tokens)
        return caps.most_common(1)[0][0] if caps else None


def answer_of(rec: TraceRecord, ctx: ReplayContext) -> Answer:
    """``rec`` through the evaluator's replay and the planner's guards."""
    out = replay_record(rec, ctx)
    guarded = guard_completion(rec.content, rec.finish_reason, rec.reasoning_content, variant=out.variant,
                               catalog_ids=ctx.catalog_ids, pipeline_ids=ctx.pipeline_ids,
                               tool_calls=rec.tool_calls, refusal=rec.refusal)
    prose = out.cause == "no_json"
    if out.cause == "length_truncated" and (rec.content or "").strip():
        # cut by the cap: was it prose or JSON that ran on? Decode the same text as if it had ended.
        prose = parse_completion(rec.content, "stop", rec.reasoning_content).cause == "no_json"
    return Answer(
        variant=out.variant, task_id=rec.task_id, outcome=out.outcome, cause=out.cause, finish=out.finish,
        tokens=out.completion_tokens, latency_ms=out.latency_ms, max_tokens=out.max_tokens, prose=prose,
        notes=guarded.parse.notes, reasoning=guarded.parse.saw_reasoning, steps=guarded.steps,
    )


def read_trace_set(path: str | Path, ctx: ReplayContext, model: str | None = None) -> TraceSet:
    """The plan records of ``model`` in ``path`` (the only model there when None).

    Raises:
        InputError: the file holds no plan records, several models and none was named, or none of ``model``.
    """
    p = Path(path)
    plans = [r for r in load_traces(p) if r.call != "filter"]
    models = Counter(r.model for r in plans)
    if not plans:
        raise InputError(f"{p}: no plan records to fit")
    if model is None:
        if len(models) > 1:
            raise InputError(f"{p} holds plan records of {len(models)} models ({', '.join(sorted(models))}): "
                             "name one with --model")
        model = next(iter(models))
    elif model not in models:
        raise InputError(f"{p} has no plan records of {model!r}; it has {', '.join(sorted(models))}")
    chosen = [r for r in plans if r.model == model]
    answers, kept, excluded = [], [], 0
    tasks: dict[str, list[str]] = {}
    for rec in chosen:
        try:
            a = answer_of(rec, ctx)
        except ValueError as exc:
            raise InputError(f"{p}: record {rec.id}: {exc}") from None
        if a.cause in TRANSPORT_CAUSES:
            excluded += 1
            continue
        answers.append(a)
        kept.append(rec)
        if a.task_id is not None and a.task_id not in tasks.setdefault(a.variant, []):
            tasks[a.variant].append(a.task_id)
    if not answers:
        raise InputError(f"{p}: every plan record of {model} failed at the HTTP level; nothing to fit")
    return TraceSet(path=p, sha256=file_sha256(p), model=model, records=kept, answers=answers, excluded=excluded,
                    tasks=tasks)


def tasks_for(trace_set: TraceSet, gold: Iterable[PlanTask]) -> dict[str, list[PlanTask]]:
    """The gold tasks each variant of ``trace_set`` answered, in file order (unknown ids left out).

    Raises:
        InputError: no record names a gold task (there is nothing to simulate).
    """
    by_id = {t.id: t for t in gold}
    out = {v: [by_id[i] for i in ids if i in by_id] for v, ids in trace_set.tasks.items()}
    out = {v: t for v, t in out.items() if t}
    if not out:
        raise InputError(f"{trace_set.path}: no record names a gold task, so there is nothing to simulate")
    return out


def simulate_like(profile: SimProfile, tasks: dict[str, list[PlanTask]], max_tokens: int | None, seeds: Iterable[int],
                  work_dir: str | Path) -> list[Path]:
    """Simulate ``profile`` on each variant's tasks at ``max_tokens``, once per seed, into ``work_dir``;
    the trace files."""
    from helmdeck_dspy.recording.trace_sets import simulate  # imports dspy

    where = Path(work_dir)
    where.mkdir(parents=True, exist_ok=True)
    files = []
    for seed in seeds:
        for variant, chosen in tasks.items():
            out = where / f"sim-{profile.name}-{variant}-seed{seed}.jsonl"
            simulate([profile], chosen, out, variants=(variant,), max_tokens=max_tokens, seed=seed)
            files.append(out)
    return files


def read_answers(files: Iterable[Path], ctx: ReplayContext) -> list[Answer]:
    """The plan answers of simulated trace files."""
    return [answer_of(r, ctx) for f in files for r in load_traces(f) if r.call != "filter"]


def write_subset(trace_set: TraceSet, out: Path) -> Path:
    """The records a fit used (one model, no HTTP failures), as a trace file for the evaluator."""
    write_jsonl_traces(trace_set.records, out)
    return out


# ----------------------------------------------------------------------------- plan measures


def is_self_call(step: GuardedStep) -> bool:
    return step.demoted and (step.model_tool or "").strip() in PLANNER_TOOL_IDS


def right_tool_share(answers: Iterable[Answer], tasks: dict[str, PlanTask], pipeline_ids: frozenset[str]) -> tuple[int, int]:
    """(steps naming a tool of the task's expected plans, steps naming a catalog tool), over parsed plans."""
    right = valid = 0
    for a in answers:
        task = tasks.get(a.task_id or "")
        if a.steps is None or task is None:
            continue
        wanted = {g.key for plan in expected_plans(task, a.variant) for g in plan}
        for s in a.steps:
            if s.demoted:
                continue
            valid += 1
            right += step_key(s.tool, s.args, pipeline_ids) in wanted
    return right, valid


def step_counts(answers: Iterable[Answer]) -> tuple[int, int, int]:
    """(invented steps, steps other than self-calls, plans with a self-call), over parsed plans."""
    invented = steps = self_calls = 0
    for a in answers:
        if a.steps is None:
            continue
        own = [s for s in a.steps if not is_self_call(s)]
        steps += len(own)
        invented += sum(s.demoted for s in own)
        self_calls += len(own) < len(a.steps)
    return invented, steps, self_calls
