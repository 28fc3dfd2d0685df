"""``examples/star_job.py`` (SQL) and ``examples/dataframe_job.py`` (DataFrame API, ending in
``saveAsTable``) run the way a user runs a job: ``spark-submit`` of the installed
pyspark, local mode, dpp switched on and its tables declared with ``--conf`` only.

The child process gets no ``PYSPARK_PYTHON``: a user's executors start whatever Python Spark
finds, which need not have this package or pyarrow. The driver's Python is the one running
these tests (it has the package), as a user's would be. The expected rows are computed here in
plain Python from the data written, never by Spark.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import random
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.slow  # a JVM of its own (spark-submit): not in `make check`

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "star_job.py"
DATAFRAME_EXAMPLE = ROOT / "examples" / "dataframe_job.py"
YEAR, MONTH = 2024, 2
FIRST_DAY, DAYS = dt.date(2024, 1, 1), 60          # Jan 1 .. Feb 29: 60 partitions
TIMEOUT = 600                                       # seconds; spark-submit takes ~20-60 s here


def _day_sk(d: dt.date) -> int:
    return int(d.strftime("%Y%m%d"))


def _spark_submit() -> str:
    exe = Path(sys.executable).parent / "spark-submit"
    if exe.exists():
        return str(exe)
    import pyspark

    return str(Path(pyspark.__file__).parent / "bin" / "spark-submit")


@pytest.fixture(scope="module")
def star(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("star_job")
    rnd = random.Random(16)
    days = [FIRST_DAY + dt.timedelta(days=i) for i in range(DAYS)]
    expected: dict[str, dict[str, int]] = defaultdict(lambda: {"orders": 0, "quantity": 0,
                                                               "amount_cents": 0})
    schema = pa.schema([("order_id", pa.int64()), ("quantity", pa.int32()),
                        ("amount_cents", pa.int64())])
    order = 0
    for d in days:
        n = rnd.randint(1, 6)
        rows = {"order_id": [], "quantity": [], "amount_cents": []}
        for _ in range(n):
            order += 1
            q, cents = rnd.randint(1, 9), rnd.randint(100, 100_000)
            rows["order_id"].append(order)
            rows["quantity"].append(q)
            rows["amount_cents"].append(cents)
            if (d.year, d.month) == (YEAR, MONTH):
                e = expected[d.isoformat()]
                e["orders"] += 1
                e["quantity"] += q
                e["amount_cents"] += cents
        folder = root / "sales" / f"day_sk={_day_sk(d)}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table(rows, schema=schema), folder / "part-0.parquet")
    (root / "dates").mkdir()
    pq.write_table(pa.table({"day_sk": [_day_sk(d) for d in days], "d_date": days,
                             "d_year": [d.year for d in days],
                             "d_moy": [d.month for d in days]}),
                   root / "dates" / "part-0.parquet")
    rows = [{"d_date": day, **vals} for day, vals in sorted(expected.items())]
    return {"root": root, "expected": rows, "kept": len(rows)}


def _submit(root: Path, report: Path, example: Path, args: list[str],
            conf: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """spark-submit of an example with dpp switched on by --conf only."""
    env = dict(os.environ)
    env.pop("PYSPARK_PYTHON", None)                      # as a user's shell: not set
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable        # the driver has this package
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    cmd = [_spark_submit(), "--master", "local[1]",
           "--conf", "spark.ui.enabled=false",
           "--conf", "spark.dpp.enabled=true",
           "--conf", f"spark.dpp.tables.sales={root / 'sales'}",
           "--conf", f"spark.dpp.report.path={report}",
           *[x for c in conf for x in ("--conf", c)],
           str(example), *args]
    try:
        proc = subprocess.run(cmd, env=env, cwd=str(root), capture_output=True, text=True,
                              timeout=TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        tail = (exc.stderr or b"")[-4000:]
        pytest.fail(f"spark-submit did not finish within {TIMEOUT} s; stderr tail:\n"
                    f"{tail.decode(errors='replace') if isinstance(tail, bytes) else tail}")
    if proc.returncode != 0:
        quiet = "\n".join(ln for ln in proc.stderr.splitlines() if " INFO " not in ln)
        pytest.fail(f"spark-submit exited {proc.returncode}; stderr tail (INFO left out):\n"
                    f"{quiet[-4000:]}")
    return proc


def _report_lines(report: Path) -> list[dict[str, Any]]:
    return ([json.loads(line) for line in report.read_text().splitlines() if line.strip()]
            if report.exists() else [])


@pytest.fixture(scope="module")
def submitted(star: dict[str, Any]) -> dict[str, Any]:
    """One spark-submit run of the example; its printed rows and its report lines."""
    root = star["root"]
    report = root / "report.jsonl"
    proc = _submit(root, report, EXAMPLE, ["--dates", str(root / "dates"),
                                           "--year", str(YEAR), "--month", str(MONTH)])
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return {"rows": rows, "report": _report_lines(report), "stdout": proc.stdout,
            "stderr": proc.stderr}


def test_prints_the_rows_of_the_query(star, submitted):
    assert submitted["rows"] == star["expected"], submitted["stdout"]
    assert len(star["expected"]) == 29   # every day of February 2024


def test_report_shows_the_fact_table_pruned(star, submitted):
    reports = submitted["report"]
    assert len(reports) == 1, f"expected one report line, got {reports}"
    (sales,) = [t for t in reports[0]["tables"] if t["table"] == "sales"]
    assert sales["partitions_total"] == DAYS
    why = {"table_reason": sales.get("reason"),
           "filters": [(f.get("outcome"), f.get("reason")) for f in reports[0]["filters"]]}
    warnings = [ln for ln in submitted["stderr"].splitlines()
                if any(w in ln for w in (" WARN ", " ERROR ", "Error:", "dpp"))]
    assert sales["pruning"] == "applied" and sales["partitions_kept"] == star["kept"], (
        f"the fact table was not pruned: {why}\nwarnings in stderr (tail):\n"
        + "\n".join(warnings[-20:]))
    assert sales["partitions_kept"] < sales["partitions_total"]


@pytest.fixture(scope="module")
def dataframe_job(star: dict[str, Any]) -> dict[str, Any]:
    """One spark-submit run of the DataFrame example: the table it saved, its report lines."""
    root = star["root"]
    report = root / "dataframe-report.jsonl"
    warehouse = root / "warehouse"
    proc = _submit(root, report, DATAFRAME_EXAMPLE,
                   ["--dates", str(root / "dates"), "--year", str(YEAR), "--month", str(MONTH),
                    "--table", "daily_sales"],
                   conf=(f"spark.sql.warehouse.dir={warehouse}",))
    saved = pq.read_table(warehouse / "daily_sales").to_pylist()
    rows = sorted(({**r, "d_date": r["d_date"].isoformat()} for r in saved),
                  key=lambda r: r["d_date"])
    return {"rows": rows, "report": _report_lines(report), "stdout": proc.stdout,
            "stderr": proc.stderr}


def test_dataframe_job_saves_the_rows_of_the_month(star, dataframe_job):
    assert dataframe_job["rows"] == star["expected"], dataframe_job["stdout"]


def test_dataframe_job_write_is_pruned_through_the_optimizer_hook(star, dataframe_job):
    reports = dataframe_job["report"]
    assert len(reports) == 1, f"expected one report line (the write), got {reports}"
    assert reports[0]["kind"] == "plan"
    (sales,) = [t for t in reports[0]["tables"] if t["table"] == "sales"]
    assert sales["pruning"] == "applied", (sales, dataframe_job["stderr"][-3000:])
    assert (sales["partitions_kept"], sales["partitions_total"]) == (star["kept"], DAYS)
    # a declared table is listed lazily: the root and the kept partitions only
    assert sales["folders_listed"] <= star["kept"] + 1
