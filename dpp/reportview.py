"""Reading job reports back: a summary table for the terminal and an HTML page with charts.

``dpp report FILE [--html OUT]`` — FILE is the JSON-lines file ``spark.dpp.report.path``
writes. The HTML page is self-contained (charts embedded as PNG data URIs, matplotlib's Agg
backend, no server and no network).
"""
from __future__ import annotations

import base64
import html
import io
from pathlib import Path
from typing import Sequence

from dpp.report import JobReport, human_bytes, read_jsonl

_COLUMNS = ("query", "started", "tables", "kept/total", "pruned", "skipped", "filters",
            "total s")


def _row(r: JobReport) -> list[str]:
    applied = [t for t in r.tables if t.pruning == "applied"]
    kept = sum(t.partitions_kept or 0 for t in applied)
    total = sum(t.partitions_total or 0 for t in applied)
    pct = f"{100 * (total - kept) / total:.0f}%" if total else "-"
    outcomes = ",".join(sorted({f.outcome for f in r.filters})) or "-"
    return [r.query_hash, r.started_at[:19].replace("T", " "),
            ",".join(sorted({t.table for t in r.tables})) or "-",
            f"{kept}/{total}" if total else "-", pct,
            human_bytes(sum(t.bytes_skipped for t in r.tables)),
            f"{len(r.filters)} {outcomes}" if r.filters else "-",
            f"{r.phases.get('total', 0.0):.2f}"]


def summary_table(reports: Sequence[JobReport]) -> str:
    """One row per job, then a totals row: plain text, aligned."""
    rows = [list(_COLUMNS)] + [_row(r) for r in reports]
    applied = [t for r in reports for t in r.tables if t.pruning == "applied"]
    kept = sum(t.partitions_kept or 0 for t in applied)
    total = sum(t.partitions_total or 0 for t in applied)
    rows.append(["TOTAL", f"{len(reports)} jobs", "",
                 f"{kept}/{total}" if total else "-",
                 f"{100 * (total - kept) / total:.0f}%" if total else "-",
                 human_bytes(sum(t.bytes_skipped for r in reports for t in r.tables)),
                 str(sum(len(r.filters) for r in reports)),
                 f"{sum(r.phases.get('total', 0.0) for r in reports):.2f}"])
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.insert(len(lines) - 1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _chart(r: JobReport) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 2.8))
    names = [t.alias or t.table for t in r.tables] or ["(no tables)"]
    kept = [t.partitions_kept or 0 for t in r.tables] or [0]
    pruned = [(t.pruned_static + t.pruned_dynamic) for t in r.tables] or [0]
    ax1.barh(names, kept, label="kept", color="#4c72b0")
    ax1.barh(names, pruned, left=kept, label="pruned", color="#dd8452")
    ax1.set_title("partitions")
    ax1.legend(loc="lower right", fontsize=7)
    phases = [(k, v) for k, v in r.phases.items() if k != "total"]
    ax2.barh([k for k, _ in phases] or ["-"], [v for _, v in phases] or [0], color="#55a868")
    ax2.set_title("phases (s)")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def html_page(reports: Sequence[JobReport]) -> str:
    esc = html.escape
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>dpp job reports</title>",
             "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}"
             "pre{background:#f6f6f6;padding:6px;white-space:pre-wrap}</style></head><body>",
             f"<h1>dpp job reports ({len(reports)} jobs)</h1>", "<table><tr>"]
    parts += [f"<th>{esc(c)}</th>" for c in _COLUMNS] + ["</tr>"]
    for r in reports:
        parts.append("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in _row(r)) + "</tr>")
    parts.append("</table>")
    for r in reports:
        parts.append(f"<div class='job' id='job-{esc(r.query_id)}'>"
                     f"<h2>job {esc(r.query_hash)} <small>({esc(r.query_id)})</small></h2>")
        parts.append(f"<p>{esc(r.summary_line())}</p>")
        parts.append(f"<pre>{esc(r.query_text)}</pre>")
        parts.append(f"<img alt='charts of job {esc(r.query_hash)}' "
                     f"src='data:image/png;base64,{_chart(r)}'/>")
        if r.filters:
            parts.append("<table><tr><th>filter</th><th>build column</th><th>kind</th>"
                         "<th>distinct</th><th>outcome</th><th>reason</th></tr>")
            for f in r.filters:
                parts.append("<tr>" + "".join(f"<td>{esc(str(x))}</td>" for x in (
                    f.filter_id, f.build_column, f.kind, f.distinct_values, f.outcome,
                    f.reason or "")) + "</tr>")
            parts.append("</table>")
        parts.append("</div>")
    parts.append("</body></html>")
    return "\n".join(parts)


def report_command(path: str, html_out: str | None = None) -> str:
    reports = read_jsonl(path)
    text = summary_table(reports)
    if html_out:
        Path(html_out).parent.mkdir(parents=True, exist_ok=True)
        Path(html_out).write_text(html_page(reports), encoding="utf-8")
    return text
