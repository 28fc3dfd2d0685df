"""The summary table of job reports: one row per job, then totals.

Shared by the ``dpp report`` text output (:mod:`dpp.report_cli`) and the HTML page
(:mod:`dpp.runtime.report_html`); a module of its own so neither of those imports the other.
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence

from dpp.runtime.report import JobReport, human_bytes, percent, shorten

__all__ = ["COLUMNS", "RIGHT_ALIGNED", "query_label", "job_row", "totals_row", "summary_rows",
           "format_table", "format_summary"]

COLUMNS = ("query", "started", "tables", "kept/total", "pruned", "skipped", "filters",
           "total s")
# Numbers read best right-aligned; names and lists left-aligned.
RIGHT_ALIGNED = {"kept/total", "pruned", "skipped", "total s"}


def _partitions(reports: Sequence[JobReport]) -> tuple[int, int]:
    """Kept and total partitions over every table whose partitions were enumerated.

    Unpruned tables that were enumerated count as kept in full: the percentage is then of
    what the job could have read, not only of the tables that happened to be pruned.
    """
    kept = total = 0
    for r in reports:
        for t in r.tables:
            if t.partitions_total is None:
                continue
            total += t.partitions_total
            kept += t.partitions_kept if t.partitions_kept is not None else t.partitions_total
    return kept, total


def _outcomes(reports: Sequence[JobReport]) -> str:
    """``2 complete, 1 timeout``: counts per filter outcome, most frequent first."""
    c = Counter(f.outcome for r in reports for f in r.filters)
    if not c:
        return "-"
    return ", ".join(f"{n} {o}" for o, n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))


def _total_seconds(reports: Sequence[JobReport]) -> str:
    known = [r.phases["total"] for r in reports if "total" in r.phases]
    return f"{sum(known):.2f}" if known else "-"


def _skipped(reports: Sequence[JobReport]) -> str:
    """Bytes of the files skipped. A pruned partition's files are never listed (that is the
    saving), so their bytes are unknown: ``not listed`` then, or the known bytes with ``+``
    when some were counted (files skipped by statistics or buckets)."""
    known = sum(t.bytes_skipped for r in reports for t in r.tables)
    unlisted = any(t.partitions_total is not None and t.partitions_kept is not None
                   and t.partitions_kept < t.partitions_total and not t.bytes_skipped
                   for r in reports for t in r.tables)
    if unlisted:
        return f"{human_bytes(known)}+" if known else "not listed"
    return human_bytes(known)


def _row_numbers(reports: Sequence[JobReport]) -> list[str]:
    kept, total = _partitions(reports)
    return [f"{kept}/{total}" if total else "-", percent(total - kept, total),
            _skipped(reports), _outcomes(reports), _total_seconds(reports)]


QUERY_WIDTH = 48


def query_label(r: JobReport) -> str:
    """The query as a reader knows it: its text (SQL, or the call site and the optimizer's
    view of a DataFrame job), shortened; the hash only when there is no text."""
    return shorten(r.query_text or "", QUERY_WIDTH) or r.query_hash


def job_row(r: JobReport) -> list[str]:
    """One job's cells, in :data:`COLUMNS` order."""
    tables = list(dict.fromkeys(t.table for t in r.tables))  # in query order, once each
    started = r.started_at[:19].replace("T", " ")
    return [query_label(r), started, ",".join(tables) or "-"] + _row_numbers([r])


def totals_row(reports: Sequence[JobReport]) -> list[str]:
    """The totals over all jobs; the second cell counts jobs, the third distinct tables."""
    tables = {t.table for r in reports for t in r.tables}
    n = len(reports)
    return (["TOTAL", f"{n} job{'s' if n != 1 else ''}",
             f"{len(tables)} table{'s' if len(tables) != 1 else ''}"]
            + _row_numbers(reports))


def summary_rows(reports: Sequence[JobReport]) -> tuple[list[str], list[list[str]], list[str]]:
    """(header, one row per job, totals row): shared by the text table and the HTML page."""
    return list(COLUMNS), [job_row(r) for r in reports], totals_row(reports)


def format_table(header: list[str], rows: list[list[str]], totals: list[str]) -> str:
    """Aligned plain text with rules under the header and above the totals."""
    everything = [header, *rows, totals]
    widths = [max(len(row[i]) for row in everything) for i in range(len(header))]

    def fmt(row: list[str]) -> str:
        cells = [c.rjust(w) if h in RIGHT_ALIGNED else c.ljust(w)
                 for c, w, h in zip(row, widths, header)]
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([fmt(header), rule, *(fmt(r) for r in rows), rule, fmt(totals)])


def format_summary(reports: Sequence[JobReport]) -> str:
    """The text ``dpp report`` prints."""
    return format_table(*summary_rows(reports))
