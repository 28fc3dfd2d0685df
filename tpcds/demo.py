"""The demo job: a small TPC-DS star schema, a handful of star joins, pruning off and on.

``make demo`` runs it. It generates scale 0.1 once (cached under ``data/``), then for each
query runs Spark with every dynamic pruning off and this runtime on the same files, checks the
rows are identical, and prints what was skipped and both times. Exit code 1 if any rows differ.
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
    failures = 0
    print(f"{'query':<48} {'rows':>5} {'same':>5} {'partitions kept':>18} {'files listed':>14}"
          f" {'off s':>7} {'dpp s':>7}")
    for title, q in QUERIES.items():
        # pruning off: Spark opens each fact table afresh (its listing) and runs unpruned
        for k, v in _OFF.items():
            spark.conf.set(k, v)
        used = [f for f in FACTS if f in q]
        t0 = time.perf_counter()
        for fact in used:
            spark.read.parquet(str(data / fact)).createOrReplaceTempView(fact)
        off_rows = spark.sql(q).collect()
        t_off = time.perf_counter() - t0
        for k in _OFF:
            spark.conf.unset(k)
        for fact in FACTS:
            spark.catalog.dropTempView(fact)
        # this runtime: tables registered by path, opened through the split loader
        t0 = time.perf_counter()
        for fact in used:
            dpp.register_table(fact, str(data / fact))
        dpp_rows = dpp.collect(q)
        t_dpp = time.perf_counter() - t0
        rep = dpp.last_report.to_dict()
        same = _rows(off_rows) == _rows(dpp_rows)
        failures += 0 if same else 1
        kept = sum(t.get("partitions_kept") or 0 for t in rep["tables"] if t["pruning"] == "applied")
        total = sum(t.get("partitions_total") or 0 for t in rep["tables"]
                    if t["pruning"] == "applied")
        listed = sum(t.get("files_listed") or 0 for t in rep["tables"])
        part = f"{kept}/{total}" if total else "not pruned"
        print(f"{title:<48} {len(dpp_rows):>5} {'yes' if same else 'NO':>5} {part:>18} "
              f"{listed:>14} {t_off:>7.2f} {t_dpp:>7.2f}")
        print(f"    {dpp.last_report.summary_line()}")
        for fact in FACTS:
            spark.catalog.dropTempView(fact)
    spark.stop()
    if failures:
        print(f"[demo] {failures} queries returned different rows", file=sys.stderr)
        return 1
    print("[demo] all rows identical with pruning off and on")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
