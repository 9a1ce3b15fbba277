"""The checks wing's layout, read from the code's own imports (ast, nothing is imported).

``lumikit.checks`` is the learner's side: what a check needs in a learner's kernel. ``lumikit.checks.instructor`` is
what only the instructor runs (grading, verify, the class view, the generator). ``lumikit.checks.cli`` is the
command-line edge over both. The rules: no import circle among the checks' modules; the learner's side never reaches
the instructor's; and the grading modules load, at import time, nothing that unpickles, ``torch.load``s or ``eval``s.
"""
from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

LUMIKIT = Path(__file__).resolve().parents[2] / "lumikit"
CHECKS = "lumikit.checks"
INSTRUCTOR = "lumikit.checks.instructor"
EDGE = "lumikit.checks.cli"
GRADING = tuple(f"{INSTRUCTOR}.{name}" for name in ("grading", "regrade_guard", "rebuilt", "copies", "solution_runs"))
#: Calls that run or unpickle what a file holds.
_RUNS_DATA = {("pickle", "load"), ("pickle", "loads"), ("torch", "load"), ("pd", "read_pickle"),
              ("pandas", "read_pickle"), ("marshal", "loads"), ("dill", "load")}
_RUNS_CODE = {"eval", "exec"}
_PICKLERS = {"pickle", "_pickle", "dill", "marshal", "shelve", "cloudpickle", "joblib"}


@dataclass(frozen=True)
class Import:
    """One import in a module: the lumikit module it names, and whether it runs only when a function is called."""

    target: str
    lazy: bool


def module_name(path: Path, root: Path = LUMIKIT) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def read_tree(root: Path = LUMIKIT) -> dict[str, ast.Module]:
    """Module name -> its parsed source, for every ``.py`` under ``root``."""
    return {module_name(p, root): ast.parse(p.read_text(encoding="utf-8"), str(p)) for p in sorted(root.rglob("*.py"))}


def _package(name: str, tree: dict[str, ast.Module], root: Path = LUMIKIT) -> str:
    is_package = (root.parent / Path(*name.split(".")) / "__init__.py").is_file()
    return name if is_package else name.rpartition(".")[0]


def imports_of(name: str, tree: dict[str, ast.Module], root: Path = LUMIKIT) -> list[Import]:
    """The modules of ``tree`` that ``name`` imports (relative imports resolved), each marked lazy or not."""
    found: list[Import] = []

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend(Import(_known(a.name, tree), inner) for a in child.names if _known(a.name, tree))
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    package = _package(name, tree, root).split(".")
                    package = package[: len(package) - (child.level - 1)]
                    base = ".".join(package + ([child.module] if child.module else []))
                for alias in child.names:
                    target = f"{base}.{alias.name}" if f"{base}.{alias.name}" in tree else _known(base, tree)
                    if target:
                        found.append(Import(target, inner))
            visit(child, inner)

    visit(tree[name], False)
    return found


def _known(dotted: str, tree: dict[str, ast.Module]) -> str | None:
    """The longest prefix of ``dotted`` that is a module of the tree (``import a.b.c`` runs a.b.c)."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in tree:
            return ".".join(parts[:end])
    return None


def graph(tree: dict[str, ast.Module], *, lazy: bool = True) -> dict[str, set[str]]:
    """Module -> the modules it imports (only those at import time when ``lazy`` is False), itself left out."""
    return {name: {i.target for i in imports_of(name, tree) if (lazy or not i.lazy) and i.target != name}
            for name in tree}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every group of modules that import each other in a loop (Tarjan's strongly connected components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return out


def reached(start: Iterable[str], edges: dict[str, set[str]], *, with_packages: bool = False) -> set[str]:
    """Every module that importing ``start`` may run, following ``edges`` (and, with ``with_packages``, the
    ``__init__`` of each module's packages, which Python runs first)."""
    seen: set[str] = set()
    pending = list(start)
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        pending.extend(edges.get(name, ()))
        if with_packages:
            parts = name.split(".")
            pending.extend(".".join(parts[:end]) for end in range(1, len(parts)))
    return seen


def runs_data_or_code(module: ast.Module) -> list[str]:
    """What in a module's source unpickles, ``torch.load``s or evaluates code: "import pickle", "eval(...)", ..."""
    found = []
    for node in ast.walk(module):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name.split(".")[0] in _PICKLERS]
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] in _PICKLERS:
            found.append(f"from {node.module} import ...")
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in _RUNS_CODE:
                found.append(f"{func.id}(...)")
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                    and (func.value.id, func.attr) in _RUNS_DATA:
                found.append(f"{func.value.id}.{func.attr}(...)")
    return found


