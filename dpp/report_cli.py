"""``dpp report FILE [--html OUT]``: a report file read back as a table, and as a page.

FILE is the JSON-lines file ``spark.dpp.report.path`` appends to (one :class:`JobReport` per
line). The table has one row per job, then a totals row, so a run of many jobs can be judged
at a glance: how much was pruned, how many bytes were not read, which filters did not make it.
``--html OUT`` also writes a self-contained page with a chart per job (see
:mod:`dpp.runtime.report_html`).

``main`` takes the arguments *after* the ``report`` word, so the ``dpp`` console script can
hand it ``argv[1:]``; ``python -m dpp.report_cli FILE`` works too.
"""
from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from dpp.runtime.report import ReportError, read_jsonl
from dpp.runtime.report_html import write_html
from dpp.runtime.report_summary import (COLUMNS, format_summary, format_table, job_row, summary_rows,
                                totals_row)

__all__ = ["COLUMNS", "job_row", "totals_row", "summary_rows", "format_table",
           "format_summary", "build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="dpp report",
        description="Summarize a JSON-lines file of dpp job reports: one row per job, then "
                    "totals.")
    ap.add_argument("file", help="the file spark.dpp.report.path appends to")
    ap.add_argument("--html", metavar="OUT",
                    help="also write a self-contained HTML page with a chart per job")
    return ap


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs ``dpp report``; returns the exit status (0 ok, 2 bad arguments or bad file).

    Errors in the file are reported as ``dpp report: error: FILE:LINE: field ...`` on
    stderr, not as a traceback: the user needs the line and field, not our stack.
    """
    ap = build_parser()
    try:
        args = ap.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:  # argparse exits on --help and on bad arguments
        return int(exc.code or 0)
    try:
        reports = read_jsonl(args.file)
        print(format_summary(reports))
        if args.html:
            out = write_html(reports, args.html)
            print(f"wrote {out}", file=sys.stderr)
    except (ReportError, OSError) as exc:
        print(f"dpp report: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
