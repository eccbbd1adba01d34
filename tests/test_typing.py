"""The public API is typed: ``py.typed`` ships, the lazy names are imported for type checkers under
``TYPE_CHECKING``, and mypy resolves ``from helmdeck_dspy import Planner`` to the class, not ``Any``."""

from __future__ import annotations

import ast
import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest

import helmdeck_dspy

ROOT = Path(__file__).resolve().parents[1]
INIT = ROOT / "helmdeck_dspy" / "__init__.py"

USER_CODE = '''\
from helmdeck_dspy import Planner, __version__, load_traces, run_eval
from helmdeck_dspy.planning.planner import Planner as PlannerClass

reveal_type(Planner)
reveal_type(__version__)
reveal_type(run_eval)
reveal_type(load_traces)
planner_class: type[PlannerClass] = Planner
not_an_int: int = Planner  # an error only when Planner is the class: Any would pass
'''


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


def test_mypy_resolves_the_public_names_to_their_types(tmp_path):
    pytest.importorskip("mypy", reason="mypy is in the dev extra: pip install -e '.[dev]'")
    user = tmp_path / "user_code.py"
    user.write_text(USER_CODE)
    env = {**os.environ, "MYPYPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "mypy", "--follow-imports=silent", "--ignore-missing-imports", "--no-error-summary",
           "--hide-error-context", "--cache-dir", str(ROOT / ".mypy_cache"), user.name]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600).stdout
    lines = [line.split(": ", 1)[1] for line in out.splitlines() if line.startswith(f"{user.name}:")]
    revealed = [line for line in lines if line.startswith("note: Revealed type is")]
    assert len(revealed) == 4, out
    assert revealed[0].endswith('-> helmdeck_dspy.planning.planner.Planner"'), revealed[0]
    assert revealed[1] == 'note: Revealed type is "str"', revealed[1]
    assert "-> helmdeck_dspy.evaluation.session.EvalRun" in revealed[2], revealed[2]
    assert "-> typing.Iterator[helmdeck_dspy.traces.record.TraceRecord]" in revealed[3], revealed[3]
    errors = [line for line in lines if line.startswith("error:")]
    assert errors == ['error: Incompatible types in assignment (expression has type "type[Planner]", '
                      'variable has type "int")  [assignment]'], out
