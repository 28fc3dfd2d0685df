"""``tpcds`` command: ``generate`` data, list ``queries`` and what Spark runs, ``bench`` modes.

Examples::

    tpcds generate --sf 1 --out data/tpcds-sf1
    tpcds queries --data data/tpcds-sf1 [--execute]
    tpcds bench --data data/tpcds-sf1 --modes off,spark,dpp --queries q3,q7 --repeat 3 \\
        --out bench-out/run1 --table-kind both
    tpcds partitions --sizes 1000,10000,100000 --out bench-out/partitions [--lag 20,5]
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional, Sequence

log = logging.getLogger(__name__)


def _progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def make_spark(hive: bool, state_dir: Path, conf: Sequence[str] = (),
               connect: Optional[str] = None) -> Any:
    """A local SparkSession for the CLI; Hive support (Derby metastore in ``state_dir``) when
    catalog tables are benchmarked. Dynamic pruning settings are left at Spark's defaults:
    the modes set them per run. ``connect``: a Spark Connect URL (``sc://host:port``): a
    client of that server instead, given the same SQL settings (the server's own — master,
    driver memory — are set where it was started: ``connect_server_command``)."""
    from pyspark.sql import SparkSession

    if connect:
        spark = SparkSession.builder.remote(connect).getOrCreate()
        for k, v in {**CONNECT_SESSION_CONF, **_pairs(conf)}.items():
            spark.conf.set(k, v)
        return spark

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    state_dir.mkdir(parents=True, exist_ok=True)
    b = (SparkSession.builder.master(os.environ.get("TPCDS_SPARK_MASTER", "local[2]"))
         .appName("tpcds")
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "8")
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.driver.memory", os.environ.get("TPCDS_DRIVER_MEMORY", "6g"))
         .config("spark.sql.warehouse.dir", str(state_dir / "warehouse"))
         .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={state_dir}"))
    if hive:
        url = f"jdbc:derby:;databaseName={state_dir / 'metastore_db'};create=true"
        b = (b.config("javax.jdo.option.ConnectionURL", url)
             .config("spark.hadoop.javax.jdo.option.ConnectionURL", url)
             .enableHiveSupport())
    try:  # count Spark's own LIST/HEAD requests on file: (the bench's storage table)
        from hive_splits.storage_calls import counting_conf

        for k, v in counting_conf().items():
            b = b.config(k, v)
    except Exception as exc:
        print(f"(storage requests will not be counted: {exc})", file=sys.stderr)
    for k, v in _pairs(conf).items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# a classic bench session's SQL settings, set on a Connect client's session
CONNECT_SESSION_CONF = {"spark.sql.shuffle.partitions": "8", "spark.sql.session.timeZone": "UTC"}


def connect_server_command(port: int, state_dir: Path) -> list[str]:
    """The ``spark-submit`` that starts a local Spark Connect server with the settings a
    classic bench session has (master, driver memory, no UI; ``--connect`` sets the SQL ones
    on the client's session)."""
    import pyspark

    home = Path(pyspark.__file__).parent
    return [str(home / "bin" / "spark-submit"),
            "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
            "--master", os.environ.get("TPCDS_SPARK_MASTER", "local[2]"),
            "--driver-memory", os.environ.get("TPCDS_DRIVER_MEMORY", "6g"),
            "--conf", "spark.ui.enabled=false",
            "--conf", f"spark.sql.warehouse.dir={state_dir / 'warehouse'}",
            "--conf", f"spark.driver.extraJavaOptions=-Dderby.system.home={state_dir}",
            "--conf", f"spark.connect.grpc.binding.port={port}",
            "--conf", "spark.connect.grpc.binding.address=127.0.0.1"]


def _pairs(conf: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for kv in conf:
        k, sep, v = kv.partition("=")
        if not sep:
            raise SystemExit(f"--conf expects key=value, got {kv!r}")
        out[k.strip()] = v.strip()
    return out


def cmd_generate(args: argparse.Namespace) -> int:
    from tpcds.generate import GenerateError, Layout, generate

    t0 = time.perf_counter()
    try:
        layout = Layout(args.layout, args.rows_per_file, args.row_group_rows, args.buckets)
    except GenerateError as e:
        raise SystemExit(f"tpcds generate: {e}")
    try:
        m = generate(args.sf, args.out, force=args.force, progress=_progress,
                     threads=args.threads, layout=layout, memory_limit=args.memory_limit)
    except GenerateError as e:
        raise SystemExit(f"tpcds generate: {e}")
    rows = sum(t["rows"] for t in m["tables"].values())
    print(f"TPC-DS sf={args.sf:g} ({layout.name} layout) in {args.out}: "
          f"{len(m['tables'])} tables, {rows:,} rows, "
          f"{time.perf_counter() - t0:.1f}s (manifest {Path(args.out) / 'manifest.json'})")
    return 0


def cmd_queries(args: argparse.Namespace) -> int:
    from tpcds.queries import check_queries, load_queries, select_queries

    queries = select_queries(args.queries, load_queries(args.rewrite))
    if not args.data:
        for q in queries:
            status = "translated" if q.spark_sql else f"NOT TRANSLATED: {q.error}"
            rw = f" (rewrites: {', '.join(q.rewrites)})" if q.rewrites else ""
            print(f"{q.name:<5} {status}{rw}")
            if args.show:
                print(q.spark_sql or q.duckdb_sql, end="\n\n")
        return 0
    from tpcds.bench import open_path_tables
    from tpcds.generate import TABLES
    from tpcds.reference import DuckDBReference

    spark = make_spark(False, Path(tempfile.mkdtemp(prefix="tpcds-q-")), args.conf)
    open_path_tables(spark, args.data, [t for t in TABLES if (Path(args.data) / t).is_dir()])
    ref = DuckDBReference(args.data) if args.execute else None
    statuses = check_queries(spark, queries, execute=args.execute, reference=ref)
    bad = 0
    for s in statuses:
        rw = f" (rewrites: {', '.join(s.rewrites)})" if s.rewrites else ""
        rows = f", {s.rows} rows" if s.rows is not None else ""
        if s.ok:
            print(f"{s.name:<5} ok{rows}{rw}")
        else:
            bad += 1
            print(f"{s.name:<5} FAILS at {s.stage}: {s.reason}{rw}")
    print(f"{len(statuses) - bad}/{len(statuses)} queries run in Spark"
          + (" and match DuckDB" if args.execute else " (EXPLAIN only; --execute runs them)"))
    if args.json:
        Path(args.json).write_text(json.dumps([s.to_dict() for s in statuses], indent=2))
    spark.stop()
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from tpcds.bench import (BenchConfig, BenchError, failures, parse_kinds, parse_modes,
                             read_partial, run_bench, timed_out, write_outputs)

    out = Path(args.out)
    try:
        if args.query_timeout is not None and args.query_timeout <= 0:
            raise BenchError(f"--query-timeout must be a positive number of seconds, "
                             f"not {args.query_timeout}")
        cfg = BenchConfig(data_dir=str(Path(args.data).resolve()), modes=parse_modes(args.modes),
                          queries=args.queries, repeat=args.repeat,
                          table_kinds=parse_kinds(args.table_kind), warmup=not args.no_warmup,
                          check=not args.no_check, rules=list(args.rewrite),
                          query_timeout_s=args.query_timeout)
        previous = read_partial(out) if args.resume else None
    except BenchError as e:
        print(f"tpcds bench: {e}", file=sys.stderr)
        return 2
    if args.resume and previous is None:
        print(f"tpcds bench: nothing to resume in {out}; starting afresh", file=sys.stderr)
    spark = make_spark("catalog" in cfg.table_kinds, out / "spark-state", args.conf,
                       connect=args.connect)
    try:
        result = run_bench(spark, cfg, progress=_progress, resume=previous,
                           checkpoint=lambda partial: write_outputs(partial, out, chart=False))
    except BenchError as e:
        print(f"tpcds bench: {e}", file=sys.stderr)
        return 2
    paths = write_outputs(result, out)
    spark.stop()
    print(Path(paths["md"]).read_text())
    print(f"wrote {paths['json']}, {paths['md']}, {paths['chart']}")
    cut = timed_out(result)
    if cut:
        print(f"\n{len(cut)} run(s) NOT RUN: past --query-timeout {cfg.query_timeout_s:g}s: "
              + ", ".join(f"{r['query']}/{r['mode']}/{r['kind']}" for r in cut), file=sys.stderr)
    bad = failures(result)
    if bad:
        print("\n" + "!" * 78, file=sys.stderr)
        for r in bad:
            what = "MISMATCH vs DuckDB" if r.get("correct") is False else "ERROR"
            print(f"!! {what}: {r['query']} mode={r['mode']} tables={r['kind']} rep={r['rep']}: "
                  f"{r.get('mismatch') or r.get('error')}", file=sys.stderr)
        print("!" * 78, file=sys.stderr)
        return 1
    return 0


def dpp_connect_server_command(port: int, state_dir: Path, data: Optional[str]) -> list[str]:
    """``dpp connect-server`` with the classic bench session's settings (master, driver
    memory, no UI, a Derby metastore in ``state_dir`` as the catalog kind has) and, with
    ``data``, every partitioned fact declared (``global_temp.<fact>`` to its clients)."""
    from tpcds.bench import FACT_PARTITIONS

    url = f"jdbc:derby:;databaseName={state_dir / 'metastore_db'};create=true"
    conf = {"spark.driver.memory": os.environ.get("TPCDS_DRIVER_MEMORY", "6g"),
            "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
            "spark.sql.warehouse.dir": str(state_dir / "warehouse"),
            "spark.driver.extraJavaOptions": f"-Dderby.system.home={state_dir}",
            "spark.sql.catalogImplementation": "hive",
            "spark.hadoop.javax.jdo.option.ConnectionURL": url}
    if data:
        for t in FACT_PARTITIONS:
            if (Path(data) / t).is_dir():
                conf[f"spark.dpp.tables.{t}"] = str((Path(data) / t).resolve())
    cmd = [sys.executable, "-m", "dpp.connect_server", "--port", str(port),
           "--host", "127.0.0.1", "--master", os.environ.get("TPCDS_SPARK_MASTER", "local[2]")]
    for k, v in conf.items():
        cmd += ["--conf", f"{k}={v}"]
    return cmd


def cmd_connect_server(args: argparse.Namespace) -> int:
    import subprocess

    state = Path(args.state or tempfile.mkdtemp(prefix="tpcds-connect-"))
    state.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)}
    cmd = (dpp_connect_server_command(args.port, state, args.data) if args.dpp
           else connect_server_command(args.port, state))
    print("starting: " + " ".join(cmd), file=sys.stderr)
    return subprocess.call(cmd, env=env)


def cmd_partitions(args: argparse.Namespace) -> int:
    from tpcds.partition_scale import (KINDS, MODES, ScaleConfig, render_markdown, render_plot,
                                       run_scale)

    def ints(text: str) -> list[int]:
        try:
            return [int(x.replace("_", "")) for x in text.split(",") if x.strip()]
        except ValueError:
            raise SystemExit(f"tpcds partitions: --sizes takes numbers, not {text!r}")

    def words(text: str, allowed: tuple[str, ...], flag: str) -> list[str]:
        got = [x.strip() for x in text.split(",") if x.strip()]
        bad = [x for x in got if x not in allowed]
        if bad or not got:
            raise SystemExit(f"tpcds partitions: {flag} takes {', '.join(allowed)}, "
                             f"not {text!r}")
        return got

    lag = None
    if args.lag:
        try:
            a, b = (float(x) for x in args.lag.split(","))
        except ValueError:
            raise SystemExit(f"tpcds partitions: --lag takes LIST_MS,HEAD_MS, not {args.lag!r}")
        lag = (a, b)
    limits: dict[str, int] = {}
    for spec in args.limit:
        key, _, n = spec.partition("=")
        if key not in (*KINDS, *MODES) or not n.strip().isdigit():
            raise SystemExit(f"tpcds partitions: --limit takes KIND_OR_MODE=N with a kind or "
                             f"mode of {', '.join((*KINDS, *MODES))}, not {spec!r}")
        limits[key] = int(n)
    cfg = ScaleConfig(Path(args.data), sorted(ints(args.sizes)),
                      words(args.kinds, KINDS, "--kinds"), words(args.modes, MODES, "--modes"),
                      keep=args.keep, lag=lag, repeat=max(1, args.repeat), limits=limits)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    spark = make_spark("catalog" in cfg.kinds, out / "state" if not args.data else
                       Path(args.data) / "state", args.conf)
    try:
        result = run_scale(spark, cfg, _progress)
    finally:
        spark.stop()
    if args.conf:   # the settings the run was made under, shown with its results
        result["config"]["conf"] = _pairs(args.conf)
    (out / "result.json").write_text(json.dumps(result, indent=1))
    (out / "report.md").write_text(render_markdown(result))
    others = [json.loads(Path(p).read_text()) for p in args.plot_with]
    render_plot([*others, result], out / "scale.png")
    print(render_markdown(result))
    print(f"written: {out / 'result.json'}, {out / 'report.md'}, {out / 'scale.png'}")
    wrong = [r for r in result["runs"] if r["ok"] and not r["correct"]]
    failed = [r for r in result["runs"] if not r["ok"]]
    return 1 if wrong or failed else 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="tpcds", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = ap.add_subparsers(dest="cmd", required=True)

    g = sub.add_parser("generate", help="generate TPC-DS Parquet data with DuckDB's dsdgen")
    g.add_argument("--sf", type=float, required=True, help="scale factor (1 = about 1 GB)")
    g.add_argument("--out", required=True, help="output folder")
    g.add_argument("--force", action="store_true", help="rewrite tables already generated")
    g.add_argument("--threads", type=int, default=None, help="DuckDB threads (default: all)")
    g.add_argument("--memory-limit", default=None,
                   help="DuckDB's memory bound while generating, e.g. 4GB (default "
                        "$TPCDS_GENERATE_MEMORY or 4GB); it spills to OUT/.dsdgen past it")
    g.add_argument("--layout", choices=("default", "clustered", "bucketed"), default="default",
                   help="clustered: store/catalog/web sales sorted by item key inside each date "
                        "partition, several files per partition (tight file statistics); "
                        "bucketed: the same facts written by Spark with bucketBy(--buckets, "
                        "item key) under the date partitioning")
    g.add_argument("--rows-per-file", type=int, default=512,
                   help="clustered layout: at most this many rows per file (default 512)")
    g.add_argument("--row-group-rows", type=int, default=128,
                   help="clustered layout: at most this many rows per row group (default 128)")
    g.add_argument("--buckets", type=int, default=8,
                   help="bucketed layout: Spark's bucket count (default 8)")
    g.set_defaults(func=cmd_generate)

    q = sub.add_parser("queries", help="list the 99 queries and whether Spark runs them")
    q.add_argument("--data", default=None, help="generated data folder (to check in Spark)")
    q.add_argument("--queries", default="all", help="all, or e.g. q3,q7")
    q.add_argument("--execute", action="store_true",
                   help="run each query and compare with DuckDB (not only EXPLAIN)")
    q.add_argument("--show", action="store_true", help="print the Spark SQL (without --data)")
    q.add_argument("--json", default=None, help="write the statuses to this JSON file")
    q.add_argument("--conf", action="append", default=[], help="extra Spark conf key=value")
    q.add_argument("--rewrite", action="append", default=[],
                   help="extra rewrite rule to apply (see tpcds.queries.RULES)")
    q.set_defaults(func=cmd_queries)

    b = sub.add_parser("bench", help="benchmark modes off, spark, dpp side by side")
    b.add_argument("--data", required=True, help="generated data folder")
    b.add_argument("--modes", default="off,spark,dpp",
                   help="comma list of off, spark, dpp, dpp-nostats (dpp: plain spark.sql "
                        "through dpp's optimizer hook, the SQL-text analysis on a Spark "
                        "Connect client; dpp-nostats: dpp with "
                        "spark.dpp.statsPruning.enabled=false; text: dpp's SQL-text analysis "
                        "on this session without the hook, for comparison)")
    b.add_argument("--queries", default="all", help="all, or e.g. q3,q7")
    b.add_argument("--repeat", type=int, default=1, help="measured runs per query and mode")
    b.add_argument("--out", required=True, help="report folder")
    b.add_argument("--table-kind", default="path", help="path, catalog or both")
    b.add_argument("--no-warmup", action="store_true", help="skip the unmeasured warm-up")
    b.add_argument("--no-check", action="store_true", help="skip the DuckDB comparison")
    b.add_argument("--query-timeout", type=float, default=None, metavar="SECONDS",
                   help="cancel a run past this many seconds and report the query as not run")
    b.add_argument("--resume", action="store_true",
                   help="keep the queries an earlier, stopped run in --out finished; run the rest")
    b.add_argument("--conf", action="append", default=[], help="extra Spark conf key=value")
    b.add_argument("--rewrite", action="append", default=[],
                   help="extra rewrite rule to apply (see tpcds.queries.RULES)")
    b.add_argument("--connect", default=None, metavar="sc://HOST:PORT",
                   help="run through this Spark Connect server (start one with "
                        "`tpcds connect-server`); timings, rows and dpp's "
                        "report are measured, Spark's scan metrics and request counts are not")
    b.set_defaults(func=cmd_bench)

    ps = sub.add_parser("partitions", help="how dpp's cost grows with the fact's partition "
                                           "count (1,000 to 100,000), beside Spark's own DPP")
    ps.add_argument("--data", default="data/partition-scale",
                    help="where the facts are generated (kept between runs)")
    ps.add_argument("--sizes", default="1000,10000,100000", help="partition counts")
    ps.add_argument("--kinds", default=",".join(("path", "declared", "catalog")),
                    help="comma list of path, declared, catalog")
    ps.add_argument("--modes", default="spark,dpp", help="comma list of spark, dpp")
    ps.add_argument("--keep", type=int, default=30, help="partitions the join keeps")
    ps.add_argument("--lag", default=None, metavar="LIST_MS,HEAD_MS",
                    help="read through lagfs:, sleeping this long per LIST and per HEAD "
                         "(e.g. 20,5): object-store latency, measured")
    ps.add_argument("--repeat", type=int, default=1, help="runs per cell (the first is shown)")
    ps.add_argument("--limit", action="append", default=[], metavar="KIND_OR_MODE=N",
                    help="run a kind or mode only up to N partitions (e.g. spark=10000: Spark's "
                         "own listing of 100,000 folders takes many minutes a query)")
    ps.add_argument("--out", required=True, help="report folder (result.json, report.md)")
    ps.add_argument("--plot-with", action="append", default=[], metavar="RESULT_JSON",
                    help="another run's result.json drawn beside this one in scale.png")
    ps.add_argument("--conf", action="append", default=[], help="extra Spark conf key=value")
    ps.set_defaults(func=cmd_partitions)

    c = sub.add_parser("connect-server", help="run a local Spark Connect server with the "
                                              "bench session's settings (until stopped)")
    c.add_argument("--port", type=int, default=15002)
    c.add_argument("--state", default=None, help="folder for its warehouse and metastore")
    c.add_argument("--dpp", action="store_true",
                   help="start `dpp connect-server` (dpp's hook inside the server) instead of "
                        "Spark's own; bench it with --modes spark,dpp")
    c.add_argument("--data", default=None,
                   help="with --dpp: declare this data's partitioned facts on the server "
                        "(global_temp.<fact> views of parquet.`<folder>`, read per query)")
    c.set_defaults(func=cmd_connect_server)
    return ap


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    return int(args.func(args) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
