"""``python -m tests.peer``: every peer case in every variant; counts, then the exceptions.

The last line printed is ``peer suite: <N> case runs, dpp pruned <P> (...), Spark pruned <S>,
mismatches <M> (Spark's own: <K>)``: case runs whose rows under dpp (under Spark's own pruning)
differ from those with every pruning off; the exit status is 1 on any mismatch of either.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def main(argv: list[str] | None = None) -> int:
    from tests.peer.runner import AQE, KINDS, Tables, Tally, all_tables, run_suite, variants
    from tests.peer.suites import SUITES, load

    p = argparse.ArgumentParser(prog="python -m tests.peer", description=__doc__)
    p.add_argument("--suites", default=",".join(SUITES), help="comma-separated: spark,trino")
    p.add_argument("--kinds", default=",".join(KINDS))
    p.add_argument("--aqe", default=",".join(AQE), help="on,off")
    p.add_argument("--only", default="", help="run the cases whose id contains this")
    p.add_argument("--out", type=Path, help="write every case run as JSON lines here")
    p.add_argument("-v", "--verbose", action="store_true", help="a line per case run")
    a = p.parse_args(argv)

    cases, shared = load(tuple(a.suites.split(",")))
    cases = [c for c in cases if a.only in c.id]
    chosen = variants(tuple(a.kinds.split(",")), tuple(a.aqe.split(",")))

    import dpp
    from tests.fuzz.cli import classic_session

    work = Path(tempfile.mkdtemp(prefix="dpp-peer-"))
    spark = classic_session(work)
    spark.sparkContext.setLogLevel("ERROR")
    session = dpp.enable(spark)
    if session.optimizer_hook is None:
        print(f"peer suite: no optimizer hook: {session.hook_note}", file=sys.stderr)
        return 2
    tables = Tables(spark, work, all_tables(cases, shared))
    tally = Tally()
    out = a.out.open("w") if a.out else None
    started = time.monotonic()
    try:
        for r in run_suite(spark, session, cases, tables, lambda i, c: chosen):
            tally.add(r)
            if out:
                out.write(json.dumps(r.to_dict()) + "\n")
            if a.verbose or r.mismatched:
                mark = "MISMATCH " + r.why if r.mismatched else "pruned: " + ",".join(r.pruned)
                print(f"{r.case} [{r.variant}] {mark}", flush=True)
    finally:
        if out:
            out.close()
        tables.close()
        spark.stop()
    print(f"Spark pruned, dpp mode did not ({len(tally.spark_only)}):")
    for s in tally.spark_only:
        print(f"  {s}")
    print(f"errors in off mode (both raised): {tally.errors_in_off}; "
          f"{time.monotonic() - started:.0f} s")
    print(tally.line())
    return 1 if sum(tally.mismatched.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
