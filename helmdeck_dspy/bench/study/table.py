"""Scoring a study's trace files: one row per config, overall and per category, paired against the
baseline row (or the row its ``paired_with`` names) on the questions both answered.

Columns: exact calls, tool-name accuracy (the plan calls exactly the gold functions, as a
multiset; questions with gold calls), argument accuracy (calls to a gold function whose arguments
also match / gold calls whose function was called), irrelevance accuracy (no call where none
fits), strict parse rate, median prompt and completion tokens, median latency, and the paired
difference in exact calls against the baseline (Newcombe's paired interval). A run over the
project's gold tasks also has the plan score (:func:`~helmdeck_dspy.evaluation.metric.score_plan`,
the metric the compiler optimises; the model alone's list is scored as a full plan), with a
bootstrap interval and the paired difference. Rates carry 95% Wilson intervals; argument accuracy counts calls, which are not independent across one question's
calls, so its interval is indicative.

An end-to-end study's rows are scored by its tasks' checks instead: ``exact`` is a task done (every
check held after the run), with the run's figures (calls, plan calls, tool errors and recoveries,
why it stopped) and rows per task type, kind and split. A multi-turn study's (``[multi_turn]``) the
same way, ``exact`` being a question the BFCL package's checker passed (one row per config).
"""

from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, model_serializer

from helmdeck_dspy.domain import UNKNOWN_TOOL
from helmdeck_dspy.program.strategies import STRATEGIES
from helmdeck_dspy.bench.bfcl.baseline import PLAIN_VARIANT
from helmdeck_dspy.bench.bfcl.gold_tasks import as_call
from helmdeck_dspy.bench.study.questions import load_questions, load_spec_tasks
from helmdeck_dspy.bench.study.spec import StudyConfig, StudySpec
from helmdeck_dspy.bench.bfcl.models import BfclQuestion
from helmdeck_dspy.bench.bfcl.plans import decode_record, request_records
from helmdeck_dspy.bench.bfcl.score import score_calls
from helmdeck_dspy.evaluation.metric import score_plan
from helmdeck_dspy.evaluation.scoring import guard_prediction
from helmdeck_dspy.evaluation.stats import bootstrap_mean_ci, newcombe_paired_diff, wilson
from helmdeck_dspy.planning.arguments import COERCE_ARGS_KEY
from helmdeck_dspy.planning.chains import PIPELINE_CHAINS_KEY
from helmdeck_dspy.planning.guards import MAP_NAMES_KEY
from helmdeck_dspy.tasks import PlanTask


class Rate(BaseModel):
    """k of n, the rate and its 95% Wilson interval."""

    k: int
    n: int
    rate: float | None
    low: float | None = None
    high: float | None = None

    @classmethod
    def of(cls, k: int, n: int) -> Rate:
        if n == 0:
            return cls(k=0, n=0, rate=None)
        low, high = wilson(k, n)
        return cls(k=k, n=n, rate=round(k / n, 4), low=round(low, 4), high=round(high, 4))


class RunFacts(BaseModel):
    """How one end-to-end task's run went (``Outcome.calls``: the tool calls it made)."""

    kind: str
    split: str
    plan_calls: int
    tool_errors: int
    stopped_because: str
    turns: int | None = Field(default=None, description="A multi-turn question's user turns.")
    turns_passed: int | None = Field(default=None, description="Its leading turns the checker passes (None: not "
                                     "recorded).")


class RunFigures(BaseModel):
    """An end-to-end row's runs: calls and plan calls per task, tool errors, tasks with an error and
    how many of those still ended done, and why the runs stopped."""

    calls_per_task: float
    plan_calls_per_task: float
    tool_errors: int
    tasks_with_errors: int
    recovered: int
    stopped: dict[str, int]
    turns: int | None = Field(default=None, description="Multi-turn: the user turns of the questions (when every "
                              "result says how many of its turns passed).")
    turns_passed: int | None = Field(default=None, description="Multi-turn: leading turns passed, summed.")
    first_turns_passed: int | None = Field(default=None, description="Multi-turn: questions whose first turn passed.")

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> Any:
        out = handler(self)
        if self.turns is None and isinstance(out, dict):  # not a multi-turn row: its table keeps its old fields
            for key in ("turns", "turns_passed", "first_turns_passed"):
                out.pop(key, None)
        return out


class Outcome(BaseModel):
    """One case answered under one config (an end-to-end task: ``exact`` is the task done)."""

    task_id: str
    category: str
    exact: bool
    tool_right: bool | None = Field(description="Gold questions: the called functions are the gold ones.")
    args_matched: int = 0
    names_matched: int = 0
    no_call_right: bool | None = Field(default=None, description="No-call questions: nothing was called.")
    strict: bool | None = Field(description="The answer parsed strictly (None: an end-to-end run).")
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: float | None = None
    plan_score: float | None = Field(default=None, description="Gold tasks: the plan score (None for BFCL).")
    calls: int = Field(default=0, description="Calls the answer makes (a failed answer makes none).")
    asked: int | None = Field(default=None, description="Questions a call serves: the gold's number of calls.")
    run: RunFacts | None = Field(default=None, description="An end-to-end task: how its run went.")


