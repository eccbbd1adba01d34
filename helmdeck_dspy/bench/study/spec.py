"""A study spec (``study.toml``): cases x arms, paired, in one resumable run.

A spec names the LM, the model id whose budget applies, where the questions come from (BFCL data
folders, gold tasks over a catalog: the project's splits, the MCP gold sets, or the end-to-end
tasks of ``[e2e]`` run in sandboxes over real MCP servers, :mod:`~helmdeck_dspy.bench.e2e.run`, or
BFCL's multi_turn_base executed, ``[multi_turn]``, :mod:`~helmdeck_dspy.bench.multi_turn`), the categories and questions per category, the sampling,
and a list of ``[[config]]`` rows, the arms: ``plain`` (the model alone,
:mod:`~helmdeck_dspy.bench.bfcl.baseline`), a planner with its options (answer strategy, argument
coercion, the program, demos, the pooled catalog, other planner ``options``), or a program an optimizer
compiles for the model first (``optimizer``: the held-out comparison's arms). Each row is paired
against the spec's ``baseline`` row, or the row its ``paired_with`` names. Relative paths are read
from the spec's folder; a spelling taken out (:data:`OLD_SPELLINGS`) is refused, naming the new one.

:func:`~helmdeck_dspy.bench.study.runner.run_arms` answers every (question, config) pair that has no
record yet, block by block, so a load change on the machine falls on all rows alike and a run
stopped at any point resumes where it was. Each config's exchanges are appended to
``<config>.jsonl`` beside the spec, ``task_id`` = the question's id, the raw answer in ``content``;
:func:`~helmdeck_dspy.bench.study.table.score_study` scores them without a model.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from helmdeck_dspy.bench.e2e import MAX_STEPS, TIME_CAP_S
from helmdeck_dspy.bench.multi_turn import MultiTurnSource
from helmdeck_dspy.bench.study.presets import BEFORE_ISSUE_22, before_issue_22  # noqa: F401 - re-exported
from helmdeck_dspy.domain import RETIRED_STRATEGIES
from helmdeck_dspy.errors import DataFileError, validation_message
from helmdeck_dspy.io.datafiles import parse_toml, read_text
from helmdeck_dspy.program.store import PROGRAM_CHOICES

if TYPE_CHECKING:
    from helmdeck_dspy.budgets import BudgetTable
    from helmdeck_dspy.catalog.models import RoutingGuide

SPEC_NAME = "study.toml"
"""A study spec's file name (a ``bench plan`` step names one; the committed studies are all named so)."""

OLD_SPELLINGS: dict[str, str] = {"levers.toml": SPEC_NAME, "constrained = true": 'strategy = "schema"',
                                 "constrained = false": 'strategy = "free"'}
"""Spellings taken out of the spec format (issue 51; every committed spec was migrated once), each
with the one to write instead: the file name before the held-out comparison joined the studies,
and a row's switch before answer strategies were named."""

Optimizer = Literal["bootstrap", "mipro", "gepa"]


class StudySpecError(DataFileError):
    """A study spec that cannot be used."""


class OldSpellingError(StudySpecError):
    """A study spec written in a spelling taken out of the format (:data:`OLD_SPELLINGS`); the message
    names the spelling to write. The CLI exits 2 for it, as for a usage error: renaming fixes it."""

    exit_code = 2


class Case(Protocol):
    """One case of a study: a BFCL question (gold tasks become questions) or an end-to-end task."""

    @property
    def id(self) -> str: ...

    @property
    def category(self) -> str: ...


