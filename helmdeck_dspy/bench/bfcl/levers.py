"""Paired lever runs on BFCL: the model alone and planner configurations, in one resumable run.

A spec (``levers.toml``) names the LM, the model id whose budget applies, the BFCL folders,
categories and questions per category, the sampling, and a list of ``[[config]]`` rows: ``plain``
(the model alone, :mod:`~helmdeck_dspy.bench.bfcl.baseline`) or a planner with its levers
(constrained decoding, argument coercion, the program, demos, the pooled catalog). Relative
paths in a spec are read from the spec's folder.

:func:`run_levers` answers every (question, config) pair that has no record yet, question by
question, every config of a question one after another, so a load change on the machine falls on
all rows alike and a run stopped at any point resumes where it was. Each config's exchanges are
appended to ``<config>.jsonl`` beside the spec, ``task_id`` = the BFCL id, the raw answer in
``content``; ``bench bfcl --traces`` and :func:`~helmdeck_dspy.bench.bfcl.lever_table.score_levers`
score them without a model.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from helmdeck_dspy.bench.bfcl.baseline import record_plain
from helmdeck_dspy.bench.bfcl.load import discover, load_bfcl
from helmdeck_dspy.bench.bfcl.models import BfclQuestion, BfclSet
from helmdeck_dspy.domain import RETIRED_STRATEGIES, StrategyName
from helmdeck_dspy.errors import DataFileError, validation_message
from helmdeck_dspy.io.datafiles import parse_toml, read_text
from helmdeck_dspy.planning.options import BEFORE_ISSUE_22
from helmdeck_dspy.program.store import PROGRAM_CHOICES

if TYPE_CHECKING:
    from helmdeck_dspy.catalog.models import RoutingGuide
    from helmdeck_dspy.tasks import PlanTask


class LeverSpecError(DataFileError):
    """A levers spec that cannot be used."""


RETIRED_LEVERS: dict[str, Any] = {"fit_last": False, "strict_fit": False, "nearest_tools": 0, "multi_call_format": False,
                                  "pipelines_as_tools": False, "instructions": None, "knn_demos": 0, "arg_hints": False,
                                  "recheck_form": "narrowed"}
"""Levers measured, lost and taken out of the planner (issue 37), with their off values (and the
strategies in ``domain.RETIRED_STRATEGIES``): a committed spec row that set one still loads, so its
recorded answers re-score, but it cannot run again (git keeps the code; docs/results say which rows)."""


class LeverConfig(BaseModel):
    """One row of a lever run: the model alone, or the planner with some levers on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$", description="Row name; also the trace file's stem.")
    description: str = ""
    plain: bool = Field(default=False, description="The model alone with the plain prompt (no planner).")
    constrained: bool | None = Field(default=None, description="Planner: schema-constrained decoding (None: the budget's); "
                                     "the older spelling of strategy schema / free.")
    strategy: StrategyName | None = Field(
        default=None, description="Planner: the answer strategy (None: the budget row's, else the endpoint's). A plain "
        "row with answers_from naming the model alone's row re-reads those answers as the strategy would.")
    coerce_args: bool = Field(default=True, description="Planner: check and coerce args against the tool schemas.")
    pipeline_chains: bool = Field(default=True, description="Planner: a plan listing every pack a pipeline chains "
                                  "runs the pipeline.")
    answers_from: str | None = Field(default=None, description="No model call: this row scores the named row's "
                                     "recorded answers, guarded with its own coerce_args and pipeline_chains.")
    catalog_fitting: bool = Field(default=True, description="Planner: instructions and demos fitted to the catalog "
                                  "(off with coerce_args off: the planner before issue 22).")
    fit_decision: bool | None = Field(default=None, description="Planner, constrained: the answer opens with "
                                      "tool_fits (None: the planner's default).")
    probe_decision: bool = Field(default=False, description="Planner: record the first answer's decline probability "
                                 "(planning.decision).")
    program: str | None = Field(default=None, description="Planner: program (None/auto, tier, tier:T, bare, or a "
                                "program file relative to the spec).")
    retired: tuple[str, ...] = Field(default=(), description="Levers this row set that the planner no longer has "
                                     "(RETIRED_LEVERS): its recorded answers are scored, it makes no new call.")
    variant: str = "full_steps"
    pool: bool = Field(default=False, description="Plan against one catalog pooled from every loaded question.")
    catalog: str | None = Field(default=None, description="Gold tasks: plan over this catalog file (beside the spec).")
    budget_model: str | None = Field(default=None, description="Budget lookup id for this row (default: the spec's model).")
    budget: dict[str, Any] = Field(default_factory=dict, description="Budget fields this row changes for its model "
                                   "(for example max_catalog_bytes), on top of the bundled table's row.")
    categories: tuple[str, ...] | None = Field(default=None, description="Run this row on these categories only.")
    limit: int | None = Field(default=None, ge=1, description="Run this row on the first N questions of each "
                              "category only (None: the spec's limit).")

    @model_validator(mode="before")
    @classmethod
    def _retire(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        kept = {k: v for k, v in data.items() if k not in RETIRED_LEVERS}
        gone = tuple(sorted(k for k, v in data.items() if k in RETIRED_LEVERS and v != RETIRED_LEVERS[k]))
        if kept.get("strategy") in RETIRED_STRATEGIES:  # its recorded plan records still re-score
            gone = (*gone, f"strategy={kept.pop('strategy')}")
        return {**kept, "retired": gone} if gone else kept

    @property
    def answer_strategy(self) -> str | None:
        """The strategy the row plans with (``constrained`` is its older spelling)."""
        if self.strategy is not None or self.constrained is None:
            return self.strategy
        return "schema" if self.constrained else "free"

    @property
    def preset(self) -> str | None:
        """The planner preset this row runs (None: a mix of the three switches no preset reproduces)."""
        switches = (self.catalog_fitting, self.coerce_args)
        if all(switches) and self.pipeline_chains:
            return "shipped"
        return BEFORE_ISSUE_22 if not any(switches) else None  # its chain guard is off (none on BFCL's tools)

    @field_validator("budget")
    @classmethod
    def _budget_fields(cls, value: dict[str, Any]) -> dict[str, Any]:
        from helmdeck_dspy.budgets import BudgetFields

        unknown = sorted(set(value) - set(BudgetFields.model_fields))
        if unknown:
            raise ValueError(f"not budget fields: {unknown}")
        return value  # the values are checked against the model's row when the spec loads

    def applies_to(self, q: BfclQuestion, rank: int = 0) -> bool:
        """Whether this row answers ``q``, the ``rank``-th question (from 0) of its category."""
        return (self.categories is None or q.category in self.categories) and (self.limit is None or rank < self.limit)


class LeverSpec(BaseModel):
    """A lever run (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1, description="Budget lookup id.")
    lm: str = Field(min_length=1, description="LM spec (local:NAME, llamacpp/..., a LiteLLM string, replay:, sim:).")
    data: tuple[str, ...] = Field(default=(), description="BFCL data folders, relative to the spec.")
    tasks: str | None = Field(default=None, description="Instead of BFCL data: a gold tasks JSONL file (relative "
                              "to the spec), each task a question over the whole of ``catalog``.")
    catalog: str | None = Field(default=None, description="The catalog file the gold tasks are planned over.")
    split: str | None = Field(default=None, description="Gold tasks: only this split (None: every task).")
    categories: tuple[str, ...] = Field(min_length=1)
    limit: int = Field(ge=1, description="Questions per category (the first N after ``start``).")
    start: int = Field(default=0, ge=0, description="Questions of each category left out before the first one "
                       "asked (60: a test half after a dev half of 60).")
    temperature: float = 0.0
    seed: int = 7
    baseline: str = Field(default="plain", description="The config every other row is paired against.")
    timeout_s: float = Field(default=900.0, gt=0, le=3600, description="One call's time limit: generous, so a "
                             "loaded machine slows a call down rather than failing it (a failure is asked again).")
    context: int | None = Field(default=None, ge=256, description="A ``local:`` model's context window in tokens "
                                "(None: the runner's default, 8,192), for prompts that need more.")
    block: int = Field(default=8, ge=1, description="Questions asked under one config before the next config "
                       "takes the same questions (a server's prompt cache keeps one config's stable prefix).")
    config: tuple[LeverConfig, ...] = Field(min_length=1)
    path: Path = Field(default=Path("."), exclude=True)

    @property
    def folder(self) -> Path:
        return self.path.parent

    def answering(self, config: LeverConfig) -> LeverConfig:
        """The row whose recorded answers ``config`` scores: its ``answers_from`` row, else itself."""
        return next((c for c in self.config if c.name == config.answers_from), config)

    def trace_path(self, config: LeverConfig) -> Path:
        return self.folder / f"{self.answering(config).name}.jsonl"

    def program_choice(self, config: LeverConfig) -> str | None:
        """The program a config plans with, as the planner takes it (a program file resolved beside the spec)."""
        choice = config.program
        if choice is None or choice in PROGRAM_CHOICES or choice.startswith("tier:"):
            return choice
        return str((self.folder / choice).resolve())

    def catalog_of(self, config: LeverConfig) -> RoutingGuide | None:
        """The catalog file a config's answers were planned over, if not the questions' own (loaded once)."""
        own = self.answering(config).catalog
        return None if own is None else _catalog_file((self.folder / own).resolve())

    def data_dirs(self) -> list[Path]:
        return [(self.folder / d).resolve() for d in self.data]

    @model_validator(mode="after")
    def _one_source(self) -> LeverSpec:
        if bool(self.data) == bool(self.tasks) or bool(self.tasks) != bool(self.catalog):
            raise ValueError("give BFCL data folders (data) or gold tasks with their catalog (tasks and catalog)")
        return self


@functools.cache
def _catalog_file(path: Path) -> RoutingGuide:
    from helmdeck_dspy.catalog.models import load_catalog

    return load_catalog(path)


def load_lever_spec(path: str | Path) -> LeverSpec:
    """Read and validate a levers spec.

    Raises:
        LeverSpecError: the file does not parse, a field is wrong, names repeat, or the baseline is
            not one of the configs.
    """
    data = parse_toml(read_text(path, LeverSpecError), str(path), LeverSpecError)
    try:
        spec = LeverSpec.model_validate({**data, "path": Path(path)})
    except ValidationError as exc:
        raise LeverSpecError(str(path), validation_message(exc, subject="spec", all_errors=True)) from None
    names = [c.name for c in spec.config]
    if len(set(names)) != len(names):
        raise LeverSpecError(str(path), f"config names repeat: {names}")
    if spec.baseline not in names:
        raise LeverSpecError(str(path), f"baseline {spec.baseline!r} is not a config; expected one of {names}")
    for c in spec.config:
        if c.budget:
            _check_budget_change(spec, c, str(path))
        source = spec.answering(c)
        if c.strategy is not None and c.constrained is not None:
            raise LeverSpecError(str(path), f"config {c.name}: give strategy or constrained, not both")
        plain_reread = source.plain and c.strategy == "plain"  # the model alone's answers as the plain strategy reads them
        if c.answers_from is not None and (source is c or source.answers_from or (source.plain and not plain_reread)):
            raise LeverSpecError(str(path), f"config {c.name}: answers_from {c.answers_from!r} is not a planner config "
                                 "with answers of its own (or the model alone's, for a strategy = \"plain\" row)")
        if c.catalog is not None and (not spec.tasks or not (spec.folder / c.catalog).is_file()):
            raise LeverSpecError(str(path), f"config {c.name}: catalog {c.catalog!r} needs gold tasks and a file beside "
                                 "the spec")
        program = spec.program_choice(c)
        if program != c.program and not Path(str(program)).is_file():
            raise LeverSpecError(str(path), f"config {c.name}: program file {program} not found")
    return spec


def _check_budget_change(spec: LeverSpec, config: LeverConfig, path: str) -> None:
    """A config's budget changes applied to its model's row, as the run applies them."""
    from helmdeck_dspy.budgets import load_budget_table

    try:
        load_budget_table().changed_for(config.budget_model or spec.model, config.budget)
    except ValidationError as exc:
        raise LeverSpecError(path, f"config {config.name}: budget: {validation_message(exc, subject='budget')}") from None


def load_spec_tasks(spec: LeverSpec, *, split: bool = True) -> list[PlanTask]:
    """The gold tasks a spec names (of its split, unless ``split`` is False)."""
    from helmdeck_dspy.tasks import load_tasks

    assert spec.tasks is not None
    return [t for t in load_tasks(path=spec.folder / spec.tasks) if not split or spec.split is None or t.split == spec.split]


def _task_questions(spec: LeverSpec, *, split: bool = True) -> list[BfclQuestion]:
    """The spec's gold tasks as questions over its catalog."""
    from helmdeck_dspy.bench.bfcl.gold_tasks import questions_from_tasks
    from helmdeck_dspy.catalog.models import load_catalog

    assert spec.catalog is not None
    return questions_from_tasks(load_spec_tasks(spec, split=split), load_catalog(spec.folder / spec.catalog),
                                str(spec.folder / str(spec.tasks)))


def load_questions(spec: LeverSpec) -> BfclSet:
    """The spec's questions: its categories from whichever data folder holds them, ``limit`` each after
    the first ``start``, in round-robin order across categories (so a partial run covers every category)."""
    if spec.tasks:
        asked = tuple(q for q in _task_questions(spec) if q.category in spec.categories)
        return _ordered(spec, [BfclSet(questions=asked, files={}).limited(spec.limit, spec.start)])
    sets: list[BfclSet] = []
    wanted = list(spec.categories)
    for folder in spec.data_dirs():
        here = [c.category for c in discover(folder)] if folder.is_dir() else []
        mine = [c for c in wanted if c in here]
        if mine:
            sets.append(load_bfcl(folder, mine).limited(spec.limit, spec.start))
            wanted = [c for c in wanted if c not in mine]
    if wanted:
        raise LeverSpecError(str(spec.path), f"categories not found in {list(spec.data)}: {wanted}")
    return _ordered(spec, sets)


def _ordered(spec: LeverSpec, sets: list[BfclSet]) -> BfclSet:
    """The questions of ``sets`` in round-robin order across the spec's categories."""
    by_cat: dict[str, list[BfclQuestion]] = {}
    files: dict[str, tuple[str, str]] = {}
    notes = []
    for s in sets:
        files.update(s.files)
        notes += list(s.notes)
        for q in s.questions:
            by_cat.setdefault(q.category, []).append(q)
    ordered = [q for group in _round_robin([by_cat.get(c, []) for c in spec.categories]) for q in group]
    return BfclSet(questions=tuple(ordered), files=files, notes=tuple(notes))


def _round_robin(groups: list[list[BfclQuestion]]) -> list[list[BfclQuestion]]:
    out = []
    for i in range(max((len(g) for g in groups), default=0)):
        out.append([g[i] for g in groups if i < len(g)])
    return out


def done_ids(path: Path) -> set[str]:
    """Task ids that already have an answered plan record in a trace file (a transport failure, such
    as a timeout on a loaded machine, is asked again on resume)."""
    from helmdeck_dspy.traces.io import load_traces

    if not path.exists():
        return set()
    return {r.task_id for r in load_traces(path, on_error="skip") if r.call == "plan" and r.task_id and not r.error}


def start_local(spec: LeverSpec) -> None:
    """Start a ``local:`` model's server with the spec's context window before the LM is built
    (which then reuses it); nothing for other LM specs or without ``context``."""
    from helmdeck_dspy.engines.lm_spec import LOCAL_PREFIX

    if spec.context is not None and spec.lm.startswith(LOCAL_PREFIX):
        from helmdeck_dspy.local.endpoint import managed_server
        from helmdeck_dspy.local.server import ServerOptions

        managed_server(spec.lm.removeprefix(LOCAL_PREFIX), ServerOptions(n_ctx=spec.context))


def runnable(config: LeverConfig) -> bool:
    """Whether a row can still make calls: the model alone, or a planner row no retired lever or
    mixed preset keeps from being reproduced."""
    return config.plain or (not config.retired and config.preset is not None)


def pending_pairs(spec: LeverSpec, data: BfclSet, only: set[str] | None = None) -> list[tuple[BfclQuestion, LeverConfig]]:
    """The (question, config) pairs without a record yet: block by block of ``spec.block`` questions,
    each config in turn over the block's questions."""
    configs = [c for c in spec.config if (only is None or c.name in only) and c.answers_from is None and runnable(c)]
    done = {c.name: done_ids(spec.trace_path(c)) for c in configs}
    qs = list(data.questions)
    seen: dict[str, int] = {}
    rank = {}
    for q in qs:
        rank[q.id] = seen[q.category] = seen.get(q.category, -1) + 1
    blocks = [qs[i:i + spec.block] for i in range(0, len(qs), spec.block)]
    return [(q, c) for block in blocks for c in configs for q in block
            if c.applies_to(q, rank[q.id]) and q.id not in done[c.name]]


def run_levers(
    spec: LeverSpec, *, lm: Any = None, only: set[str] | None = None,
    progress: Callable[[str, BfclQuestion], None] | None = None,
) -> dict[str, int]:
    """Answer every (question, config) pair without a record; returns calls made per config.

    Args:
        spec: The run.
        lm: A ready ``dspy.LM`` (default: built from ``spec.lm`` with the spec's sampling, cache off).
        only: Run these configs only.
        progress: Called before each call with the config name and the question.
    """
    from helmdeck_dspy.budgets import load_budget_table
    from helmdeck_dspy.engines.lm_spec import make_lm, run_settings
    from helmdeck_dspy.planning.planner import Planner  # imports dspy
    from helmdeck_dspy.planning.resilience.policy import RetryPolicy

    data = load_questions(spec)
    configs = [c for c in spec.config if only is None or c.name in only]
    pending = pending_pairs(spec, data, only)
    made = {c.name: 0 for c in configs}
    if not pending:
        return made
    if lm is None:
        start_local(spec)
        lm = make_lm(spec.lm, cache=False, num_retries=0, timeout=spec.timeout_s,
                     sampling={"temperature": spec.temperature, "seed": spec.seed})
    retry = RetryPolicy(max_attempts=1, timeout_s=spec.timeout_s)
    table = load_budget_table()
    settings = run_settings(spec.lm) or {}
    pooled = data.pool()[0] if any(c.pool for c in configs) else None
    for q, c in pending:
        if progress is not None:
            progress(c.name, q)
        catalog = pooled if c.pool and pooled is not None else (spec.catalog_of(c) or q.catalog)
        model = c.budget_model or spec.model
        run = {**settings, "lever_config": c.name}
        path = spec.trace_path(c)
        if c.plain:
            budget = table.lookup(model)
            record_plain(lm, spec.lm, q.intent, q.id, catalog, path, budget, run)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                budgets = table.changed_for(model, c.budget) if c.budget else table
                planner = Planner.for_model(
                    model, lm=lm, catalog=catalog, variant=c.variant, budgets=budgets, record_path=path, retry=retry,
                    record_run=run, history=None, use_filter=False, cache=False, program=spec.program_choice(c),
                    answer_strategy=c.answer_strategy,
                    preset=c.preset, fit_decision=c.fit_decision, probe_decision=c.probe_decision,
                )
            planner.plan(q.intent, task_id=q.id)
        made[c.name] += 1
    return made
