"""The package layout: no import cycles, small modules, a public API that resolves."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import helmdeck_dspy

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import check_layout  # noqa: E402


def test_no_import_cycles_and_no_module_over_400_lines():
    cycles, too_long = check_layout.check(max_lines=400)
    assert cycles == []
    assert too_long == []


def test_cycle_finder_sees_function_local_imports(tmp_path):
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert check_layout.find_cycles(graph) == [["a", "b", "c"]]
    assert check_layout.find_cycles({"a": {"b"}, "b": set()}) == []
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from pkg import other\n")
    assert check_layout.imports_of("pkg.m", module, {"pkg.m": module, "pkg.other": module}) == {"pkg.other"}


def test_public_api_names_resolve_lazily():
    for name in helmdeck_dspy.__all__:
        assert getattr(helmdeck_dspy, name) is not None, name
    code = "import sys, helmdeck_dspy; print(sorted(m for m in ('dspy', 'litellm', 'mlflow') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
