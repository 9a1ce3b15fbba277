"""The arrows run one way: the record (lumikit.record) imports the GPU view (lumikit.smi), never the reverse, and
the sources (lumikit.smi.sources) import nothing of the views built on them. Read from the source text (ast), so
an import inside a function counts too."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import lumikit

PACKAGE = Path(lumikit.__file__).parent


def imported(path: Path) -> set[str]:
    """The absolute names of every module ``path`` imports (relative imports resolved against its package)."""
    package = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)[:-1]  # a/b/c.py and a/b/__init__.py: a.b
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            out.add(module)
            out.update(f"{module}.{a.name}" for a in node.names)
    return out


def test_the_resolver_reads_relative_imports():
    names = imported(PACKAGE / "record" / "recorder.py")
    assert "lumikit.smi.sources" in names and "lumikit.errors" in names


def test_no_module_of_the_gpu_view_imports_the_record():
    offenders = {str(p.relative_to(PACKAGE.parent)): sorted(n for n in imported(p) if n.startswith("lumikit.record"))
                 for p in (PACKAGE / "smi").rglob("*.py")}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_sources_import_none_of_the_views_built_on_them():
    above = ("lumikit.smi.sampler", "lumikit.smi.record_tail", "lumikit.smi.cli", "lumikit.widgets",
             "lumikit.launch", "lumikit.record")
    offenders = {str(p.relative_to(PACKAGE.parent)): sorted(n for n in imported(p) if n.startswith(above))
                 for p in (PACKAGE / "smi" / "sources").rglob("*.py")}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_importing_every_gpu_view_module_loads_no_record_module():
    code = ("import importlib, pkgutil, sys, lumikit.smi as smi\n"
            "for m in pkgutil.walk_packages(smi.__path__, 'lumikit.smi.'): importlib.import_module(m.name)\n"
            "print(sorted(k for k in sys.modules if k.startswith('lumikit.record')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=PACKAGE.parent)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