class StudyRow(BaseModel):
    """One config's figures over a set of questions."""

    config: str
    scope: str = Field(description="'all' or a category.")
    n: int
    exact: Rate
    tool_accuracy: Rate
    argument_accuracy: Rate
    irrelevance: Rate
    strict: Rate
    prompt_tokens_p50: float | None = None
    completion_tokens_p50: float | None = None
    latency_p50_s: float | None = None
    paired_n: int = 0
    exact_diff: float | None = Field(default=None, description="Exact rate minus the baseline's, paired.")
    exact_diff_low: float | None = None
    exact_diff_high: float | None = None
    latency_ratio: float | None = Field(default=None, description="Median latency / the baseline's (paired questions).")
    plan_score: float | None = Field(default=None, description="Gold tasks: mean plan score.")
    plan_score_low: float | None = None
    plan_score_high: float | None = None
    plan_score_diff: float | None = Field(default=None, description="Mean plan score minus the baseline's, paired.")
    plan_score_diff_low: float | None = None
    plan_score_diff_high: float | None = None
    served_declined: Rate | None = Field(default=None, description="Questions a call serves answered with no call.")
    calls_short: Rate | None = Field(default=None, description="Served questions answered with fewer calls than asked "
                                     "(a decline included).")
    calls_long: Rate | None = Field(default=None, description="Served questions answered with more calls than asked.")
    runs: RunFigures | None = Field(default=None, description="An end-to-end study: the runs' figures (left out of "
                                    "other rows' dumps).")

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> Any:
        out = handler(self)
        if self.runs is None and isinstance(out, dict):
            out.pop("runs", None)
        return out


def _total(values: Any) -> Any:
    """The sum of a request's per-call figures (None when a call lacks one)."""
    listed = list(values)
    return None if any(v is None for v in listed) else sum(listed)


def median_of(values: list[float]) -> float | None:
    """The median to one decimal, None for no values."""
    return round(statistics.median(values), 1) if values else None


def _plan_score(task: PlanTask, variant: str, calls: list[Any], failed: bool, catalog: Any) -> float:
    """A recorded answer's plan score against its gold task, guarded as the planner guards."""
    variant = "full_steps" if variant == PLAIN_VARIANT else variant
    steps = None if failed else guard_prediction([{"tool": c.name, "args": c.args} for c in calls], variant=variant,
                                                 catalog_ids=catalog.id_set, pipeline_ids=catalog.pipeline_ids)
    return score_plan(task, steps, variant=variant, pipeline_ids=catalog.pipeline_ids).score


def outcomes_for(path: Path, questions: dict[str, BfclQuestion], catalog_for: Any,
                 tasks: dict[str, PlanTask] | None = None, post: dict[str, bool] | None = None) -> dict[str, Outcome]:
    """Each answered question of a trace file scored (the last record per question); ``tasks``: the
    gold tasks the questions were made from, for the plan score; ``post``: the post-model guards to
    apply instead of the recorded ones (:func:`~helmdeck_dspy.bench.bfcl.plans.decode_record`)."""
    out: dict[str, Outcome] = {}
    if not path.exists():
        return out
    for task_id, calls in request_records(path, on_error="skip").items():
        rec = calls[-1]  # the answer; the request's tokens and latency are every call's
        q = questions.get(task_id)
        if q is None:
            continue
        decoded = decode_record(rec, catalog_for(q), post)
        failed = decoded.cause is not None
        task = (tasks or {}).get(task_id)
        plan_score = None if task is None else _plan_score(task, decoded.variant, decoded.calls, failed, catalog_for(q))
        decoded = decoded._replace(calls=[as_call(c) for c in decoded.calls])
        score = score_calls(q, decoded.calls, failed=failed)
        called = Counter(c.name for c in decoded.calls if c.name != UNKNOWN_TOOL)
        golds = [Counter(g.name for g in calls) for calls in (q.gold, *q.alternatives)]
        has_gold = q.expect == "calls"
        out[task_id] = Outcome(
            task_id=task_id, category=q.category, exact=score.exact,
            tool_right=(called in golds and decoded.cause is None) if has_gold else None,
            args_matched=score.matched_calls if has_gold else 0, names_matched=score.names_matched if has_gold else 0,
            no_call_right=score.exact if q.expect == "no_call" else None,
            strict=decoded.outcome == "strict", prompt_tokens=_total(c.prompt_tokens for c in calls),
            completion_tokens=_total(c.completion_tokens for c in calls),
            latency_ms=None if any(c.cache_hit for c in calls) else _total(c.latency_ms for c in calls),
            plan_score=plan_score, calls=len(decoded.calls), asked=len(q.gold) if has_gold else None,
        )
    return out


