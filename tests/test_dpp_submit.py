"""dpp without a code line: ``dpp-submit`` (spark-submit's arguments) and ``dpp run -- python
job.py`` switch dpp on for a job that never imports it (``tests/jobs/star_job_no_dpp.py``:
``examples/star_job.py`` without its ``import dpp`` / ``dpp.enable``). Real spark-submit, real
Parquet (the data and the expected rows of tests/test_examples.py); the rows must be those the
job prints anyway, and the report must show the fact table pruned.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.test_examples import DAYS, MONTH, TIMEOUT, YEAR, _report_lines, star  # noqa: F401

pytestmark = pytest.mark.slow  # a JVM of its own: not in `make check`

ROOT = Path(__file__).resolve().parents[1]
JOB = ROOT / "tests" / "jobs" / "star_job_no_dpp.py"


def _tool(name: str, module: str) -> list[str]:
    """The installed console script, or the module it runs (a tree not reinstalled yet)."""
    exe = Path(sys.executable).parent / name
    return [str(exe)] if exe.exists() else [sys.executable, "-m", module]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYSPARK_PYTHON", None)          # as a user's shell: not set
    env.pop("PYSPARK_DRIVER_PYTHON", None)   # dpp-submit chooses its own Python
    env.pop("DPP_AUTOENABLE", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def _run(cmd: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(cmd, env=env, cwd=str(cwd), capture_output=True, text=True,
                              timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{cmd[0]} did not finish within {TIMEOUT} s")
    if proc.returncode != 0:
        quiet = "\n".join(ln for ln in proc.stderr.splitlines() if " INFO " not in ln)
        pytest.fail(f"{cmd} exited {proc.returncode}; stderr tail:\n{quiet[-4000:]}")
    return proc


def _conf(root: Path, report: Path) -> list[str]:
    return ["spark.ui.enabled=false", f"spark.dpp.tables.sales={root / 'sales'}",
            f"spark.dpp.report.path={report}"]


def _job_args(root: Path) -> list[str]:
    return ["--dates", str(root / "dates"), "--year", str(YEAR), "--month", str(MONTH)]


def _outcome(proc: subprocess.CompletedProcess, report: Path) -> dict[str, Any]:
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return {"rows": rows, "report": _report_lines(report), "stderr": proc.stderr,
            "stdout": proc.stdout.splitlines()}


def _assert_pruned(star: dict[str, Any], out: dict[str, Any]) -> None:
    assert out["rows"] == star["expected"]
    assert len(out["report"]) == 1, (out["report"], out["stderr"][-3000:])
    (sales,) = [t for t in out["report"][0]["tables"] if t["table"] == "sales"]
    assert sales["pruning"] == "applied", (sales, out["stderr"][-3000:])
    assert (sales["partitions_kept"], sales["partitions_total"]) == (star["kept"], DAYS)


def _console_lines(out: dict[str, Any]) -> list[str]:
    """The lines ``spark.dpp.report.console`` printed. The driver's JVM writes its log and
    progress bar to the same stderr, so a line may start inside one of its lines: found by
    its words, not by where it starts."""
    return re.findall(r"dpp: (?:sales kept|no pruning)[^\r\n]*", out["stderr"])


def _assert_console(star: dict[str, Any], out: dict[str, Any]) -> None:
    """One line for the one query: what was kept of what, by which build side, the wait."""
    lines = _console_lines(out)
    assert len(lines) == 1, lines
    assert "dpp: sales" not in "\n".join(out["stdout"]), "the job's stdout is the job's"
    (line,) = lines
    assert f"sales kept {star['kept']}/{DAYS} partitions" in line, line
    assert "dates d.day_sk" in line and "waited" in line, line   # the build side by its table
    assert "[collect at star_job_no_dpp.py:" in line, line   # the query by its call site


def test_dpp_submit_prunes_a_job_without_a_dpp_line(star):
    root = star["root"]
    report = root / "submit-report.jsonl"
    cmd = [*_tool("dpp-submit", "dpp.autoenable"), "--master", "local[1]",
           *[x for c in _conf(root, report) for x in ("--conf", c)], str(JOB), *_job_args(root)]
    out = _outcome(_run(cmd, _env(), root), report)
    _assert_pruned(star, out)
    _assert_console(star, out)


@pytest.mark.parametrize("console", [None, "false"], ids=["default", "console_off"])
def test_dpp_run_prunes_the_same_job_started_by_python(star, console):
    """``dpp run --conf`` sets the job's sessions as ``spark-submit --conf`` would; the line
    per query is on unless ``spark.dpp.report.console=false``."""
    root = star["root"]
    report = root / f"run-report-{console}.jsonl"
    env = _env()
    env["PYSPARK_SUBMIT_ARGS"] = "--master local[1] pyspark-shell"
    confs = _conf(root, report) + ([f"spark.dpp.report.console={console}"] if console else [])
    cmd = [*_tool("dpp", "dpp.cli"), "run", *[x for c in confs for x in ("--conf", c)], "--",
           sys.executable, str(JOB), *_job_args(root)]
    out = _outcome(_run(cmd, env, root), report)
    _assert_pruned(star, out)
    if console is None:
        _assert_console(star, out)
    else:
        assert _console_lines(out) == [], out["stderr"][-2000:]


def test_dpp_run_rejects_a_conf_without_a_value(tmp_path):
    proc = subprocess.run([*_tool("dpp", "dpp.cli"), "run", "--conf", "spark.dpp.enabled", "--",
                           sys.executable, "-c", "pass"], env=_env(), cwd=str(tmp_path),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "--conf 'spark.dpp.enabled': expected KEY=VALUE" in proc.stderr


def test_dpp_run_leaves_a_process_without_a_session_alone_and_keeps_its_sitecustomize(
        tmp_path):
    own = tmp_path / "site"
    own.mkdir()
    (own / "sitecustomize.py").write_text("import os\nos.environ['OWN_SITECUSTOMIZE'] = 'ran'\n")
    env = _env()
    env["PYTHONPATH"] = os.pathsep.join([str(own), env["PYTHONPATH"]])
    probe = ("import json, os, sys; print(json.dumps({'own': os.environ.get('OWN_SITECUSTOMIZE'),"
             " 'pyspark': 'pyspark' in sys.modules, 'dpp': any(m == 'dpp' or "
             "m.startswith('dpp.') for m in sys.modules)}))")
    cmd = [*_tool("dpp", "dpp.cli"), "run", "--", sys.executable, "-c", probe]
    out = json.loads(_run(cmd, env, tmp_path).stdout.strip().splitlines()[-1])
    assert out == {"own": "ran", "pyspark": False, "dpp": False}
