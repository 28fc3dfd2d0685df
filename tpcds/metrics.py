"""Per-query metrics of the benchmark, taken the same way in every mode.

The plan walker and the status-store window are the runtime's own (:mod:`dpp.runtime.spark_metrics`,
which also fills ``JobReport.spark_scan``), so the benchmark and the job report cannot
disagree on what a scan read. This module adds what only the benchmark needs: which scans read
a *fact* table (by catalog name or by root path under the data folder) and the per-query sums.
"""
from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional

from dpp.runtime.spark_metrics import JobWindow, ScanInfo, file_scans

log = logging.getLogger(__name__)

__all__ = ["JobWindow", "QueryMetrics", "collect_metrics", "fact_of", "fact_scans"]


@dataclass
class QueryMetrics:
    """What one execution of one query cost."""

    fact_files_read: int = 0
    fact_bytes_read: int = 0
    fact_partitions_read: int = 0
    fact_files_listed: int = 0
    scan_metadata_ms: int = 0
    executor_cpu_ms: float = 0.0
    executor_run_ms: float = 0.0
    input_bytes: int = 0            # bytes tasks actually read (all tables, column-pruned)
    query_input_bytes: int = 0      # the same without dpp's build-side jobs
    # whether the two above were counted by the bench's filesystem (every byte a task read,
    # vectored reads included), not taken from Spark's task metric, kept here beside them
    input_counted: bool = False
    spark_query_input_bytes: Optional[int] = None
    jobs: int = 0
    stages: int = 0
    scans: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def fact_of(paths: list[str], ident: Optional[str], facts: Iterable[str],
            data_dir: Optional[str]) -> Optional[str]:
    """Which fact table a scan reads, from its catalog name or its root paths."""
    facts = list(facts)
    if ident and ident in facts:
        return ident
    if data_dir:
        base = Path(data_dir).resolve()
        for p in paths:
            try:
                rel = Path(p).resolve().relative_to(base)
            except ValueError:
                continue
            if rel.parts and rel.parts[0] in facts:
                return rel.parts[0]
    return None


def fact_scans(df: Any, facts: Iterable[str], data_dir: Optional[str] = None
               ) -> list[tuple[ScanInfo, Optional[str]]]:
    """Every file scan of an executed DataFrame with the fact table it reads (or None)."""
    facts = list(facts)
    return [(s, fact_of(s.root_paths, s.catalog_name, facts, data_dir)) for s in file_scans(df)]


def collect_metrics(df: Any, window: dict[str, float], facts: Iterable[str],
                    data_dir: Optional[str]) -> QueryMetrics:
    """Combines the scan nodes of ``df`` with a closed :class:`JobWindow`."""
    m = QueryMetrics(
        executor_cpu_ms=round(float(window["executor_cpu_ms"]), 3),
        executor_run_ms=float(window["executor_run_ms"]),
        input_bytes=int(window["input_bytes"]),
        query_input_bytes=int(window.get("query_input_bytes", window["input_bytes"])),
        input_counted=bool(window.get("input_counted")),
        spark_query_input_bytes=(int(window["spark_query_input_bytes"])
                                 if "spark_query_input_bytes" in window else None),
        jobs=int(window["jobs"]),
        stages=int(window["stages"]))
    for s, fact in fact_scans(df, facts, data_dir):
        m.scans.append({**s.to_dict(), "table": fact or s.table, "is_fact": fact is not None})
        if fact is not None:
            m.fact_files_read += s.files_read
            m.fact_bytes_read += s.bytes_read
            m.fact_partitions_read += s.partitions_read
            m.fact_files_listed += s.files_listed
            m.scan_metadata_ms += s.metadata_ms
    return m
