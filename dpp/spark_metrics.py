"""Scan metrics of an executed Spark query, read from its physical plan's scan nodes.

The same source serves every mode (pruning off, Spark's DPP, this runtime), so the figures
are comparable: files and bytes read are what the ``FileSourceScanExec`` nodes report after
execution (with AQE, the final plan).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Optional

log = logging.getLogger(__name__)


@dataclass
class ScanMetrics:
    files_read: int = 0
    bytes_read: int = 0
    partitions_read: int = 0
    rows_output: int = 0
    scans: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"files_read": self.files_read, "bytes_read": self.bytes_read,
                "partitions_read": self.partitions_read, "rows_output": self.rows_output,
                "scans": self.scans}


def _children(node: Any) -> list[Any]:
    out = []
    kids = node.children()
    for i in range(kids.size()):
        out.append(kids.apply(i))
    # AQE wrappers and query stages hide their plans outside children()
    name = node.nodeName()
    for getter in ("executedPlan", "plan", "child"):
        if name.startswith(("AdaptiveSparkPlan", "ShuffleQueryStage", "BroadcastQueryStage",
                            "TableCacheQueryStage", "ResultQueryStage")) and not out:
            try:
                out.append(getattr(node, getter)())
                break
            except Exception:
                continue
    try:  # subqueries (e.g. Spark's own DPP broadcast) live in expressions
        subs = node.subqueries()
        for i in range(subs.size()):
            out.append(subs.apply(i))
    except Exception:
        pass
    return out


def _metric(node: Any, name: str) -> Optional[int]:
    try:
        m = node.metrics()
        if m.contains(name):
            return int(m.apply(name).value())
    except Exception:
        return None
    return None


def scan_metrics(df: Any) -> ScanMetrics:
    """Sums file-scan metrics over the executed plan of ``df`` (after an action ran)."""
    out = ScanMetrics()
    try:
        root = df._jdf.queryExecution().executedPlan()
    except Exception:  # pragma: no cover
        log.debug("no executed plan", exc_info=True)
        return out
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        ident = node.hashCode() ^ id(node)
        key = int(node.id()) if hasattr(node, "id") else ident
        name = node.nodeName()
        if name.startswith(("Scan ", "FileScan", "FileSourceScan")) or "Scan parquet" in name:
            if key in seen:
                continue
            seen.add(key)
            files = _metric(node, "numFiles") or 0
            size = _metric(node, "filesSize") or 0
            parts = _metric(node, "numPartitions") or 0
            rows = _metric(node, "numOutputRows") or 0
            table = ""
            try:
                table = str(node.tableIdentifier().get()) if node.tableIdentifier().isDefined() \
                    else ""
            except Exception:
                pass
            out.scans.append({"node": name, "table": table, "files": files, "bytes": size,
                              "partitions": parts, "rows": rows})
            out.files_read += files
            out.bytes_read += size
            out.partitions_read += parts
            out.rows_output += rows
        stack.extend(_children(node))
    return out
