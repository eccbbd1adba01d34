"""The public API is typed: ``py.typed`` ships and the lazy names are imported for type checkers
under ``TYPE_CHECKING``. That mypy resolves ``from helmdeck_dspy import Planner`` in a user's code
to the class, not ``Any``, is checked by ``scripts/type_ratchet.py`` (``make test`` runs it beside
the tests), in the same mypy run that checks the package; its per-module comparison and its kept
counts are checked here."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import sys
from collections import Counter
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


def _ratchet():
    sys.path.insert(0, str(ROOT / "scripts"))
    import type_ratchet

    return type_ratchet


def test_the_ratchet_holds_each_module_not_only_the_total():
    ratchet = _ratchet()
    kept = ratchet.counts(["a.py:1: error: x", "a.py:2: error: y", "b.py:3: error: z"], Counter({"a.py": 1}), 0)
    assert ratchet.compare(kept, kept) == ([], [])
    # b fixed, a one worse: the total fell, yet a rose
    risen, fell = ratchet.compare(kept, ratchet.counts(["a.py:1: error: x"] * 3, Counter({"a.py": 1}), 0))
    assert risen == ["errors in a.py: 3 (kept 2)"]
    assert fell == ["errors in b.py: 0 (kept 1)"]
    # a new module may not come in with an error or an ignore comment, even while the totals fall
    now = ratchet.counts(["a.py:1: error: x", "new.py:1: error: w"], Counter({"new.py": 1}), 0)
    risen, fell = ratchet.compare(kept, now)
    assert risen == ["errors in new.py: 1 (kept 0, a module not kept)",
                     "type_ignores in new.py: 1 (kept 0, a module not kept)"]
    assert "errors 2 (kept 3)" in fell


def test_the_kept_counts_add_up_to_their_totals():
    kept = json.loads((ROOT / "scripts" / "type_ratchet.json").read_text())
    assert kept["errors"] == sum(kept["errors_by_module"].values())
    assert kept["type_ignores"] == sum(kept["type_ignores_by_module"].values())
    assert all(n > 0 for n in [*kept["errors_by_module"].values(), *kept["type_ignores_by_module"].values()])