class E2ESource(BaseModel):
    """The end-to-end tasks as a study's cases (``[e2e]``); a case's category is its task type."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tasks: str | None = Field(default=None, description="A tasks file, relative to the spec (None: eval/e2e/tasks.jsonl).")
    split: Literal["all", "dev", "test"] = "all"
    only: tuple[str, ...] = Field(default=(), description="Task ids or types (empty: every task of the split).")
    max_steps: int = Field(default=MAX_STEPS, ge=1, le=100, description="Loop steps a task may take.")
    time_cap_s: float = Field(default=TIME_CAP_S, gt=0, description="Seconds a task may take.")
    npm_dir: Path = Field(default=Path(".mcp-servers"), description="The npm servers' folder (from the cwd).")
    sqlite_command: Path = Field(default=Path(".mcp-servers/sqlite/bin/mcp-server-sqlite"), description="mcp-server-sqlite.")  # own venv: MCP SDK 1.x


RETIRED_LEVERS: dict[str, Any] = {"fit_last": False, "strict_fit": False, "nearest_tools": 0, "multi_call_format": False,
                                  "pipelines_as_tools": False, "instructions": None, "knn_demos": 0, "arg_hints": False,
                                  "recheck_form": "narrowed"}
"""Levers measured, lost and taken out of the planner (issue 37), with their off values (and the
strategies in ``domain.RETIRED_STRATEGIES``): a committed spec row that set one still loads, so its
recorded answers re-score, but it cannot run again (git keeps the code; docs/results say which rows)."""


def _known(value: dict[str, Any], model: type[BaseModel], what: str) -> dict[str, Any]:
    """``value`` when each of its keys is a field of ``model``; else a ValueError naming the others."""
    unknown = sorted(set(value) - set(model.model_fields))
    if unknown:
        raise ValueError(f"not {what}: {unknown}")
    return value


class StudyConfig(BaseModel):
    """One row of a study, an arm: the model alone, the planner with some options, or a compiled program."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$", description="Row name; also the trace file's stem.")
    description: str = ""
    plain: bool = Field(default=False, description="The model alone with the plain prompt (no planner).")
    loop: Literal["replan", "chat", "chat-checked", "chat-bare", "fallback"] = "replan"  # [e2e], [multi_turn]: re-plans, or one conversation a task
    framework: Literal["raw", "endpoint"] | None = Field(default=None, description="[e2e]: the OpenAI Agents SDK's loop, "
                                                          "its model straight (raw) or through serve --openai (endpoint).")
    strategy: str | None = Field(
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
    optimizer: Optimizer | None = Field(default=None, description="A compile arm: the program this optimizer compiles "
                                        "for the spec's model and this row's variant (into programs/NAME/ beside the "
                                        "spec, with eval/compile.toml's settings) before the row answers.")
    paired_with: str | None = Field(default=None, description="The row this one is paired against (None: the spec's "
                                    "baseline).")
    variant: str = "full_steps"
    pool: bool = Field(default=False, description="Plan against one catalog pooled from every loaded question.")
    catalog: str | None = Field(default=None, description="Gold tasks: plan over this catalog file (beside the spec).")
    budget_model: str | None = Field(default=None, description="Budget lookup id for this row (default: the spec's model).")
    budget: dict[str, Any] = Field(default_factory=dict, description="Budget fields this row changes for its model "
                                   "(for example max_catalog_bytes), on top of the bundled table's row.")
    options: dict[str, Any] = Field(default_factory=dict, description="Planner: other PlannerOptions fields "
                                    "(for example fill_placeholders, recheck_top).")
    categories: tuple[str, ...] | None = Field(default=None, description="Run this row on these categories only.")
    limit: int | None = Field(default=None, ge=1, description="Run this row on the first N questions of each "
                              "category only (None: the spec's limit).")
    split: Literal["dev", "test"] | None = Field(default=None, description="End-to-end tasks: run this row on this "
                                                 "half only (None: the spec's).")

    @model_validator(mode="before")
    @classmethod
    def _retire(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        kept = {k: v for k, v in data.items() if k not in RETIRED_LEVERS}
        gone = tuple(sorted(k for k, v in data.items() if k in RETIRED_LEVERS and v != RETIRED_LEVERS[k]))
        if kept.get("strategy") in RETIRED_STRATEGIES:  # its recorded plan records still re-score
            gone = (*gone, f"strategy={kept.pop('strategy')}")
        elif kept.get("strategy") is not None:
            from helmdeck_dspy.program.strategies import STRATEGIES

            if kept["strategy"] not in STRATEGIES:
                raise ValueError(f"unknown answer strategy {kept['strategy']!r}; expected one of {sorted(STRATEGIES)}")
        return {**kept, "retired": gone} if gone else kept

    @property
    def preset(self) -> str | None:
        """The planner preset this row runs (None: a mix of the three switches no preset reproduces)."""
        switches = (self.catalog_fitting, self.coerce_args)
        if all(switches) and self.pipeline_chains:
            return "shipped"
        return BEFORE_ISSUE_22 if not any(switches) else None  # its chain guard is off (none on BFCL's tools)

    @field_validator("options")
    @classmethod
    def _planner_options(cls, value: dict[str, Any]) -> dict[str, Any]:
        from helmdeck_dspy.planning.options import PlannerOptions

        PlannerOptions.model_validate(_known(value, PlannerOptions, "planner options"))
        return value

    @field_validator("budget")
    @classmethod
    def _budget_fields(cls, value: dict[str, Any]) -> dict[str, Any]:
        from helmdeck_dspy.budgets import BudgetFields

        return _known(value, BudgetFields, "budget fields")  # the values are checked against the model's row on load

    def applies_to(self, q: Case, rank: int = 0) -> bool:
        """Whether this row answers ``q``, the ``rank``-th question (from 0) of its category."""
        return ((self.categories is None or q.category in self.categories) and (self.limit is None or rank < self.limit)
                and (self.split is None or getattr(q, "split", None) == self.split))


class StudySpec(BaseModel):
    """A study (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1, description="Budget lookup id.")
    lm: str = Field(min_length=1, description="LM spec (local:NAME, llamacpp/..., a LiteLLM string, replay:, sim:).")
    data: tuple[str, ...] = Field(default=(), description="BFCL data folders, relative to the spec.")
    tasks: str | None = Field(default=None, description="Instead of BFCL data: a gold tasks JSONL file (relative "
                              "to the spec), each task a question over the whole of ``catalog``.")
    catalog: str | None = Field(default=None, description="The catalog file the gold tasks are planned over.")
    split: str | None = Field(default=None, description="Gold tasks: only this split (None: every task).")
    e2e: E2ESource | None = Field(default=None, description="Instead of questions: the end-to-end tasks.")
    multi_turn: MultiTurnSource | None = Field(default=None, description="Instead of questions: BFCL's multi_turn_base.")
    categories: tuple[str, ...] = Field(default=(), description="The categories asked (end-to-end tasks: the task "
                                        "types; empty: every type).")
    limit: int | None = Field(default=None, ge=1, description="Questions per category (the first N after ``start``; "
                              "None: all).")
    start: int = Field(default=0, ge=0, description="Questions of each category left out before the first one "
                       "asked (60: a test half after a dev half of 60).")
    temperature: float = 0.0
    seed: int = 7
    teacher: str | None = Field(default=None, description="Compile arms: the stronger LM that bootstraps demos, "
                                "proposes instructions and reflects (None: the task LM).")
    valset: int = Field(default=12, ge=0, description="Compile arms: the dev tasks the optimizers validate on (the "
                        "first N).")
    baseline: str = Field(default="plain", description="The config every other row is paired against.")
    timeout_s: float = Field(default=900.0, gt=0, le=3600, description="One call's time limit (generous: a loaded "
                             "machine slows a call down).")
    api_base: str | None = Field(default=None, description="The API base URL of an OpenAI-compatible endpoint.")
    budgets: str | None = Field(default=None, description="A budget table file (relative to the spec; None: the "
                                "bundled one).")
    context: int | None = Field(default=None, ge=256, description="A ``local:`` model's context window in tokens "
                                "(None: the runner's default, 16,384).")
    engine: Literal["llama-cpp-python", "llama-server"] | None = Field(
        default=None, description="The engine that serves a ``local:`` model, for every row (None: "
        "$HELMDECK_LOCAL_ENGINE, else llama-cpp-python).")
    block: int = Field(default=8, ge=1, description="Questions asked under one config before the next config "
                       "takes the same questions (a server's prompt cache keeps one config's stable prefix).")
    config: tuple[StudyConfig, ...] = Field(min_length=1)
    path: Path = Field(default=Path("."), exclude=True)

    @property
    def folder(self) -> Path:
        return self.path.parent

    @property
    def loops(self) -> bool:
        """Each row runs its cases in the loop, one checked result line per case ([e2e], [multi_turn])."""
        return self.e2e is not None or self.multi_turn is not None

    def answering(self, config: StudyConfig) -> StudyConfig:
        """The row whose recorded answers ``config`` scores: its ``answers_from`` row, else itself."""
        return next((c for c in self.config if c.name == config.answers_from), config)

    def trace_path(self, config: StudyConfig) -> Path:
        return self.folder / f"{self.answering(config).name}.jsonl"

    def baseline_of(self, config: StudyConfig) -> str:
        """The row ``config`` is paired against."""
        return config.paired_with or self.baseline

    def compile_root(self, config: StudyConfig) -> Path:
        """Where a compile arm's program, its run facts and its test scores go."""
        return self.folder / "programs" / config.name

    def program_choice(self, config: StudyConfig) -> str | None:
        """The program a config plans with, as the planner takes it (a program file resolved beside the
        spec; a compile arm's compiled program)."""
        if config.optimizer is not None:
            from helmdeck_dspy.program.store import model_program_path

            return str(model_program_path(self.model, config.variant, self.compile_root(config)).resolve())
        choice = config.program
        if choice is None or choice in PROGRAM_CHOICES or choice.startswith("tier:"):
            return choice
        return str((self.folder / choice).resolve())

    def catalog_of(self, config: StudyConfig) -> RoutingGuide | None:
        """The catalog file a config's answers were planned over, if not the questions' own (loaded once)."""
        own = self.answering(config).catalog
        return None if own is None else _catalog_file((self.folder / own).resolve())

    def budget_table(self) -> BudgetTable:
        """The budget table the spec's rows plan under."""
        from helmdeck_dspy.budgets import load_budget_table

        return load_budget_table(None if self.budgets is None else self.folder / self.budgets)

    def data_dirs(self) -> list[Path]:
        return [(self.folder / d).resolve() for d in self.data]

    @model_validator(mode="after")
    def _one_source(self) -> StudySpec:
        sources = bool(self.data) + bool(self.tasks) + (self.e2e is not None) + (self.multi_turn is not None)
        if sources != 1 or bool(self.tasks) != bool(self.catalog):
            raise ValueError("give BFCL data folders (data), gold tasks with their catalog (tasks and catalog), the "
                             "end-to-end tasks ([e2e]) or BFCL's multi-turn questions ([multi_turn])")
        if not self.loops and not self.categories:
            raise ValueError("categories: name at least one")
        if self.loops and (self.limit is not None or self.start or (self.multi_turn and self.categories)):
            raise ValueError("limit and start count questions (and [multi_turn] has one category): [e2e] and "
                             "[multi_turn] take split and only")
        return self


@functools.cache
def _catalog_file(path: Path) -> RoutingGuide:
    from helmdeck_dspy.catalog.models import load_catalog

    return load_catalog(path)


def load_study_spec(path: str | Path) -> StudySpec:
    """Read and validate a study spec.

    Raises:
        OldSpellingError: the file or a row is in a spelling taken out (:data:`OLD_SPELLINGS`).
        StudySpecError: the file does not parse, a field is wrong, names repeat, the baseline or a
            ``paired_with`` is not one of the configs, or a compile arm is not over gold tasks.
    """
    check_spec_name(path)
    data = parse_toml(read_text(path, StudySpecError), str(path), StudySpecError)
    _refuse_old_fields(data, str(path))
    try:
        spec = StudySpec.model_validate({**data, "path": Path(path)})
    except ValidationError as exc:
        raise StudySpecError(str(path), validation_message(exc, subject="spec", all_errors=True)) from None
    names = [c.name for c in spec.config]
    if len(set(names)) != len(names):
        raise StudySpecError(str(path), f"config names repeat: {names}")
    if spec.baseline not in names:
        raise StudySpecError(str(path), f"baseline {spec.baseline!r} is not a config; expected one of {names}")
    for c in spec.config:
        if c.budget:
            _check_budget_change(spec, c, str(path))
        source = spec.answering(c)
        if spec.loops and (c.answers_from or c.pool or c.catalog):
            raise StudySpecError(str(path), f"config {c.name}: every row runs its cases itself, over their own "
                                 "functions: answers_from, pool and catalog do not apply")
        if not spec.loops and c.split is not None:
            raise StudySpecError(str(path), f"config {c.name}: split picks a half of the end-to-end tasks ([e2e]) "
                                 "or of the multi-turn questions ([multi_turn])")
        fits = {"chat-bare": spec.multi_turn is not None, "fallback": spec.e2e is not None and not c.plain}.get(c.loop, True)
        if c.loop != "replan" and (not spec.loops or c.framework or not fits):
            raise StudySpecError(str(path), f"config {c.name}: loop = \"{c.loop}\" is for [e2e] or [multi_turn] (chat-bare: "
                                 "[multi_turn] only; fallback: [e2e], a planner row), no framework")
        plain_reread = source.plain and _model_alone_request(c.strategy)  # the model alone's answers, as the strategy reads them
        if c.answers_from is not None and (source is c or source.answers_from or (source.plain and not plain_reread)):
            raise StudySpecError(str(path), f"config {c.name}: answers_from {c.answers_from!r} is not a planner config "
                                 "with answers of its own (or the model alone's, for a strategy = \"plain\" row)")
        if c.catalog is not None and (not spec.tasks or not (spec.folder / c.catalog).is_file()):
            raise StudySpecError(str(path), f"config {c.name}: catalog {c.catalog!r} needs gold tasks and a file beside "
                                 "the spec")
        if c.paired_with is not None and c.paired_with not in names:
            raise StudySpecError(str(path), f"config {c.name}: paired_with {c.paired_with!r} is not a config; expected "
                                 f"one of {names}")
        if c.optimizer is not None:
            if c.program is not None or c.plain or c.answers_from is not None or not spec.tasks:
                raise StudySpecError(str(path), f"config {c.name}: an optimizer row compiles its own program from gold "
                                     "tasks: give it no program, plain or answers_from, and the spec tasks")
            continue
        program = spec.program_choice(c)
        if program != c.program and not Path(str(program)).is_file():
            raise StudySpecError(str(path), f"config {c.name}: program file {program} not found")
    return spec


def check_spec_name(path: str | Path) -> None:
    """Refuse a spec file under its old name, naming the new one.

    Raises:
        OldSpellingError: ``path`` is a ``levers.toml``.
    """
    name = Path(path).name
    if name in OLD_SPELLINGS:
        raise OldSpellingError(str(path), f"{name} is a study spec's old name; rename the file {OLD_SPELLINGS[name]}")


def _refuse_old_fields(data: dict[str, Any], path: str) -> None:
    """Refuse a row that sets ``constrained``, naming the strategy that says the same."""
    rows = data.get("config")
    for i, row in enumerate(rows if isinstance(rows, list) else [], 1):
        if isinstance(row, dict) and "constrained" in row:
            value = row["constrained"]
            old = f"constrained = {str(value).lower()}" if isinstance(value, bool) else "constrained"
            new = OLD_SPELLINGS.get(old, 'strategy = "schema" or "free"')
            raise OldSpellingError(path, f"config {row.get('name', i)}: {old} is the old spelling of the answer "
                                   f"strategy; write {new}")


def _model_alone_request(strategy: str | None) -> bool:
    """Whether ``strategy``'s request is the model alone's prompt (``AnswerStrategy.model_alone_request``)."""
    from helmdeck_dspy.program.strategies import STRATEGIES

    return strategy in STRATEGIES and STRATEGIES[strategy].model_alone_request


def _check_budget_change(spec: StudySpec, config: StudyConfig, path: str) -> None:
    """A config's budget changes applied to its model's row, as the run applies them."""
    try:
        spec.budget_table().changed_for(config.budget_model or spec.model, config.budget)
    except ValidationError as exc:
        raise StudySpecError(path, f"config {config.name}: budget: {validation_message(exc, subject='budget')}") from None
