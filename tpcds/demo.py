"""The demo job: a small TPC-DS star schema, a handful of star joins, in three modes.

``make demo`` runs it. It generates scale 0.1 once (cached under ``data/``), then runs each
query on the same files as

- ``off``: Spark with every dynamic pruning off (its DPP, runtime bloom filters, semi-join
  reduction),
- ``spark``: Spark with its defaults, its own dynamic partition pruning on,
- ``dpp``: this runtime (with Spark's defaults underneath),

checks the rows are identical in every mode, and prints what dpp skipped, each mode's elapsed
time and dpp/spark. Each measured run opens its fact tables afresh (Spark's listing of a path
table, dpp's split loader), as a job does; the modes rotate per query so none always runs on
the warmest caches. Exit code 1 if any rows differ.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

FACTS = {
    "store_sales": "ss_sold_date_sk",
    "store_returns": "sr_returned_date_sk",
    "catalog_sales": "cs_sold_date_sk",
    "web_sales": "ws_sold_date_sk",
}
DIMS = ["date_dim", "item", "store", "customer_demographics", "promotion"]

QUERIES: dict[str, str] = {
    "q3-like (brand sales in November)": """
        SELECT d.d_year, i.i_brand_id, i.i_brand, sum(ss.ss_ext_sales_price) AS sum_agg
        FROM date_dim d JOIN store_sales ss ON d.d_date_sk = ss.ss_sold_date_sk
        JOIN item i ON ss.ss_item_sk = i.i_item_sk
        WHERE i.i_manufact_id = 128 AND d.d_moy = 11
        GROUP BY d.d_year, i.i_brand, i.i_brand_id""",
    "q42-like (category sales, Dec 2000)": """
        SELECT d.d_year, i.i_category_id, i.i_category, sum(ss.ss_ext_sales_price) AS s
        FROM date_dim d, store_sales ss, item i
        WHERE d.d_date_sk = ss.ss_sold_date_sk AND ss.ss_item_sk = i.i_item_sk
          AND i.i_manager_id = 1 AND d.d_moy = 12 AND d.d_year = 2000
        GROUP BY d.d_year, i.i_category_id, i.i_category""",
    "returns in Q1 2001 (semi join)": """
        SELECT count(*) AS n, sum(sr_return_amt) AS amt FROM store_returns
        WHERE sr_returned_date_sk IN (SELECT d_date_sk FROM date_dim
                                      WHERE d_year = 2001 AND d_qoy = 1)""",
    "catalog + web, Feb 1-7 2002 (UNION ALL)": """
        SELECT 'catalog' AS ch, count(*) AS n FROM catalog_sales JOIN date_dim
          ON cs_sold_date_sk = d_date_sk WHERE d_year = 2002 AND d_moy = 2 AND d_dom <= 7
        UNION ALL
        SELECT 'web', count(*) FROM web_sales JOIN date_dim
          ON ws_sold_date_sk = d_date_sk WHERE d_year = 2002 AND d_moy = 2 AND d_dom <= 7""",
    "outer join, preserved fact side (never pruned)": """
        SELECT count(*) AS n, count(d.d_date_sk) AS matched FROM store_returns sr
        LEFT JOIN (SELECT * FROM date_dim WHERE d_year = 1999) d
          ON sr.sr_returned_date_sk = d.d_date_sk""",
}

_OFF = {"spark.sql.optimizer.dynamicPartitionPruning.enabled": "false",
        "spark.sql.optimizer.runtime.bloomFilter.enabled": "false",
        "spark.sql.optimizer.runtimeFilter.semiJoinReduction.enabled": "false"}


def _spark() -> Any:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return (SparkSession.builder.master("local[2]").appName("dpp-demo")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "8")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.driver.memory", "4g")
            .getOrCreate())


def _rows(rows: list[Any]) -> Counter:
    def norm(v: Any) -> Any:
        return round(float(v), 6) if isinstance(v, float) else v

    return Counter(tuple(norm(v) for v in r) for r in rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tpcds.demo", description=__doc__)
    ap.add_argument("--sf", type=float, default=0.1)
    ap.add_argument("--data", default=None, help="data folder (default data/tpcds-sf<SF>)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    from tpcds.generate import ensure_generated

    data = Path(args.data or f"data/tpcds-sf{args.sf:g}")
    print(f"[demo] TPC-DS scale {args.sf:g} in {data} (generated once, then cached)")
    ensure_generated(args.sf, str(data))

    spark = _spark()
    spark.sparkContext.setLogLevel("ERROR")
    from dpp import DppSession

    for name in DIMS:
        spark.read.parquet(str(data / name)).createOrReplaceTempView(name)
    dpp = DppSession(spark)

    def run_spark(q: str, used: list[str], conf: dict[str, str]) -> tuple[list[Any], float]:
        """Spark alone: fact tables opened afresh as path tables (its listing), then run."""
        for k, v in conf.items():
            spark.conf.set(k, v)
        try:
            t0 = time.perf_counter()
            for fact in used:
                spark.read.parquet(str(data / fact)).createOrReplaceTempView(fact)
            rows = spark.sql(q).collect()
            return rows, time.perf_counter() - t0
        finally:
            for k in conf:
                spark.conf.unset(k)
            for fact in used:
                spark.catalog.dropTempView(fact)

    def run_dpp(q: str, used: list[str]) -> tuple[list[Any], float]:
        """This runtime: fact tables registered by path, opened through the split loader."""
        t0 = time.perf_counter()
        for fact in used:
            dpp.register_table(fact, str(data / fact))
        rows = dpp.collect(q)
        return rows, time.perf_counter() - t0

    modes = ("off", "spark", "dpp")
    failures = 0
    totals = dict.fromkeys(modes, 0.0)
    print(f"{'query':<48} {'rows':>4} {'same':>4} {'dpp kept':>10} {'listed':>6}"
          f" {'off s':>6} {'spark s':>7} {'dpp s':>6} {'dpp/spark':>9}")
    for i, (title, q) in enumerate(QUERIES.items()):
        used = [f for f in FACTS if f in q]
        rows: dict[str, list[Any]] = {}
        secs: dict[str, float] = {}
        for mode in modes[i % 3:] + modes[:i % 3]:   # rotate the order per query
            if mode == "dpp":
                rows[mode], secs[mode] = run_dpp(q, used)
            else:
                rows[mode], secs[mode] = run_spark(q, used, _OFF if mode == "off" else {})
            totals[mode] += secs[mode]
        rep = dpp.last_report.to_dict()
        same = _rows(rows["off"]) == _rows(rows["spark"]) == _rows(rows["dpp"])
        failures += 0 if same else 1
        applied = [t for t in rep["tables"] if t["pruning"] == "applied"]
        kept = sum(t.get("partitions_kept") or 0 for t in applied)
        total = sum(t.get("partitions_total") or 0 for t in applied)
        listed = sum(t.get("files_listed") or 0 for t in rep["tables"])
        part = f"{kept}/{total}" if total else "none"
        print(f"{title:<48} {len(rows['dpp']):>4} {'yes' if same else 'NO':>4} {part:>10} "
              f"{listed:>6} {secs['off']:>6.2f} {secs['spark']:>7.2f} {secs['dpp']:>6.2f} "
              f"{secs['dpp'] / secs['spark']:>9.2f}")
        print(f"    {dpp.last_report.summary_line()}")
        for fact in FACTS:
            spark.catalog.dropTempView(fact)
    print(f"{'total':<48} {'':>4} {'':>4} {'':>10} {'':>6} {totals['off']:>6.2f} "
          f"{totals['spark']:>7.2f} {totals['dpp']:>6.2f} "
          f"{totals['dpp'] / totals['spark']:>9.2f}")
    spark.stop()
    if failures:
        print(f"[demo] {failures} queries returned different rows", file=sys.stderr)
        return 1
    print("[demo] all rows identical in the three modes (off, spark, dpp)")
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
