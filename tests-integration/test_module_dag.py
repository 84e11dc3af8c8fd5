"""Every package's modules form a DAG (issue 14 §6, STYLE "modules form a DAG inside a package").

The graph is read from each module's own import statements, wherever they are: module level,
inside functions and under ``if TYPE_CHECKING:`` (a type-only cycle still ties the modules
together). ``from pkg import name`` points at the submodule ``pkg.name`` when there is one,
else at ``pkg`` itself (its ``__init__``); importing a submodule is not counted as importing the
package that contains it. A strongly connected component of two or more modules is a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def packages() -> list[Path]:
    found: list[Path] = []
    for source in sorted(ROOT.glob("packages/actoviq-*/src/actoviq")):
        for init in sorted(source.rglob("__init__.py")):
            package = init.parent
            parent_init = package.parent / "__init__.py"
            if package.parent == source or not parent_init.exists():
                found.append(package)  # a top package: actoviq.<name> or actoviq.storage.sqlite
    return found


def module_names(package: Path) -> dict[str, Path]:
    base = package
    while (base.parent / "__init__.py").exists():
        base = base.parent
    namespace_root = base.parent.parent  # the directory that holds ``actoviq``
    names: dict[str, Path] = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(namespace_root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    source = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    source = node.module or ""
                for alias in node.names:
                    sub = f"{source}.{alias.name}"
                    targets.append(sub if sub in modules else source)
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of size > 1 (iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            if children:
                child = children.pop()
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, sorted(graph[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


@pytest.mark.parametrize("package", packages(), ids=lambda path: path.name)
def test_the_modules_of_each_package_form_a_dag(package: Path) -> None:
    graph = import_graph(module_names(package))
    assert len(graph) > 1
    assert cycles(graph) == []


def test_the_check_finds_a_cycle_through_a_type_checking_import(tmp_path: Path) -> None:
    package = tmp_path / "actoviq" / "demo"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from actoviq.demo.a import A\n")
    (package / "a.py").write_text("from actoviq.demo.b import B\nclass A: ...\n")
    (package / "b.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from actoviq.demo import c\n"
        "class B: ...\n"
    )
    (package / "c.py").write_text("def f() -> None:\n    from .a import A\n")
    (package / "d.py").write_text("from actoviq.demo import a\n")  # a DAG edge, not a cycle
    found = cycles(import_graph(module_names(package)))
    assert found == [["actoviq.demo.a", "actoviq.demo.b", "actoviq.demo.c"]]