def summarise_row(config: str, scope: str, outs: list[Outcome], base: dict[str, Outcome] | None) -> StudyRow:
    """Figures of one config over ``outs``, paired against ``base`` (the baseline's outcomes by id)."""
    gold = [o for o in outs if o.tool_right is not None]
    no_call = [o for o in outs if o.no_call_right is not None]
    row = StudyRow(
        config=config, scope=scope, n=len(outs),
        exact=Rate.of(sum(o.exact for o in outs), len(outs)),
        tool_accuracy=Rate.of(sum(bool(o.tool_right) for o in gold), len(gold)),
        argument_accuracy=Rate.of(sum(o.args_matched for o in gold), sum(o.names_matched for o in gold)),
        irrelevance=Rate.of(sum(bool(o.no_call_right) for o in no_call), len(no_call)),
        strict=Rate.of(sum(o.strict is True for o in outs), sum(o.strict is not None for o in outs)),
        prompt_tokens_p50=median_of([o.prompt_tokens for o in outs if o.prompt_tokens is not None]),
        completion_tokens_p50=median_of([o.completion_tokens for o in outs if o.completion_tokens is not None]),
        latency_p50_s=median_of([o.latency_ms / 1000 for o in outs if o.latency_ms is not None]),
    )
    served = [o for o in outs if o.asked is not None]
    if served:
        row = row.model_copy(update={
            "served_declined": Rate.of(sum(o.calls == 0 for o in served), len(served)),
            "calls_short": Rate.of(sum(o.calls < (o.asked or 0) for o in served), len(served)),
            "calls_long": Rate.of(sum(o.calls > (o.asked or 0) for o in served), len(served)),
        })
    runs = [(o, o.run) for o in outs if o.run is not None]
    if runs:
        erred = [o for o, r in runs if r.tool_errors]
        row = row.model_copy(update={"runs": RunFigures(
            calls_per_task=round(sum(o.calls for o, _ in runs) / len(runs), 4),
            plan_calls_per_task=round(sum(r.plan_calls for _, r in runs) / len(runs), 4),
            tool_errors=sum(r.tool_errors for _, r in runs), tasks_with_errors=len(erred),
            recovered=sum(o.exact for o in erred), stopped=dict(sorted(Counter(r.stopped_because for _, r in runs).items())),
            **_turn_figures([r for _, r in runs]),
        )})
    scored = [o.plan_score for o in outs if o.plan_score is not None]
    if scored:
        low, high = bootstrap_mean_ci(scored)
        row = row.model_copy(update={"plan_score": round(statistics.mean(scored), 4), "plan_score_low": round(low, 4),
                                     "plan_score_high": round(high, 4)})
    if base is None:
        return row
    pairs = [(o, base[o.task_id]) for o in outs if o.task_id in base]
    if not pairs:
        return row
    diffs = [a.plan_score - b.plan_score for a, b in pairs if a.plan_score is not None and b.plan_score is not None]
    if diffs:
        low, high = bootstrap_mean_ci(diffs)
        row = row.model_copy(update={"plan_score_diff": round(statistics.mean(diffs), 4),
                                     "plan_score_diff_low": round(low, 4), "plan_score_diff_high": round(high, 4)})
    cells = Counter((a.exact, b.exact) for a, b in pairs)
    d, low, high = newcombe_paired_diff(cells[True, True], cells[True, False], cells[False, True], cells[False, False])
    mine = [a.latency_ms for a, b in pairs if a.latency_ms is not None and b.latency_ms is not None]
    theirs = [b.latency_ms for a, b in pairs if a.latency_ms is not None and b.latency_ms is not None]
    ratio = round(statistics.median(mine) / statistics.median(theirs), 2) if mine and statistics.median(theirs) else None
    return row.model_copy(update={"paired_n": len(pairs), "exact_diff": round(d, 4), "exact_diff_low": round(low, 4),
                                  "exact_diff_high": round(high, 4), "latency_ratio": ratio})


def _turn_figures(runs: list[RunFacts]) -> dict[str, int]:
    """How far multi-turn runs got (:class:`RunFigures`' turn fields), when every run says."""
    if not runs or any(r.turns is None or r.turns_passed is None for r in runs):
        return {}
    return {"turns": sum(r.turns or 0 for r in runs), "turns_passed": sum(r.turns_passed or 0 for r in runs),
            "first_turns_passed": sum(bool(r.turns_passed) for r in runs)}


