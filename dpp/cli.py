"""The ``dpp`` command: ``dpp report FILE [--html OUT]``, ``dpp explain --table NAME=PATH SQL``."""
from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from dpp.core.errors import DppError


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="dpp", description="dynamic partition pruning tools")
    sub = ap.add_subparsers(dest="cmd", required=True)
    rp = sub.add_parser("report", help="summarize a JSON-lines file of job reports")
    rp.add_argument("file", help="the file spark.dpp.report.path appends to")
    rp.add_argument("--html", metavar="OUT", help="also write an HTML page with a chart per job")
    rn = sub.add_parser("run", help="run a command (dpp run -- python job.py) with dpp "
                                    "switched on for every SparkSession it creates")
    rn.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a Spark or spark.dpp.* setting for the job's sessions, as "
                         "spark-submit --conf (repeatable; the job's own .config wins)")
    rn.add_argument("command", nargs=argparse.REMAINDER,
                    help="the command and its arguments, after --")
    ex = sub.add_parser("explain", help="print the pruning plan of a query (starts Spark)")
    ex.add_argument("--table", action="append", default=[], metavar="NAME=PATH",
                    help="register a Hive-partitioned Parquet folder (repeatable)")
    ex.add_argument("sql")
    from dpp import connect_server

    cs = sub.add_parser("connect-server", help="run a Spark Connect server that prunes every "
                                               "session it serves (foreground)")
    connect_server.add_arguments(cs)
    from dpp import doctor

    dr = sub.add_parser("doctor", help="check what dpp runs with here: Spark line, hook jar, "
                                       "hook in a session, coordinator, settings")
    doctor.add_arguments(dr)
    args = ap.parse_args(argv)
    if args.cmd == "doctor":
        return doctor.run(args)
    if args.cmd == "connect-server":
        return connect_server.run(args)
    if args.cmd == "run":
        from dpp.autoenable import parse_conf, run_main

        return run_main(args.command, parse_conf(args.conf))
    try:
        if args.cmd == "report":
            from dpp.report_cli import main as report_main

            return report_main([args.file] + (["--html", args.html] if args.html else []))
        if args.cmd == "explain":
            from pyspark.sql import SparkSession

            from dpp.session import DppSession

            spark = SparkSession.builder.master("local[2]").appName("dpp-explain") \
                .config("spark.ui.enabled", "false").getOrCreate()
            dpp = DppSession(spark)
            for spec in args.table:
                name, _, path = spec.partition("=")
                if not path:
                    ap.error(f"--table {spec!r}: expected NAME=PATH")
                dpp.register_table(name, path)
            print(dpp.explain(args.sql))
            return 0
    except (DppError, OSError) as exc:
        print(f"dpp: error: {exc}", file=sys.stderr)
        return 2
    return 1  # pragma: no cover


if __name__ == "__main__":
    raise SystemExit(main())
