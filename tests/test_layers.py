"""The layers point one way (docs/contributing.md, "Architecture"): ``dpp.core`` at the bottom
imports nothing else of the project; ``collectors``, ``coordinator`` and ``hive_splits``
import only ``dpp.core`` of ``dpp``; inside ``dpp``, ``core`` ← ``analysis`` ← ``runtime`` ←
the front ends (``frontends.hook``, ``.sql``, ``.connect``, ``.dataframe``) ← the public API
(the top-level modules); nothing imports ``tpcds``; no modules form a cycle.
Read from the source (every ``import``, at any depth, so a function-level import cannot hide
an arrow pointing up, nor an ``if TYPE_CHECKING:`` one a cycle)."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Mapping, Sequence

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


# dpp's own layers, bottom first: a module may import its own layer and those below it
LAYERS = ("core", "analysis", "runtime", "frontends", "api")
FRONT_ENDS = ("hook", "sql", "connect", "dataframe")
# the one arrow between front ends: a DataFrame on Spark Connect is a Connect plan, read by the
# Connect front end's reader
FRONT_END_ARROWS = {("dataframe", "connect")}


def _layer(module: str) -> tuple[str, str]:
    """(layer, front end or "") of a ``dpp`` module."""
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in ("core", "analysis", "runtime"):
        return parts[1], ""
    if len(parts) > 1 and parts[1] == "frontends":
        return "frontends", parts[2] if len(parts) > 2 else ""
    return "api", ""


def _layer_violations(graph: Mapping[str, set[str]]) -> list[str]:
    bad = []
    for module, deps in sorted(graph.items()):
        layer, front = _layer(module)
        rank = LAYERS.index(layer)
        for dep in sorted(deps):
            if not dep.startswith("dpp"):
                continue
            dlayer, dfront = _layer(dep)
            if LAYERS.index(dlayer) > rank:
                bad.append(f"{module} ({layer}) imports {dep} ({dlayer}): an arrow up")
            elif (layer == dlayer == "frontends" and front and dfront and front != dfront
                  and (front, dfront) not in FRONT_END_ARROWS):
                bad.append(f"{module} imports {dep}: one front end into another")
    return bad


def test_dpp_packages_are_layers() -> None:
    """Every import inside ``dpp`` (function-level and ``TYPE_CHECKING`` ones too) points to
    its own layer or one below; front ends do not import each other but for the one arrow
    named above; every module of ``dpp`` sits in a layer package or is public API."""
    graph = _module_graph(ROOT, ("dpp",))
    assert _layer_violations(graph) == []
    # the packages of dpp: the layers, and the interpreter hook ``dpp run`` puts on the path
    packages = {m.split(".")[1] for m in graph if m.count(".") >= 2}
    assert packages == {"core", "analysis", "runtime", "frontends", "_autoenable"}
    fronts = {m.split(".")[2] for m in graph if m.startswith("dpp.frontends.")}
    assert fronts == set(FRONT_ENDS)


def test_the_layer_guard_sees_an_arrow_up_and_a_front_end_crossing() -> None:
    graph = {"dpp.analysis.rules": {"dpp.runtime.report"},
             "dpp.runtime.catalog": {"dpp.frontends.sql.planner", "dpp.core.domain"},
             "dpp.frontends.hook.tables": {"dpp.session", "dpp.frontends.sql.planner"},
             "dpp.frontends.dataframe.determinism": {"dpp.frontends.connect.proto"},
             "dpp.session": {"dpp.frontends.hook.optimizer_hook"}}
    assert _layer_violations(graph) == [
        "dpp.analysis.rules (analysis) imports dpp.runtime.report (runtime): an arrow up",
        "dpp.frontends.hook.tables imports dpp.frontends.sql.planner: one front end into "
        "another",
        "dpp.frontends.hook.tables (frontends) imports dpp.session (api): an arrow up",
        "dpp.runtime.catalog (runtime) imports dpp.frontends.sql.planner (frontends): an "
        "arrow up"]


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
            "('pyspark','sqlglot','pyarrow','redis') or m in ('dpp.session','dpp.frontends.sql.planner')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_hooks_road_never_loads_sqlglot():
    # the optimizer hook reads Spark's analysed plan; SQL text is the other front end's
    code = ("import sys, dpp.frontends.hook.optimizer_hook, dpp.frontends.hook.answers, dpp.frontends.hook.tables, dpp.runtime.decision; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'sqlglot'))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "[]"


def _module_graph(root: Path, packages: Sequence[str]) -> dict[str, set[str]]:
    """Module -> the modules of ``packages`` (folders under ``root``) its file imports. A
    package's ``__init__`` is a module of the package's name."""
    files: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return {m: _imported(m, path, set(files)) for m, path in files.items()}


def _imported(module: str, path: Path, modules: set[str]) -> set[str]:
    """The ``modules`` one file imports: every ``import`` anywhere in it, inside a function or
    under ``if TYPE_CHECKING:`` too (a dependency all the same: a type checker, a reader and a
    refactoring follow it). ``from pkg import name`` imports ``pkg.name`` when that is a
    module, else ``pkg``; a relative import is read from the file's own package."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join(up + ([node.module] if node.module else []))
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                     for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in modules:   # an attribute or a name of a module
                name = name.rpartition(".")[0]
            if name:
                out.add(name)
    return out


