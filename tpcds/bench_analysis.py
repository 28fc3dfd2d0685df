"""Benchmark: pruning-plan analysis time over the 99 TPC-DS queries (no Spark needed).

``python -m tpcds.bench_analysis [--repeat N]`` translates the queries to Spark SQL, analyzes
each ``N`` times with :func:`dpp.frontends.sql.planner.analyze` against the TPC-DS schema (fact tables
partitioned as in DESIGN), and prints median / p90 / max milliseconds per query and how many
queries get pruning. Targets: median under 20 ms, p90 under 60 ms (pushing predicates into
derived tables, UNION branches and CTE uses included).
"""
from __future__ import annotations

import argparse
import statistics
import time
from typing import Optional

from dpp.core.domain import DataType
from dpp.frontends.sql.planner import TableInfo, analyze

PARTITIONED = {
    "store_sales": "ss_sold_date_sk", "store_returns": "sr_returned_date_sk",
    "catalog_sales": "cs_sold_date_sk", "catalog_returns": "cr_returned_date_sk",
    "web_sales": "ws_sold_date_sk", "web_returns": "wr_returned_date_sk",
}


def _duck_type(t: str) -> Optional[DataType]:
    t = t.upper()
    if t.startswith("DECIMAL"):
        return DataType.parse(t.lower())
    return {"INTEGER": DataType.parse("int"), "BIGINT": DataType.parse("bigint"),
            "DATE": DataType.parse("date"), "DOUBLE": DataType.parse("double"),
            }.get(t, DataType.parse("string") if ("CHAR" in t or t == "VARCHAR") else None)


def tpcds_schema() -> dict[str, TableInfo]:
    """The TPC-DS tables and column types, from the generator itself (scale 0: no rows)."""
    from tpcds.generate import connect

    con = connect()
    con.execute("CALL dsdgen(sf=0)")
    out = {}
    for (name,) in con.execute("SHOW TABLES").fetchall():
        cols = {c: _duck_type(t) for c, t, *_ in con.execute(f"DESCRIBE {name}").fetchall()}
        part = (PARTITIONED[name],) if name in PARTITIONED else ()
        out[name] = TableInfo(name, cols, part)
    return out


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tpcds.bench_analysis", description=__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    from tpcds.queries import load_queries

    schema = tpcds_schema()
    queries = [q for q in load_queries().values() if q.spark_sql]
    times: dict[str, float] = {}
    pruned = 0
    refs = pruned_refs = 0
    for q in queries:
        samples = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            plan = analyze(q.spark_sql, schema.get)  # type: ignore[arg-type]
            samples.append((time.perf_counter() - t0) * 1000)
        times[q.name] = statistics.median(samples)
        refs += len(plan.refs)
        pruned_refs += sum(1 for r in plan.refs if r.pruning and
                           (r.dynamic or any(c in PARTITIONED.values() for c in r.static.columns)))
        pruned += any(r.pruning for r in plan.refs)
    ms = sorted(times.values())
    p90 = ms[int(0.9 * (len(ms) - 1))]
    print(f"queries analysed: {len(ms)} (repeat {args.repeat}, median of repeats per query)")
    print(f"analysis ms per query: median {statistics.median(ms):.1f}, p90 {p90:.1f}, "
          f"max {ms[-1]:.1f} ({max(times, key=times.get)})")  # type: ignore[arg-type]
    print(f"queries with pruning: {pruned}/{len(ms)}; fact references pruned on their "
          f"partition column: {pruned_refs}/{refs}")
    verdict = "met" if statistics.median(ms) < 20 and p90 < 60 else "MISSED"
    print(f"targets median < 20 ms, p90 < 60 ms: {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
