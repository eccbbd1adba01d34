"""The public API is typed: ``py.typed`` ships and the lazy names are imported for type checkers
under ``TYPE_CHECKING``. That mypy resolves ``from helmdeck_dspy import Planner`` in a user's code
to the class, not ``Any``, is checked by ``scripts/type_ratchet.py`` (``make test`` runs it beside
the tests), in the same mypy run that checks the package."""

from __future__ import annotations

import ast
import importlib.metadata
from pathlib import Path

import pytest

import helmdeck_dspy

ROOT = Path(__file__).resolve().parents[1]
INIT = ROOT / "helmdeck_dspy" / "__init__.py"



def _type_checking_names() -> dict[str, str]:
    """The names imported under ``if TYPE_CHECKING:`` in the package's ``__init__``, by module."""
    found: dict[str, str] = {}
    for node in ast.parse(INIT.read_text()).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom), ast.dump(imp)
                for alias in imp.names:
                    assert alias.asname == alias.name, f"{alias.name}: re-export as itself (X as X)"
                    found[alias.name] = imp.module or ""
    return found


def test_type_checking_imports_are_the_lazy_exports():
    assert _type_checking_names() == helmdeck_dspy._EXPORTS
    assert set(helmdeck_dspy.__all__) == {*helmdeck_dspy._EXPORTS, "__version__"}


def test_py_typed_ships_and_version_comes_from_the_distribution(monkeypatch):
    assert (ROOT / "helmdeck_dspy" / "py.typed").is_file()
    assert helmdeck_dspy.__version__ == importlib.metadata.version("helmdeck-dspy")

    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert helmdeck_dspy._version() == "0+unknown"


def test_one_public_name_per_job():
    # evaluate -> run_eval; the JSONL plumbing (read/write_jsonl_traces) is not public.
    for gone in ("evaluate", "read_traces", "read_jsonl_traces", "write_traces", "write_jsonl_traces"):
        assert gone not in helmdeck_dspy.__all__
        with pytest.raises(AttributeError):
            getattr(helmdeck_dspy, gone)
    assert {"run_eval", "load_traces", "save_traces"} <= set(helmdeck_dspy.__all__)
