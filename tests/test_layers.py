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
