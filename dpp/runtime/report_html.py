"""The HTML page of ``dpp report FILE --html OUT``: the summary table, then one section per job
with its chart, tables, filters and notes.

Self-contained on purpose (charts are PNG data URIs, styles inline, no scripts, no network):
the page is attached to tickets and opened from CI artifacts, where nothing else travels
with it. Charts are drawn with matplotlib's Agg canvas directly (``Figure`` +
``FigureCanvasAgg``), not pyplot: no global backend switch and no pyplot state, so it works
headless and from any thread. matplotlib is imported only when a page is drawn.
"""
from __future__ import annotations

import base64
import html
import io
from pathlib import Path
from typing import Any, Sequence

from dpp.runtime.report import PHASES, JobReport, TableReport, human_bytes, percent
from dpp.runtime.report_summary import RIGHT_ALIGNED, summary_rows

__all__ = ["job_chart_png", "render_html", "write_html"]

_KEPT, _PRUNED, _PHASE, _TOTAL = "#4c72b0", "#dd8452", "#55a868", "#8c8c8c"

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}
td.n{text-align:right}
tr.total td{font-weight:bold}
section.job{border-top:2px solid #ddd;margin-top:2em;padding-top:.5em}
pre{background:#f6f6f6;padding:6px;white-space:pre-wrap}
code{background:#f6f6f6;padding:0 3px}
.bad{color:#b00}
"""


def _table_label(t: TableReport) -> str:
    return f"{t.table} {t.alias}" if t.alias and t.alias != t.table else t.table


def job_chart_png(report: JobReport) -> bytes:
    """One PNG per job: partitions kept vs pruned per table (left), phase seconds (right).

    A table whose partitions were never enumerated (not prunable, so dpp did not list it) is
    drawn as an empty bar labelled ``not listed`` rather than left out: the reader sees every
    table of the query.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    tables = report.tables
    height = max(2.4, 0.9 + 0.35 * max(len(tables), len(report.phases), 1))
    fig = Figure(figsize=(10, height), dpi=80)
    FigureCanvasAgg(fig)
    ax1, ax2 = fig.subplots(1, 2)

    if tables:
        names = [_table_label(t) + ("" if t.partitions_total is not None else " (not listed)")
                 for t in tables]
        totals = [t.partitions_total or 0 for t in tables]
        kept = [t.partitions_kept if t.partitions_kept is not None else total
                for t, total in zip(tables, totals)]
        pruned = [total - k for total, k in zip(totals, kept)]
        ys = list(range(len(tables)))
        ax1.barh(ys, kept, color=_KEPT, label="kept")
        ax1.barh(ys, pruned, left=kept, color=_PRUNED, label="pruned")
        ax1.set_yticks(ys, names, fontsize=8)
        ax1.invert_yaxis()  # first table on top, as in the tables below the chart
        ax1.legend(loc="best", fontsize=7)
    else:
        ax1.text(0.5, 0.5, "no table references", ha="center", va="center",
                 transform=ax1.transAxes)
        ax1.set_yticks([])
    ax1.set_title("partitions", fontsize=10)

    order = [p for p in PHASES if p in report.phases]
    order += [p for p in report.phases if p not in PHASES]
    if order:
        ys = list(range(len(order)))
        ax2.barh(ys, [report.phases[p] for p in order],
                 color=[_TOTAL if p == "total" else _PHASE for p in order])
        ax2.set_yticks(ys, order, fontsize=8)
        ax2.invert_yaxis()
    else:
        ax2.text(0.5, 0.5, "no phases recorded", ha="center", va="center",
                 transform=ax2.transAxes)
        ax2.set_yticks([])
    ax2.set_title("phases (s; build and wait overlap)", fontsize=10)

    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def _e(v: Any) -> str:
    return html.escape("" if v is None else str(v), quote=True)


def _cells(values: Sequence[Any], numeric: Sequence[bool] | None = None) -> str:
    numeric = numeric or [False] * len(values)
    return "".join(f"<td class='n'>{_e(v)}</td>" if n else f"<td>{_e(v)}</td>"
                   for v, n in zip(values, numeric))


def _head(names: Sequence[str]) -> str:
    return "<tr>" + "".join(f"<th>{_e(n)}</th>" for n in names) + "</tr>"


def _tables_html(r: JobReport) -> str:
    if not r.tables:
        return "<p>No table references.</p>"
    cols = ("table", "alias", "pruning", "reason", "kept/total", "pruned", "static",
            "dynamic", "files kept", "files skipped", "by statistics", "bytes kept",
            "bytes skipped", "folders listed", "wait s", "filters")
    num = [False] * 4 + [True] * 11 + [False]
    rows = [_head(cols)]
    for t in r.tables:
        total = t.partitions_total
        kept = t.partitions_kept if t.partitions_kept is not None else total
        filt = ", ".join(f"{f.get('filter_id')}: {f.get('outcome')}"
                         + ("" if f.get("arrived") else " (not arrived)") for f in t.filters)
        rows.append("<tr>" + _cells([
            t.table, t.alias or "", t.pruning, t.reason or "",
            f"{kept}/{total}" if total is not None else "not listed",
            percent(total - kept, total) if total and kept is not None else "-",
            t.pruned_static, t.pruned_dynamic, t.files_kept, t.files_skipped,
            t.files_pruned_stats, human_bytes(t.bytes_kept), human_bytes(t.bytes_skipped),
            t.folders_listed, f"{t.wait_seconds:.2f}", filt or "-"], num) + "</tr>")
    return "<table>" + "".join(rows) + "</table>"


def _filters_html(r: JobReport) -> str:
    if not r.filters:
        return "<p>No dynamic filters.</p>"
    cols = ("filter", "build key", "probe key", "kind", "distinct", "build rows", "encoded",
            "parts", "cache hit", "outcome", "reason", "build s", "wait s")
    num = [False] * 4 + [True] * 4 + [False] * 3 + [True] * 2
    rows = [_head(cols)]
    for f in r.filters:
        probe = ".".join(x for x in (f.probe_table, f.probe_column) if x)
        rows.append("<tr>" + _cells([
            f.filter_id, f.label(), probe or "-", f.kind,
            "-" if f.distinct_values is None else f.distinct_values,
            "-" if f.build_rows is None else f.build_rows,
            human_bytes(f.encoded_bytes) if f.encoded_bytes is not None else "-",
            f"{f.parts_reported}/{f.parts_expected}", "yes" if f.cache_hit else "no",
            f.outcome, f.reason or "",
            "-" if f.build_seconds is None else f"{f.build_seconds:.2f}",
            "-" if f.wait_seconds is None else f"{f.wait_seconds:.2f}"], num) + "</tr>")
    queries = "".join(f"<p>build query of {_e(f.filter_id)}:</p><pre>{_e(f.build_query)}</pre>"
                      for f in r.filters if f.build_query)
    return "<table>" + "".join(rows) + "</table>" + (
        f"<details><summary>build queries</summary>{queries}</details>" if queries else "")


def _job_html(r: JobReport) -> str:
    png = base64.b64encode(job_chart_png(r)).decode("ascii")
    scan = ", ".join(f"{k.replace('_', ' ')}: {'-' if v is None else v}"
                     for k, v in r.spark_scan.items())
    parts = [
        f"<section class='job' id='job-{_e(r.query_id)}'>",
        f"<h2>job {_e(r.query_hash)} <small>query id <code>{_e(r.query_id)}</code></small></h2>",
        f"<p><b>{_e(r.summary_line())}</b></p>",
        f"<p>started {_e(r.started_at)} · kind {_e(r.kind)} · "
        f"dpp {'enabled' if r.enabled else 'disabled'} · Spark scan: {_e(scan)}</p>",
    ]
    if r.error:
        parts.append(f"<p class='bad'>error: {_e(r.error)}</p>")
    parts.append(f"<img alt='partitions and phases of job {_e(r.query_hash)}' "
                 f"src='data:image/png;base64,{png}'>")
    parts.append("<h3>tables</h3>" + _tables_html(r))
    parts.append("<h3>filters</h3>" + _filters_html(r))
    if r.analysis_notes:
        parts.append("<h3>analysis notes</h3><ul>"
                     + "".join(f"<li>{_e(n)}</li>" for n in r.analysis_notes) + "</ul>")
    parts.append(f"<details><summary>query text</summary><pre>{_e(r.query_text)}</pre>"
                 "</details>")
    if r.settings:
        parts.append("<details><summary>settings</summary><table>"
                     + "".join(f"<tr>{_cells([k, v])}</tr>" for k, v in sorted(r.settings.items()))
                     + "</table></details>")
    parts.append("</section>")
    return "\n".join(parts)


def render_html(reports: Sequence[JobReport], title: str = "dpp job reports") -> str:
    """The whole page as a string: summary table (each row links to its job), then the jobs."""
    header, rows, totals = summary_rows(reports)
    num = [h in RIGHT_ALIGNED for h in header]
    out = ["<!DOCTYPE html>", "<html lang='en'><head><meta charset='utf-8'>",
           f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>",
           f"<h1>{_e(title)} ({len(reports)} job{'s' if len(reports) != 1 else ''})</h1>",
           "<table>", _head(header)]
    for r, row in zip(reports, rows):
        link = f"<td><a href='#job-{_e(r.query_id)}'>{_e(row[0])}</a></td>"
        out.append("<tr>" + link + _cells(row[1:], num[1:]) + "</tr>")
    out.append("<tr class='total'>" + _cells(totals, num) + "</tr></table>")
    out += [_job_html(r) for r in reports]
    out.append("</body></html>")
    return "\n".join(out)


def write_html(reports: Sequence[JobReport], out: str | Path,
               title: str = "dpp job reports") -> Path:
    """Writes :func:`render_html` to ``out`` (creating its folders); returns the path."""
    p = Path(out)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(render_html(reports, title), encoding="utf-8")
    return p
