"""Check the package layout: import cycles between modules, the layer table, and module sizes.

The layer table is the one in ``docs/architecture.md`` (section "The layers"), read as data: each
row is a layer, listed bottom to top, and names its top-level folders (``io/``) and modules
(``budgets.py``; ``__init__.py`` is the package itself). Every module of the package must sit in a
layer. A module may import modules of its own layer and of the layers below; an import of a
higher layer fails unless the table of allowed upward imports under it names the pair (importing
module, imported module, each a dotted prefix under ``helmdeck_dspy``). Two folders of one layer
that import each other fail as well (a cycle between folders), allowed pairs aside.

Every ``import`` statement counts, wherever it stands (module level, inside a function, under
``TYPE_CHECKING``): an import moved into a function still ties two modules together. An edge goes
to the module an import names (``from pkg import mod`` names ``pkg.mod`` when that is a module,
else ``pkg``); the implicit import of parent packages is not counted.

Usage: ``python scripts/check_layout.py [--max-lines 400]``; exit 1 when a cycle, an upward import
or an oversized module is found.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "helmdeck_dspy"
# Directories mapped into the package by pyproject's package-dir.
MAPPED = {f"{PACKAGE}.signatures": ROOT / "signatures"}
LAYERS_DOC = ROOT / "docs" / "architecture.md"
LAYERS_SECTION = "## The layers"


def module_files() -> dict[str, Path]:
    """Every module of the package, by dotted name."""
    found: dict[str, Path] = {}
    roots = {PACKAGE: ROOT / PACKAGE, **MAPPED}
    for prefix, base in roots.items():
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(base).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            found[".".join([prefix, *parts])] = path
    return found


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package modules ``name`` imports anywhere in its body."""
    is_package = path.name == "__init__.py"
    here = name if is_package else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")
                base = base[: len(base) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            targets = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in modules else origin for a in node.names]
        else:
            continue
        out.update(t for t in targets if t in modules and t != name)
    return out


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles



class LayerTable:
    """The layers of ``docs/architecture.md``, bottom first, and the allowed upward imports."""

    def __init__(self, layers: list[tuple[str, list[str]]], allowed: list[tuple[str, str]]) -> None:
        self.layers = layers
        self.allowed = allowed
        self.rank: dict[str, int] = {}
        for i, (name, units) in enumerate(layers):
            for unit in units:
                if unit in self.rank:
                    raise ValueError(f"{unit or '__init__.py'} is in two layers: {layers[self.rank[unit]][0]} and {name}")
                self.rank[unit] = i

    def is_allowed(self, importer: str, imported: str) -> bool:
        return any(_under(importer, a) and _under(imported, b) for a, b in self.allowed)


def _under(module: str, prefix: str) -> bool:
    full = f"{PACKAGE}.{prefix}"
    return module == full or module.startswith(full + ".")


def unit_of(module: str) -> str:
    """The top-level folder or module a module belongs to ("" for the package itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _unit(token: str) -> str:
    if token == "__init__.py":
        return ""
    if token.endswith("/") and "/" not in token[:-1]:
        return token[:-1]
    if token.endswith(".py") and "/" not in token:
        return token[:-3]
    raise ValueError(f"layer table: {token!r} is neither a top-level folder (io/) nor a top-level module (domain.py)")


def parse_layer_table(text: str) -> LayerTable:
    """Read the layer table and the allowed upward imports from the "The layers" section."""
    if LAYERS_SECTION not in text:
        raise ValueError(f"no {LAYERS_SECTION!r} section")
    section = text.split(LAYERS_SECTION, 1)[1].split("\n## ", 1)[0]
    layers: list[tuple[str, list[str]]] = []
    allowed: list[tuple[str, str]] = []
    header: list[str] = []
    for line in section.splitlines():
        if not line.startswith("|"):
            header = []
            continue
        cells = _cells(line)
        if not header:
            header = cells
            continue
        if set("".join(cells)) <= set("-: "):
            continue
        if header[:2] == ["layer", "modules"]:
            layers.append((cells[0], [_unit(t) for t in re.findall(r"`([^`]+)`", cells[1])]))
        elif header[:2] == ["from", "to"]:
            (a,), (b,) = re.findall(r"`([^`]+)`", cells[0]), re.findall(r"`([^`]+)`", cells[1])
            allowed.append((a, b))
    if not layers:
        raise ValueError(f"no layer table (| layer | modules | ...) in {LAYERS_SECTION!r}")
    return LayerTable(layers, allowed)


def check_layers(graph: dict[str, set[str]], table: LayerTable) -> list[str]:
    """Modules in no layer, imports of a higher layer and cycles between folders, as messages."""
    problems = [f"{m} is in no layer of the table" for m in sorted(graph) if unit_of(m) not in table.rank]
    folders: dict[str, set[str]] = {unit: set() for unit in table.rank}
    for a in sorted(graph):
        ua = unit_of(a)
        for b in sorted(graph[a]):
            ub = unit_of(b)
            if ua == ub or ua not in table.rank or ub not in table.rank or table.is_allowed(a, b):
                continue
            if table.rank[ub] > table.rank[ua]:
                low, high = table.layers[table.rank[ua]][0], table.layers[table.rank[ub]][0]
                problems.append(f"upward import: {a} ({low}) imports {b} ({high})")
            else:
                folders[ua].add(ub)
    for cycle in find_cycles(folders):  # with upward imports reported above, only peers can close one
        problems.append("folders import each other: " + " <-> ".join(u or "__init__.py" for u in cycle))
    return problems


def import_graph() -> dict[str, set[str]]:
    """Every module of the package and the package modules it imports."""
    modules = module_files()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def check(max_lines: int = 400) -> tuple[list[list[str]], list[tuple[str, int]]]:
    """(import cycles, modules longer than ``max_lines``)."""
    sizes = {name: len(path.read_text().splitlines()) for name, path in module_files().items()}
    too_long = sorted((n, s) for n, s in sizes.items() if s > max_lines)
    return find_cycles(import_graph()), too_long


def check_doc_layers() -> list[str]:
    """The package's imports against the layer table of ``docs/architecture.md``."""
    return check_layers(import_graph(), parse_layer_table(LAYERS_DOC.read_text()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-lines", type=int, default=400)
    args = parser.parse_args()
    cycles, too_long = check(args.max_lines)
    layer_problems = check_doc_layers()
    n_modules = len(module_files())
    for cycle in cycles:
        print("import cycle: " + " <-> ".join(cycle))
    for problem in layer_problems:
        print(problem)
    for name, size in too_long:
        print(f"over {args.max_lines} lines: {name} ({size})")
    print(f"{n_modules} modules, {len(cycles)} import cycles, {len(layer_problems)} layer problems, "
          f"{len(too_long)} over {args.max_lines} lines")
    return 1 if cycles or layer_problems or too_long else 0


if __name__ == "__main__":
    sys.exit(main())
