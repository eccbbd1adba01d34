"""helmdeck-dspy: tier-aware planning for MCP tool catalogs, compiled with DSPy.

The public API, importable from the top level::

    from helmdeck_dspy import Planner, parse_completion, budget_for, evaluate, calibrate

Names load on first use (module ``__getattr__``), so ``import helmdeck_dspy`` stays cheap and the
CLI starts fast; ``docs/architecture.md`` maps the modules behind them.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

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
    "read_traces": "helmdeck_dspy.traces.io",
    "PlanTask": "helmdeck_dspy.tasks",
    "load_tasks": "helmdeck_dspy.tasks",
    "evaluate": "helmdeck_dspy.evaluation.runner",
    "run_eval": "helmdeck_dspy.evaluation.session",
    "EvalReport": "helmdeck_dspy.evaluation.report",
    "calibrate": "helmdeck_dspy.calibration.calibrate",
    "apply_calibration": "helmdeck_dspy.calibration.apply",
    # compile
    "compile_program": "helmdeck_dspy.compilation.compiler",
    "compile_programs": "helmdeck_dspy.compilation.runs",
    "OptimizerSettings": "helmdeck_dspy.compilation.settings",
    "estimate_calls": "helmdeck_dspy.compilation.estimate",
    "ProgramRef": "helmdeck_dspy.program.store",
    "resolve_program": "helmdeck_dspy.program.store",
    # benchmarks
    "run_bfcl": "helmdeck_dspy.bench.bfcl.flow",
    "run_lever_spec": "helmdeck_dspy.bench.bfcl.lever_flow",
    "run_heldout": "helmdeck_dspy.bench.heldout.flow",
    "load_spec": "helmdeck_dspy.bench.heldout.spec",
    "score_spec": "helmdeck_dspy.bench.heldout.table",
    # errors
    "HelmdeckError": "helmdeck_dspy.errors",
    "InputError": "helmdeck_dspy.errors",
    "RunError": "helmdeck_dspy.errors",
    "DataFileError": "helmdeck_dspy.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'helmdeck_dspy' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
