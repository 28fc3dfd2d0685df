"""``dpp doctor`` as a user runs it (a subprocess with its own JVM): every check on one line,
exit 0 when nothing is wrong, else 1 with each problem named."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dpp.runtime import jvm_build

pytestmark = pytest.mark.slow  # a JVM of its own: not in `make check`

ROOT = Path(__file__).resolve().parents[1]


def _doctor(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-m", "dpp.cli", "doctor", *args], env=env,
                          capture_output=True, text=True, timeout=600, cwd=str(ROOT))


def test_doctor_names_the_line_the_jar_and_the_active_hook() -> None:
    import pyspark

    proc = _doctor()
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    out = proc.stdout
    line = jvm_build.spark_line(pyspark.__version__)
    assert f"spark line:    {line}, Scala 2.1" in out
    assert f"dpp-hook-spark{line}_" in out and "(shipped," in out
    assert "hook:          active" in out
    assert "coordinator:   embedded" in out
    assert out.rstrip().endswith("dpp doctor: ok")


def test_doctor_exits_non_zero_naming_each_problem() -> None:
    proc = _doctor("--conf", "spark.dpp.coordinator=redis://127.0.0.1:1",
                   "--conf", "spark.dpp.optimizerHook=false")
    assert proc.returncode == 1, proc.stdout + proc.stderr[-2000:]
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("dpp doctor: 2 problem(s): ")
    assert "hook: not active" in last and "coordinator: redis://127.0.0.1:1 does not answer" in last
    assert "settings:      spark.dpp.coordinator=redis://127.0.0.1:1, " \
           "spark.dpp.optimizerHook=false" in proc.stdout


def test_doctor_names_a_bad_setting() -> None:
    proc = _doctor("--conf", "spark.dpp.maxDistinctValues=many")
    assert proc.returncode == 1
    assert "settings:      PROBLEM: spark.dpp.maxDistinctValues='many'" in proc.stdout
