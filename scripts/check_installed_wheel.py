#!/usr/bin/env python3
"""Run ``examples/dataframe_job.py`` through the ``spark-submit`` of an installed environment
and check its report: the fact table pruned by the optimizer hook.

For checking a wheel installed beside a pyspark a user already has, on a driver with a JRE
only, e.g.::

    python3 -m venv /tmp/v && /tmp/v/bin/pip install pyspark==3.5.9 && \\
        /tmp/v/bin/pip install dist/dpp_spark-*.whl
    jlink --add-modules java.se,jdk.unsupported,jdk.crypto.ec --output /tmp/jre17
    python3 scripts/check_installed_wheel.py --venv /tmp/v --java-home /tmp/jre17 \\
        --path /a/bin/dir/without/javac

Prints the report's line for ``sales`` and exits 0 when it was pruned with the right rows
(29 of 60 partitions kept, one row per day of February 2024).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def make_data(root: Path, python: str) -> list[dict]:
    """The star of tests/test_examples.py, written by the checked environment's pyarrow."""
    code = r'''
import datetime as dt, json, random, sys
from pathlib import Path
import pyarrow as pa, pyarrow.parquet as pq
root = Path(sys.argv[1]); rnd = random.Random(16)
days = [dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(60)]
sk = lambda d: int(d.strftime("%Y%m%d"))
expected = {}
order = 0
for d in days:
    rows = {"order_id": [], "quantity": [], "amount_cents": []}
    for _ in range(rnd.randint(1, 6)):
        order += 1
        q, c = rnd.randint(1, 9), rnd.randint(100, 100000)
        rows["order_id"].append(order); rows["quantity"].append(q); rows["amount_cents"].append(c)
        if (d.year, d.month) == (2024, 2):
            e = expected.setdefault(d.isoformat(), [0, 0]); e[0] += 1; e[1] += q
    f = root / "sales" / f"day_sk={sk(d)}"; f.mkdir(parents=True)
    pq.write_table(pa.table(rows, schema=pa.schema([("order_id", pa.int64()),
        ("quantity", pa.int32()), ("amount_cents", pa.int64())])), f / "part-0.parquet")
(root / "dates").mkdir()
pq.write_table(pa.table({"day_sk": [sk(d) for d in days], "d_date": days,
    "d_year": [d.year for d in days], "d_moy": [d.month for d in days]}),
    root / "dates" / "part-0.parquet")
print(json.dumps(expected))
'''
    out = subprocess.run([python, "-c", code, str(root)], check=True, capture_output=True,
                         text=True)
    return json.loads(out.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv", required=True, help="the environment holding pyspark and dpp")
    ap.add_argument("--java-home", required=True)
    ap.add_argument("--path", default=None, help="PATH for the job (default: unchanged)")
    args = ap.parse_args()
    venv = Path(args.venv)
    python = str(venv / "bin" / "python")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        expected = make_data(root, python)
        report = root / "report.jsonl"
        warehouse = root / "warehouse"
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYSPARK_PYTHON", "SPARK_HOME", "PYTHONPATH")}
        env["JAVA_HOME"] = args.java_home
        env["PYSPARK_DRIVER_PYTHON"] = python
        env["PATH"] = os.pathsep.join([str(venv / "bin"), args.path or env.get("PATH", "")])
        env["XDG_CACHE_HOME"] = str(root / "cache")   # no jar compiled earlier is found
        # the example from a copy: the job imports the installed package, not this tree
        job = root / "dataframe_job.py"
        job.write_text((ROOT / "examples" / "dataframe_job.py").read_text())
        cmd = [str(venv / "bin" / "spark-submit"), "--master", "local[1]",
               "--conf", "spark.ui.enabled=false",
               "--conf", f"spark.dpp.tables.sales={root / 'sales'}",
               "--conf", f"spark.dpp.report.path={report}",
               "--conf", f"spark.sql.warehouse.dir={warehouse}",
               str(job), "--dates", str(root / "dates"), "--year", "2024", "--month", "2",
               "--table", "daily_sales"]
        proc = subprocess.run(cmd, env=env, cwd=tmp, capture_output=True, text=True,
                              timeout=900)
        if proc.returncode != 0:
            print(proc.stderr[-4000:], file=sys.stderr)
            return proc.returncode
        which = subprocess.run(["sh", "-c", "command -v javac || echo none"], env=env,
                               capture_output=True, text=True).stdout.strip()
        lines = [json.loads(x) for x in report.read_text().splitlines() if x.strip()]
        (sales,) = [t for t in lines[0]["tables"] if t["table"] == "sales"]
        got = subprocess.run([python, "-c", (
            "import json, sys, pyarrow.parquet as pq; t = pq.read_table(sys.argv[1]).to_pylist();"
            "print(json.dumps({r['d_date'].isoformat(): [r['orders'], r['quantity']] "
            "for r in t}))"), str(warehouse / "daily_sales")], check=True,
            capture_output=True, text=True).stdout
        versions = subprocess.run([python, "-c", (
            "import pyspark, dpp.runtime.jvm_build as j; print(pyspark.__version__, j.JARS)")],
            env=env, capture_output=True, text=True).stdout.strip()
        notes = lines[0].get("analysis_notes")
        print(json.dumps({"pyspark_and_jars": versions, "java_home": args.java_home,
                          "javac_on_path": which, "report_kind": lines[0].get("kind"),
                          "sales": {k: sales.get(k) for k in (
                              "pruning", "partitions_kept", "partitions_total",
                              "folders_listed")},
                          "rows_match": json.loads(got) == expected,
                          "notes": notes}, indent=1))
        ok = (sales.get("pruning") == "applied" and sales.get("partitions_kept") == 29
              and json.loads(got) == expected)
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
