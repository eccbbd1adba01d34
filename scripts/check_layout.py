"""Check the package layout: import cycles between modules, and module sizes.

Every ``import`` statement counts, wherever it stands (module level, inside a function, under
``TYPE_CHECKING``): an import moved into a function still ties two modules together. An edge goes
to the module an import names (``from pkg import mod`` names ``pkg.mod`` when that is a module,
else ``pkg``); the implicit import of parent packages is not counted.

Usage: ``python scripts/check_layout.py [--max-lines 400]``; exit 1 when a cycle or an oversized
module is found.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "helmdeck_dspy"
# Directories mapped into the package by pyproject's package-dir.
MAPPED = {f"{PACKAGE}.signatures": ROOT / "signatures"}


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


def check(max_lines: int = 400) -> tuple[list[list[str]], list[tuple[str, int]]]:
    """(import cycles, modules longer than ``max_lines``)."""
    modules = module_files()
    graph = {name: imports_of(name, path, modules) for name, path in modules.items()}
    sizes = {name: len(path.read_text().splitlines()) for name, path in modules.items()}
    too_long = sorted((n, s) for n, s in sizes.items() if s > max_lines)
    return find_cycles(graph), too_long


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-lines", type=int, default=400)
    args = parser.parse_args()
    cycles, too_long = check(args.max_lines)
    n_modules = len(module_files())
    for cycle in cycles:
        print("import cycle: " + " <-> ".join(cycle))
    for name, size in too_long:
        print(f"over {args.max_lines} lines: {name} ({size})")
    print(f"{n_modules} modules, {len(cycles)} import cycles, {len(too_long)} over {args.max_lines} lines")
    return 1 if cycles or too_long else 0


if __name__ == "__main__":
    sys.exit(main())
