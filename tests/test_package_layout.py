"""The layout rules of docs/design.md, checked on the source: no module over 400 lines, and no import circle between
modules or between the packages under ``host/`` (imports under ``if TYPE_CHECKING:`` do not run, so they do not count).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("host", "subagent_host_cli")
MAX_MODULE_LINES = 400


def _modules() -> dict[str, Path]:
    """Every module of the shipped packages, by dotted name (a package by its own name)."""
    modules: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(body: list[ast.stmt], package: str) -> Iterator[tuple[str, str | None]]:
    """``(module, name)`` for every import that runs when the module is imported (not under TYPE_CHECKING)."""
    for node in body:
        if isinstance(node, ast.If):
            if not _is_type_checking(node):
                yield from _imports(node.body, package)
                yield from _imports(node.orelse, package)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(handler.body for handler in node.handlers)):
                yield from _imports(block, package)
        elif isinstance(node, ast.Import):
            yield from ((alias.name, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            yield from ((base, alias.name) for alias in node.names)


def _graph(modules: Mapping[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for module, imported in _imports(ast.parse(path.read_text(encoding="utf-8")).body, package):
            if imported is not None and f"{module}.{imported}" in modules:
                graph[name].add(f"{module}.{imported}")
            elif module in modules:
                graph[name].add(module)
    return graph


def _circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            advanced = False
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, set())))))
                    advanced = True
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                part: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    part.append(member)
                    if member == node:
                        break
                if len(part) > 1:
                    circles.append(sorted(part))
    return circles


def _package_of(module: str) -> str:
    """``host.<package>`` for a module inside a package under ``host/``, else the module itself."""
    parts = module.split(".")
    if parts[0] == "host" and len(parts) > 1 and (REPO_ROOT / "host" / parts[1]).is_dir():
        return ".".join(parts[:2])
    return module


def test_no_module_is_over_400_lines() -> None:
    too_long = {
        name: count
        for name, path in _modules().items()
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert too_long == {}


def test_no_module_imports_itself_through_others() -> None:
    graph = _graph(_modules())
    assert "host.sessions._store" in graph["host.sessions._table"]  # the graph sees the imports
    assert _circles(graph) == []


def test_no_package_under_host_imports_itself_through_others() -> None:
    packages: dict[str, set[str]] = {}
    for module, targets in _graph(_modules()).items():
        packages.setdefault(_package_of(module), set()).update(
            _package_of(target) for target in targets if _package_of(target) != _package_of(module)
        )
    assert _circles(packages) == []


def test_the_checks_see_a_circle() -> None:
    """The cycle finder itself: a two-module and a three-module circle are found, a chain is not."""
    assert _circles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