def crossings(tree: dict[str, ast.Module]) -> dict[str, list[str]]:
    """Learner-side module -> the instructor-side modules it reaches (lazily too), for those that reach any."""
    edges = graph(tree)
    learner = [n for n in tree if (n == CHECKS or n.startswith(CHECKS + ".")) and not n.startswith(INSTRUCTOR)
               and n != EDGE]
    found = {n: sorted(t for t in reached([n], edges) if t.startswith(INSTRUCTOR)) for n in learner}
    return {n: targets for n, targets in found.items() if targets}


@pytest.fixture(scope="module")
def tree() -> dict[str, ast.Module]:
    return read_tree()


def test_the_sides_are_where_the_layout_says(tree: dict[str, ast.Module]) -> None:
    learner = {n for n in tree if n.startswith(CHECKS + ".") and not n.startswith(INSTRUCTOR) and n != EDGE}
    instructor = {n for n in tree if n.startswith(INSTRUCTOR + ".")}
    assert {f"{CHECKS}.framework", f"{CHECKS}.progress", f"{CHECKS}.evidence", f"{CHECKS}.m01"} <= learner
    assert set(GRADING) | {f"{INSTRUCTOR}.verify", f"{INSTRUCTOR}.generate", f"{INSTRUCTOR}.classview"} <= instructor


def test_no_import_circle_among_the_checks_modules(tree: dict[str, ast.Module]) -> None:
    edges = graph(tree)
    checks = {n: {t for t in targets if t.startswith(CHECKS)} for n, targets in edges.items() if n.startswith(CHECKS)}
    assert circles(checks) == []


def test_the_circle_finder_finds_a_circle_made_on_purpose() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(edges) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_learners_side_never_reaches_the_instructors(tree: dict[str, ast.Module]) -> None:
    assert crossings(tree) == {}


def test_a_lazy_import_of_the_instructors_side_made_on_purpose_is_caught(tree: dict[str, ast.Module]) -> None:
    planted = {**tree, f"{CHECKS}.hints": ast.parse("def hint():\n    from .instructor import grading\n")}
    found = crossings(planted)
    assert f"{INSTRUCTOR}.grading" in found[f"{CHECKS}.hints"]
    assert f"{INSTRUCTOR}.grading" in found[CHECKS]  # the package reaches it through ``from .hints import hint``


def test_the_command_line_edge_loads_the_instructors_side_only_when_a_command_runs(tree: dict[str, ast.Module]) -> None:
    at_import = reached([EDGE], graph(tree, lazy=False))
    assert sorted(n for n in at_import if n.startswith(INSTRUCTOR)) == []
    assert any(i.target.startswith(INSTRUCTOR) for i in imports_of(EDGE, tree))  # it does use them, lazily


def test_grading_loads_nothing_that_unpickles_or_evaluates(tree: dict[str, ast.Module]) -> None:
    at_import = reached(GRADING, graph(tree, lazy=False), with_packages=True)
    users = {n: runs_data_or_code(tree[n]) for n in sorted(at_import) if n in tree}
    assert {n: found for n, found in users.items() if found} == {}


def test_the_scan_knows_the_modules_that_unpickle(tree: dict[str, ast.Module]) -> None:
    """The memory-snapshot reader and the restricted unpickler are found: the scan above can fail."""
    assert runs_data_or_code(tree["lumikit.safe_pickle"])
    assert reached(["lumikit.trace.memory"], graph(tree, lazy=False)) & {
        n for n in tree if runs_data_or_code(tree[n])}
    assert runs_data_or_code(ast.parse("import torch\nstate = torch.load(path)\n")) == ["torch.load(...)"]
    assert runs_data_or_code(ast.parse("value = eval(text)\n")) == ["eval(...)"]
