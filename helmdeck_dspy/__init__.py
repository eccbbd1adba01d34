"""helmdeck-dspy: tier-aware planning for MCP tool catalogs, compiled with DSPy.

The public API, importable from the top level::

    from helmdeck_dspy import Planner, parse_completion, budget_for, run_eval, calibrate

Names load on first use (module ``__getattr__``), so ``import helmdeck_dspy`` stays cheap and the
CLI starts fast; type checkers read the same names from the imports under ``TYPE_CHECKING`` (the
package ships ``py.typed``). One name per job: ``run_eval`` evaluates trace sets (writing outputs
only when given ``out_dir``), ``load_traces`` / ``save_traces`` read and write trace sets.
``docs/architecture.md`` maps the modules behind them.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

# public name -> the module that defines it
_EXPORTS: dict[str, str] = {
    # plan
    "Planner": "helmdeck_dspy.planning.planner",
    "PlannerOptions": "helmdeck_dspy.planning.options",
    "PlanResult": "helmdeck_dspy.planning.result",
    "LoopResult": "helmdeck_dspy.planning.execution",
    "RetryPolicy": "helmdeck_dspy.planning.resilience.policy",
    "FallbackChain": "helmdeck_dspy.planning.resilience.policy",
    "HistoryStore": "helmdeck_dspy.planning.history",
    "make_lm": "helmdeck_dspy.engines.lm_spec",
    "parse_completion": "helmdeck_dspy.decoding.parsing",
    "ParseResult": "helmdeck_dspy.decoding.parsing",
    "Budget": "helmdeck_dspy.budgets",
    "BudgetTable": "helmdeck_dspy.budgets",
    "budget_for": "helmdeck_dspy.budgets",
    "load_budget_table": "helmdeck_dspy.budgets",
    "RoutingGuide": "helmdeck_dspy.catalog.models",
    "load_catalog": "helmdeck_dspy.catalog.models",
    "select_catalog": "helmdeck_dspy.catalog.select",
    # evaluate -> calibrate
    "TraceRecord": "helmdeck_dspy.traces.record",
    "load_traces": "helmdeck_dspy.traces.io",
    "save_traces": "helmdeck_dspy.traces.io",
    "PlanTask": "helmdeck_dspy.tasks",
    "load_tasks": "helmdeck_dspy.tasks",
    "run_eval": "helmdeck_dspy.evaluation.session",
    "EvalReport": "helmdeck_dspy.evaluation.report",
    "calibrate": "helmdeck_dspy.calibration.calibrate",
    "apply_calibration": "helmdeck_dspy.calibration.apply",
    # compile
    "compile_program": "helmdeck_dspy.compilation.compiler",
    "compile_programs": "helmdeck_dspy.compilation.runs",
    "CompileOptions": "helmdeck_dspy.compilation.request",
    "CompileRequest": "helmdeck_dspy.compilation.request",
    "OptimizerSettings": "helmdeck_dspy.compilation.settings",
    "estimate_calls": "helmdeck_dspy.compilation.estimate",
    "ProgramRef": "helmdeck_dspy.program.store",
    "resolve_program": "helmdeck_dspy.program.store",
    # benchmarks
    "run_bfcl": "helmdeck_dspy.bench.bfcl.flow",
    "run_study": "helmdeck_dspy.bench.study.flow",
    "load_study_spec": "helmdeck_dspy.bench.study.spec",
    "score_study": "helmdeck_dspy.bench.study.table",
    # errors
    "HelmdeckError": "helmdeck_dspy.errors",
    "InputError": "helmdeck_dspy.errors",
    "RunError": "helmdeck_dspy.errors",
    "DataFileError": "helmdeck_dspy.errors",
}


if TYPE_CHECKING:  # the same names, for type checkers (keep in step with _EXPORTS)
    from helmdeck_dspy.bench.bfcl.flow import run_bfcl as run_bfcl
    from helmdeck_dspy.bench.study.flow import run_study as run_study
    from helmdeck_dspy.bench.study.spec import load_study_spec as load_study_spec
    from helmdeck_dspy.bench.study.table import score_study as score_study
    from helmdeck_dspy.budgets import (
        Budget as Budget,
        BudgetTable as BudgetTable,
        budget_for as budget_for,
        load_budget_table as load_budget_table,
    )
    from helmdeck_dspy.calibration.apply import apply_calibration as apply_calibration
    from helmdeck_dspy.calibration.calibrate import calibrate as calibrate
    from helmdeck_dspy.catalog.models import RoutingGuide as RoutingGuide, load_catalog as load_catalog
    from helmdeck_dspy.catalog.select import select_catalog as select_catalog
    from helmdeck_dspy.compilation.compiler import compile_program as compile_program
    from helmdeck_dspy.compilation.estimate import estimate_calls as estimate_calls
    from helmdeck_dspy.compilation.request import (
        CompileOptions as CompileOptions,
        CompileRequest as CompileRequest,
    )
    from helmdeck_dspy.compilation.runs import compile_programs as compile_programs
    from helmdeck_dspy.compilation.settings import OptimizerSettings as OptimizerSettings
    from helmdeck_dspy.decoding.parsing import (
        ParseResult as ParseResult,
        parse_completion as parse_completion,
    )
    from helmdeck_dspy.engines.lm_spec import make_lm as make_lm
    from helmdeck_dspy.errors import (
        DataFileError as DataFileError,
        HelmdeckError as HelmdeckError,
        InputError as InputError,
        RunError as RunError,
    )
    from helmdeck_dspy.evaluation.report import EvalReport as EvalReport
    from helmdeck_dspy.evaluation.session import run_eval as run_eval
    from helmdeck_dspy.planning.execution import LoopResult as LoopResult
    from helmdeck_dspy.planning.history import HistoryStore as HistoryStore
    from helmdeck_dspy.planning.options import PlannerOptions as PlannerOptions
    from helmdeck_dspy.planning.planner import Planner as Planner
    from helmdeck_dspy.planning.resilience.policy import (
        FallbackChain as FallbackChain,
        RetryPolicy as RetryPolicy,
    )
    from helmdeck_dspy.planning.result import PlanResult as PlanResult
    from helmdeck_dspy.program.store import ProgramRef as ProgramRef, resolve_program as resolve_program
    from helmdeck_dspy.tasks import PlanTask as PlanTask, load_tasks as load_tasks
    from helmdeck_dspy.traces.io import load_traces as load_traces, save_traces as save_traces
    from helmdeck_dspy.traces.record import TraceRecord as TraceRecord

__version__: str
"""The installed distribution's version (``0+unknown`` when running from a tree that is not installed)."""

__all__ = sorted([*_EXPORTS, "__version__"])


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("helmdeck-dspy")
    except PackageNotFoundError:
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        globals()[name] = value = _version()
        return value
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'helmdeck_dspy' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
