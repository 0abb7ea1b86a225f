"""The shape of the code: no function longer than 80 lines, no import cycle between modules.

The layers themselves are import-linter's contracts (``[tool.importlinter]`` in pyproject.toml,
``lint-imports``); this checks what a contract does not: that no two modules of the package
import each other, directly or around a circle, also through imports inside functions (which run
too). Imports under ``TYPE_CHECKING`` never run and are left out here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import grimp

PACKAGE = Path(__file__).resolve().parents[2] / "sessioncluster"
MAX_FUNCTION_LINES = 80


def long_functions(root: Path, limit: int) -> list[str]:
    """``path:line name (n lines)`` of every function or method in ``root`` longer than
    ``limit`` lines (from its ``def`` to its last line, nested functions included)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > limit:
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} "
                                 f"({lines} lines)")
    return found


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, with
    an explicit stack: the graph is deep enough for Python's recursion limit to matter)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    cycles: list[list[str]] = []
    for start in sorted(graph.modules):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            module, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.find_modules_directly_imported_by(nxt)))))
                    break
                if nxt in on_stack:
                    low[module] = min(low[module], index[nxt])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[module])
                if low[module] == index[module]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == module:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))
    return cycles


def describe(graph: grimp.ImportGraph, cycle: list[str]) -> str:
    """A cycle's imports among its members, with their lines."""
    members = set(cycle)
    lines = [f"cycle of {len(cycle)} modules:"]
    for importer in cycle:
        for imported in sorted(graph.find_modules_directly_imported_by(importer) & members):
            for detail in graph.get_import_details(importer=importer, imported=imported):
                lines.append(f"  {importer}:{detail['line_number']} {detail['line_contents']}")
    return "\n".join(lines)


def test_no_function_is_longer_than_80_lines() -> None:
    assert long_functions(PACKAGE, MAX_FUNCTION_LINES) == []


def test_the_length_check_finds_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(80))
    (tmp_path / "m.py").write_text(f"def short():\n    pass\n\n\ndef long():\n{body}\n")
    assert long_functions(tmp_path, MAX_FUNCTION_LINES) == [f"{tmp_path.name}/m.py:5 long (81 lines)"]


def test_no_import_cycle_between_modules() -> None:
    graph = grimp.build_graph("sessioncluster", cache_dir=None, exclude_type_checking_imports=True)
    cycles = import_cycles(graph)
    assert not cycles, "\n".join(describe(graph, c) for c in cycles)


def test_the_cycle_check_finds_a_cycle_also_through_an_import_in_a_function() -> None:
    graph = grimp.ImportGraph()
    for module in ("p", "p.a", "p.b", "p.c", "p.d"):
        graph.add_module(module)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.c")
    graph.add_import(importer="p.c", imported="p.a")  # e.g. ``from .a import x`` in a function
    graph.add_import(importer="p.d", imported="p.a")
    assert import_cycles(graph) == [["p.a", "p.b", "p.c"]]
