"""The layers point one way (docs/contributing.md, "Architecture"): ``dpp.core`` at the bottom
imports nothing else of the project; ``collectors``, ``coordinator`` and ``hive_splits``
import only ``dpp.core`` of ``dpp``; nothing imports ``tpcds``. Read from the source (every
``import``, at any depth, so a function-level import cannot hide an arrow pointing up)."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ("dpp", "collectors", "coordinator", "hive_splits", "tpcds")


def _imports(path: Path) -> set[str]:
    """Every project module a file imports, anywhere in it."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return {m for m in out if m.split(".")[0] in PROJECT}


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package.replace(".", "/")).rglob("*.py"))


def _violations(package: str, allowed: tuple[str, ...]) -> list[str]:
    bad = []
    for path in _modules(package):
        for m in sorted(_imports(path)):
            if not any(m == a or m.startswith(a + ".") for a in allowed):
                bad.append(f"{path.relative_to(ROOT)} imports {m}")
    return bad


def test_core_imports_nothing_else_of_the_project():
    assert _violations("dpp/core", ("dpp.core",)) == []


@pytest.mark.parametrize("package", ["collectors", "coordinator", "hive_splits"])
def test_middle_layer_imports_only_itself_the_other_middle_packages_and_core(package):
    allowed = ("dpp.core", "collectors", "coordinator", "hive_splits")
    assert _violations(package, allowed) == []


def test_nothing_below_tpcds_imports_it():
    for package in ("dpp", "collectors", "coordinator", "hive_splits"):
        assert _violations(package, ("dpp", "collectors", "coordinator", "hive_splits")) == []


def test_the_guard_sees_a_violation(tmp_path):
    # the guard itself can fail: a function-level import of the session is found
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from dpp.session import DppSession\n    return DppSession\n")
    assert _imports(bad) == {"dpp.session", "dpp.session.DppSession"}


def test_importing_the_core_is_cheap():
    # a fresh interpreter: the core must not pull in the session, Spark, sqlglot or pyarrow
    code = ("import sys, dpp.core.domain, dpp.core.codec, dpp.core.reconcile, "
            "dpp.core.spark_rules; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('pyspark','sqlglot','pyarrow','redis') or m in ('dpp.session','dpp.planner')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_hooks_road_never_loads_sqlglot():
    # the optimizer hook reads Spark's analysed plan; SQL text is the other front end's
    code = ("import sys, dpp.optimizer_hook, dpp.hook_answers, dpp.hook_tables, dpp.decision; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'sqlglot'))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "[]"


def _runtime_imports(path: Path, package: str, modules: set[str]) -> set[str]:
    """The modules of ``package`` a file imports when it runs: at any depth (a function-level
    import is an arrow too), except under ``if TYPE_CHECKING:`` (read by type checkers only)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only.update(id(n) for b in node.body for n in ast.walk(b))
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        out.update(n for n in names if n in modules and n != package)
    return out


def _cycles(root: Path, package: str) -> list[list[str]]:
    """The import cycles among the modules of ``package`` under ``root`` (each a list of
    modules that reach one another)."""
    files = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        files[name] = path
    graph = {m: _runtime_imports(p, package, set(files)) - {m} for m, p in files.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:   # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for m in sorted(graph):
        if m not in index:
            visit(m)
    return out


def test_no_import_cycles_inside_dpp():
    assert _cycles(ROOT, "dpp") == []


def test_the_cycle_guard_sees_a_cycle(tmp_path):
    pkg = tmp_path / "dpp"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from dpp.b import g\n")
    (pkg / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from dpp.a import f\n")
    assert _cycles(tmp_path, "dpp") == []           # a type checker's import is no arrow
    (pkg / "b.py").write_text("def g():\n    from dpp.a import f\n    return f\n")
    assert _cycles(tmp_path, "dpp") == [["dpp.a", "dpp.b"]]   # a function-level one is
