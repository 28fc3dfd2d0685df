"""A job started as a user starts it: the venv's python by path, venv not activated, no
``PYSPARK_PYTHON``, and a ``python3`` first on the PATH that has no pyarrow (Spark's workers
start that one). The default collector must still prune; the Arrow collector, forced, must
give the right rows unpruned and say once per session what to set.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

# each test starts Spark in a process of its own: the full tier, not `make check`
pytestmark = pytest.mark.spark

JOB = Path(__file__).parent / "jobs" / "plain_star_job.py"
PARTS = 6


@pytest.fixture(scope="module")
def bare_path(tmp_path_factory) -> str:
    """A PATH whose ``python3`` is a bare venv's: no pyarrow, no pyspark, no dpp."""
    root = tmp_path_factory.mktemp("bare")
    subprocess.run(["python3", "-m", "venv", "--without-pip", str(root / "venv")], check=True)
    bare = root / "venv" / "bin"
    probe = subprocess.run([str(bare / "python3"), "-c", "import pyarrow"],
                           capture_output=True, text=True)
    assert probe.returncode != 0, "the bare venv's python3 can import pyarrow: test is void"
    return f"{bare}{os.pathsep}{os.environ.get('PATH', '')}"


@pytest.fixture(scope="module")
def star(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("plain-star")
    for p in range(PARTS):
        folder = root / "fact" / f"k={p}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"v": list(range(p + 1))}), folder / "part-0.parquet")
    (root / "dim").mkdir()
    pq.write_table(pa.table({"d_k": pa.array(range(PARTS), pa.int32()),
                             "d_name": [f"n{p}" for p in range(PARTS)]}),
                   root / "dim" / "d.parquet")
    return root / "fact", root / "dim"


def _run(path: str, star: tuple[Path, Path], *settings: str) -> list[dict]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = path
    proc = subprocess.run([sys.executable, str(JOB), str(star[0]), str(star[1]), *settings],
                          env=env, capture_output=True, text=True, timeout=600,
                          cwd=str(JOB.parent))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def test_default_collector_prunes_without_python_on_executors(bare_path, star):
    first, second = _run(bare_path, star)
    # each fact partition k holds k + 1 rows
    assert first["rows"] == [[1, 2], [4, 5]] and second["rows"] == [[2, 3]]
    assert (first["kept"], first["total"]) == (2, PARTS)
    assert (second["kept"], second["total"]) == (1, PARTS)
    assert first["outcomes"] == ["complete"] and first["environment"] == []


def test_forced_arrow_collector_reports_the_environment_once(bare_path, star):
    first, second = _run(bare_path, star, "spark.dpp.collector=arrow")
    assert first["rows"] == [[1, 2], [4, 5]] and second["rows"] == [[2, 3]]
    assert first["kept"] == first["total"] == PARTS          # no pruning, right rows
    assert first["outcomes"] == second["outcomes"] == ["failed"]
    assert len(first["environment"]) == 1, first["reasons"]
    (note,) = first["environment"]
    assert "spark.dpp.collector=native" in note and "pyarrow" in note
    assert second["environment"] == []                     # said once per session
    assert "environment: " in second["reasons"][0]
    assert "spark.dpp.collector=native" in second["reasons"][0] and len(second["reasons"][0]) < 300