def _post_guards(config: StudyConfig) -> dict[str, Any] | None:
    """A row scoring another row's answers guards them with its own post-model options (a ``plain``
    strategy row reads the model alone's answers as that strategy does: a call list, near-miss names
    mapped)."""
    if config.answers_from is None:
        return None
    post: dict[str, Any] = {COERCE_ARGS_KEY: config.coerce_args, PIPELINE_CHAINS_KEY: config.pipeline_chains}
    if config.strategy is not None and STRATEGIES[config.strategy].model_alone_request:
        post.update({"prompt": {"strategy": config.strategy}, MAP_NAMES_KEY: True})
    return post


def e2e_outcomes(path: Path) -> dict[str, Outcome]:
    """An end-to-end row's results file scored by its checks (the last result of a task wins); a task's
    tokens are its model calls' sums, where its result line keeps them."""
    from helmdeck_dspy.bench.e2e.checks import task_split
    from helmdeck_dspy.bench.e2e.run import load_results

    return {t: Outcome(task_id=t, category=r.type, exact=r.success, tool_right=None, strict=None,
                       latency_ms=r.seconds * 1000, calls=len(r.steps),
                       prompt_tokens=sum(p for p, _ in r.model_tokens) if r.model_tokens else None,
                       completion_tokens=sum(c for _, c in r.model_tokens) if r.model_tokens else None,
                       run=RunFacts(kind=r.kind, split=r.split or task_split(t), plan_calls=r.plan_calls,
                                    tool_errors=r.tool_errors, stopped_because=r.stopped_because))
            for t, r in load_results(path).items()}


def multi_turn_outcomes(path: Path) -> dict[str, Outcome]:
    """A multi-turn row's results file scored by the package's checker (the last result of a question wins)."""
    from helmdeck_dspy.bench.multi_turn.run import load_results

    return {t: Outcome(task_id=t, category=r.category, exact=r.success, tool_right=None, strict=None,
                       latency_ms=r.seconds * 1000, calls=r.calls,
                       run=RunFacts(kind="multi_turn", split=r.split, plan_calls=r.plan_calls, tool_errors=r.tool_errors,
                                    stopped_because=r.stopped_because, turns=r.question_turns,
                                    turns_passed=r.turns_passed))
            for t, r in load_results(path).items()}


def _scopes(spec: StudySpec, by_config: dict[str, dict[str, Outcome]]) -> list[tuple[str, Any]]:
    """The rows each config gets beyond ``all``: one per category; an end-to-end study's also per
    task kind and split (``kind:act``, ``split:test``); none for a multi-turn study (one category)."""
    if spec.multi_turn is not None:
        return []
    outs = [o for rows in by_config.values() for o in rows.values()]
    categories = spec.categories or tuple(sorted({o.category for o in outs}))
    scopes: list[tuple[str, Any]] = [(c, lambda o, c=c: o.category == c) for c in categories]
    if spec.e2e is not None:
        for field in ("kind", "split"):
            for value in sorted({getattr(o.run, field) for o in outs if o.run is not None}):
                scopes.append((f"{field}:{value}", lambda o, f=field, v=value: o.run is not None and getattr(o.run, f) == v))
    return scopes


def outcomes_by_config(spec: StudySpec) -> dict[str, dict[str, Outcome]]:
    """Every config's outcomes by case id."""
    if spec.e2e is not None:
        return {c.name: e2e_outcomes(spec.trace_path(c)) for c in spec.config}
    if spec.multi_turn is not None:
        return {c.name: multi_turn_outcomes(spec.trace_path(c)) for c in spec.config}
    data = load_questions(spec)
    questions = {q.id: q for q in data.questions}
    pooled = data.pool()[0]
    tasks = {t.id: t for t in load_spec_tasks(spec)} if spec.tasks else None
    return {
        c.name: outcomes_for(spec.trace_path(c), questions,
                             (lambda q, c=c, own=spec.catalog_of(c): pooled if c.pool else (own or q.catalog)), tasks,
                             _post_guards(c))
        for c in spec.config
    }


def score_study(spec: StudySpec) -> list[StudyRow]:
    """Every config's rows (overall, then per scope) from the files beside the spec."""
    by_config = outcomes_by_config(spec)
    scopes = _scopes(spec, by_config)
    rows: list[StudyRow] = []
    for c in spec.config:
        outs = list(by_config[c.name].values())
        if not outs:
            continue
        paired_base = None if c.name == spec.baseline_of(c) else by_config.get(spec.baseline_of(c))
        rows.append(summarise_row(c.name, "all", outs, paired_base))
        for scope, holds in scopes:
            mine = [o for o in outs if holds(o)]
            if mine:
                rows.append(summarise_row(c.name, scope, mine, paired_base))
    return rows
