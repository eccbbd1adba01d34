"""Compiled programs on disk: where each (tier, variant) program lives and how it is loaded.

Loading checks the file's shape first, so a corrupt or foreign file is a
:class:`~helmdeck_dspy.errors.CompiledProgramError` naming the file and the field, not an error
from deep inside DSPy.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from helmdeck_dspy.errors import CompiledProgramError
from helmdeck_dspy.io.datafiles import read_json
from helmdeck_dspy.io.resources import compiled_dir


def program_path(tier: str, variant: str, root: Path | None = None) -> Path:
    """Where the compiled program for (tier, variant) lives."""
    return (root or compiled_dir()) / f"tier_{tier}" / f"{variant}.json"


def load_program(tier: str, variant: str, root: Path | None = None) -> Any:
    """The compiled module for (tier, variant), or the uncompiled one (with a warning) if none exists."""
    from helmdeck_dspy.program.modules import MODULES

    module = MODULES[variant]()
    path = program_path(tier, variant, root)
    if path.is_file():
        load_compiled_state(module, path)
    else:
        warnings.warn(
            f"no compiled program for tier {tier} {variant} ({path}); using the uncompiled module",
            stacklevel=2,
        )
    return module


def load_compiled_state(module: Any, path: str | Path) -> Any:
    """Load a compiled program file into ``module``, or raise :class:`CompiledProgramError`
    naming the file and what is wrong (not JSON, not a program state, a field of the wrong shape).
    """
    p = Path(path)
    state = read_json(p, CompiledProgramError)
    if not isinstance(state, dict):
        raise CompiledProgramError(str(p), f"expected a JSON object (a saved program state), got {type(state).__name__}")
    expected = {name for name, _ in module.named_parameters()}
    missing = sorted(expected - set(state))
    if missing:
        raise CompiledProgramError(str(p), f"missing predictor state {missing}; expected keys {sorted(expected)}")
    for name in sorted(expected):
        pred = state[name]
        if not isinstance(pred, dict):
            raise CompiledProgramError(str(p), f"{name}: expected an object, got {type(pred).__name__}")
        for key in ("demos", "traces", "train"):
            if key in pred and not isinstance(pred[key], list):
                raise CompiledProgramError(str(p), f"{name}.{key}: expected a list, got {type(pred[key]).__name__}")
        for i, demo in enumerate(pred.get("demos", [])):
            if not isinstance(demo, dict):
                raise CompiledProgramError(str(p), f"{name}.demos[{i}]: expected an object, got {type(demo).__name__}")
        sig = pred.get("signature")
        if sig is not None and (not isinstance(sig, dict) or not isinstance(sig.get("fields", []), list)):
            raise CompiledProgramError(str(p), f"{name}.signature: expected an object with a 'fields' list")
    if not isinstance(state.get("metadata", {}), dict):
        raise CompiledProgramError(str(p), "metadata: expected an object")
    state.setdefault("metadata", {}).setdefault("dependency_versions", {})
    try:
        module.load_state(state)
    except Exception as exc:  # noqa: BLE001  (dspy raises assorted types for a state of the wrong shape)
        raise CompiledProgramError(str(p), f"not a program state for this module ({type(exc).__name__}: {exc})") from None
    return module