def _cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The import cycles of ``graph``: each strongly connected component of more than one
    module, and each module importing itself, sorted. Tarjan's algorithm, iterative (no
    recursion limit however long an import chain gets)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        work = [(start, iter(sorted(graph[start])))]
        while work:
            v, arrows = work[-1]
            for w in arrows:
                if w not in index:   # visit w, then come back to v's next arrow
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:                    # every arrow of v followed
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[v])
                if low[v] == index[v]:
                    component: list[str] = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1 or v in graph[v]:
                        found.append(sorted(component))
    return sorted(found)


def _cycle_report(graph: Mapping[str, set[str]], cycles: list[list[str]]) -> str:
    """One line per cycle, with the arrows inside it (what to cut)."""
    return "\n".join("; ".join(f"{m} -> {', '.join(sorted(graph[m] & set(c)))}" for m in c)
                     for c in cycles)


def test_no_import_cycles_inside_the_project() -> None:
    """A cycle, even through a function-level or ``TYPE_CHECKING`` import, ties its modules
    into one: none can be read, tested or moved alone. The lower module declares a
    ``Protocol`` of what it uses instead (``dpp.frontends.hook.bridge.Hook``, ``dpp.runtime.session_parts.SessionParts``)."""
    graph = _module_graph(ROOT, PROJECT)
    assert len(graph) > 50
    cycles = _cycles(graph)
    assert cycles == [], "import cycles:\n" + _cycle_report(graph, cycles)


def test_the_cycle_guard_sees_a_cycle(tmp_path: Path) -> None:
    """The guard itself can fail: a cycle through a function-level import, one through a
    relative import under ``if TYPE_CHECKING:``, a self-import; a module importing a cycle
    is in none."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.b import g\n\ndef f():\n    return g\n")
    (pkg / "b.py").write_text("def g():\n    from pkg.a import f\n    return f\n")
    (pkg / "c.py").write_text("from pkg import d\n")
    (pkg / "d.py").write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                              "    from . import c\n")
    (pkg / "e.py").write_text("import pkg.e\n")
    (pkg / "user.py").write_text("import pkg.a\nfrom pkg.c import d\n")
    graph = _module_graph(tmp_path, ["pkg"])
    assert graph["pkg.d"] == {"pkg.c"} and graph["pkg.user"] == {"pkg.a", "pkg.c"}
    cycles = _cycles(graph)
    assert cycles == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.d"], ["pkg.e"]]
    assert _cycle_report(graph, cycles).splitlines()[1] == "pkg.c -> pkg.d; pkg.d -> pkg.c"
    (pkg / "d.py").write_text("")                       # cut one arrow, that cycle is gone
    assert _cycles(_module_graph(tmp_path, ["pkg"])) == [["pkg.a", "pkg.b"], ["pkg.e"]]
