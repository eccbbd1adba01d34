"""The package layout: no import cycles, true layers, small modules, a public API that resolves."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

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


def test_imports_follow_the_layer_table_of_the_architecture_doc():
    table = check_layout.parse_layer_table(check_layout.LAYERS_DOC.read_text())
    assert [name for name, _ in table.layers][:2] == ["vocabulary", "I/O"]
    assert table.rank["cli"] > table.rank["bench"] > table.rank["evaluation"] > table.rank["planning"]
    assert check_layout.check_doc_layers() == []
    # The arrows the issue found running back up would fail it again.
    graph = check_layout.import_graph()
    p = "helmdeck_dspy"
    for a, b in [("program.calls", "engines.base"), ("engines.base", "fitting.fit"), ("catalog.models", "program.calls"),
                 ("traces.io", "planning.planner"), ("io.atomic", "engines.lm_spec")]:
        broken = {**graph, f"{p}.{a}": graph[f"{p}.{a}"] | {f"{p}.{b}"}}
        assert any(f"{p}.{a} (" in m and f"imports {p}.{b} (" in m for m in check_layout.check_layers(broken, table)), (a, b)


FAKE_DOC = """# Architecture

## The layers

| layer | modules | what lives there |
|---|---|---|
| base | `errors.py`, `io/` | the bottom |
| middle | `planning/`, `traces/` | peers |
| top | `cli/` | the top |

| from | to | why |
|---|---|---|
| `traces.write` | `cli.hooks` | a reason |

## Next section

| layer | modules | what lives there |
|---|---|---|
| ignored | `ignored/` | outside the section |
"""


def test_layer_table_is_read_from_the_doc_section_bottom_first():
    table = check_layout.parse_layer_table(FAKE_DOC)
    assert table.layers == [("base", ["errors", "io"]), ("middle", ["planning", "traces"]), ("top", ["cli"])]
    assert table.allowed == [("traces.write", "cli.hooks")]
    with pytest.raises(ValueError, match="neither a top-level folder"):
        check_layout.parse_layer_table(FAKE_DOC.replace("`planning/`", "`planning/lm.py`"))
    with pytest.raises(ValueError, match="two layers"):
        check_layout.parse_layer_table(FAKE_DOC.replace("`cli/`", "`io/`"))


def test_a_lower_layer_importing_a_higher_one_fails_the_check():
    table = check_layout.parse_layer_table(FAKE_DOC)
    p = "helmdeck_dspy"
    good = {f"{p}.cli.app": {f"{p}.planning.planner", f"{p}.errors"}, f"{p}.planning.planner": {f"{p}.io.atomic"},
            f"{p}.io.atomic": {f"{p}.errors"}, f"{p}.errors": set(), f"{p}.traces.write": {f"{p}.cli.hooks"},
            f"{p}.cli.hooks": set()}
    assert check_layout.check_layers(good, table) == []  # downward, and the one allowed upward pair
    upward = {**good, f"{p}.io.atomic": {f"{p}.planning.planner"}}
    assert check_layout.check_layers(upward, table) == [
        f"upward import: {p}.io.atomic (base) imports {p}.planning.planner (middle)",
    ]
    not_allowed = {**good, f"{p}.traces.read": {f"{p}.cli.hooks"}}  # the allowed pair names traces.write only
    assert check_layout.check_layers(not_allowed, table) == [
        f"upward import: {p}.traces.read (middle) imports {p}.cli.hooks (top)",
    ]
    peers = {**good, f"{p}.planning.planner": {f"{p}.traces.read"}, f"{p}.traces.read": {f"{p}.planning.result"},
             f"{p}.planning.result": set()}
    assert check_layout.check_layers(peers, table) == ["folders import each other: planning <-> traces"]
    stray = {**good, f"{p}.extra": set()}
    assert check_layout.check_layers(stray, table) == [f"{p}.extra is in no layer of the table"]


def test_public_api_names_resolve_lazily():
    for name in helmdeck_dspy.__all__:
        assert getattr(helmdeck_dspy, name) is not None, name
    code = "import sys, helmdeck_dspy; print(sorted(m for m in ('dspy', 'litellm', 'mlflow') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
