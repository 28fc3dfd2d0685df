"""Job-level metrics reports: what pruning did for one query, what it cost, and why not.

One :class:`JobReport` per ``dpp.sql`` / ``dpp.collect`` / ``dpp.join``. Versioned
(``schema_version``), JSON-ready (``to_dict`` / ``to_json`` / ``from_dict``), one readable log
line (``summary_line``), and appended as one JSON line per job when ``spark.dpp.report.path``
is set — safely from several threads and processes. The schema is documented field by field
in README.md ("Job report schema").
"""
from __future__ import annotations

import datetime as dt
import fcntl
import hashlib
import json
import logging
import os
import threading
import uuid
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Optional

from dpp.errors import DppError

SCHEMA_VERSION = 1
_QUERY_TEXT_LIMIT = 4000
_FILTER_KINDS = {"values", "range", "bloom", "all", "none", "unknown"}
_OUTCOMES = {"complete", "timeout", "failed", "too_large", "corrupt", "cancelled", "not_used",
             "unavailable", "type_mismatch"}


class ReportError(DppError, ValueError):
    """A report (or a JSON line of one) does not follow the schema; names the field."""


@dataclass
class FilterReport:
    filter_id: str
    build_column: str = ""
    build_query: Optional[str] = None
    probe_table: Optional[str] = None
    probe_column: Optional[str] = None
    build_rows: Optional[int] = None
    distinct_values: Optional[int] = None
    kind: str = "unknown"
    encoded_bytes: Optional[int] = None
    parts_expected: int = 0
    parts_reported: int = 0
    cache_hit: bool = False
    outcome: str = "not_used"
    reason: Optional[str] = None
    build_seconds: Optional[float] = None
    wait_seconds: Optional[float] = None


@dataclass
class TableReport:
    table: str
    alias: Optional[str] = None
    location: Optional[str] = None
    pruning: str = "none"                 # "applied" | "none"
    reason: Optional[str] = None
    partitions_total: Optional[int] = None
    partitions_kept: Optional[int] = None
    pruned_static: int = 0
    pruned_dynamic: int = 0
    files_pruned_stats: int = 0
    folders_listed: int = 0
    files_listed: int = 0
    files_kept: int = 0
    files_skipped: int = 0
    bytes_kept: int = 0
    bytes_skipped: int = 0
    footers_unreadable: int = 0
    wait_seconds: float = 0.0
    enumeration_seconds: float = 0.0
    filters: list[dict[str, Any]] = field(default_factory=list)

    def get(self, name: str, default: Any = None) -> Any:
        return getattr(self, name, default)


@dataclass
class JobReport:
    query_id: str
    query_hash: str
    query_text: str
    kind: str
    started_at: str
    settings: dict[str, Any]
    enabled: bool
    phases: dict[str, float] = field(default_factory=dict)
    analysis_notes: list[str] = field(default_factory=list)
    filters: list[FilterReport] = field(default_factory=list)
    tables: list[TableReport] = field(default_factory=list)
    spark_scan: dict[str, Optional[int]] = field(
        default_factory=lambda: {"files_read": None, "bytes_read": None, "partitions_read": None})
    error: Optional[str] = None
    schema_version: int = SCHEMA_VERSION

    # ------------------------------------------------------------------ building
    @classmethod
    def start(cls, query_text: str, kind: str, settings: dict[str, Any],
              enabled: bool) -> "JobReport":
        return cls(query_id=uuid.uuid4().hex,
                   query_hash=hashlib.sha256(query_text.encode("utf-8")).hexdigest()[:16],
                   query_text=query_text[:_QUERY_TEXT_LIMIT], kind=kind,
                   started_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds"),
                   settings=dict(settings), enabled=enabled)

    def add_table_unpruned(self, table: str, alias: Optional[str], reason: str) -> None:
        self.tables.append(TableReport(table=table, alias=alias, pruning="none", reason=reason))

    def add_table_result(self, table: str, alias: Optional[str], table_obj: Any,
                         result: Any) -> None:
        """From a hive_splits LoadResult: the counters, copied as they are."""
        pruned = (result.pruned_static + result.pruned_dynamic + result.files_pruned_stats) > 0
        filt = [{"filter_id": f.filter_id, "arrived": bool(f.arrived), "outcome": f.outcome,
                 "reason": f.reason} for f in result.filters]
        reason = None
        if not pruned:
            why = [f"{f['filter_id']}: {f['outcome']}" + (f" ({f['reason']})" if f["reason"] else "")
                   for f in filt if f["outcome"] != "complete"]
            reason = "; ".join(why) if why else "filters kept every partition"
        self.tables.append(TableReport(
            table=table, alias=alias, location=str(getattr(table_obj, "location", "")) or None,
            pruning="applied" if pruned else "none", reason=reason,
            partitions_total=result.partitions_total, partitions_kept=result.partitions_kept,
            pruned_static=result.pruned_static, pruned_dynamic=result.pruned_dynamic,
            files_pruned_stats=result.files_pruned_stats, folders_listed=result.folders_listed,
            files_listed=result.files_listed, files_kept=result.files_kept,
            files_skipped=result.files_skipped, bytes_kept=result.bytes_kept,
            bytes_skipped=result.bytes_skipped,
            footers_unreadable=getattr(result, "footers_unreadable", 0),
            wait_seconds=result.wait_seconds,
            enumeration_seconds=max(0.0, result.elapsed_seconds - result.wait_seconds),
            filters=filt))

    def add_filter(self, data: dict[str, Any]) -> None:
        known = {f.name for f in fields(FilterReport)}
        self.filters.append(FilterReport(**{k: v for k, v in data.items() if k in known}))

    # ------------------------------------------------------------------ output
    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, default=str)

    @classmethod
    def from_dict(cls, d: Any) -> "JobReport":
        if not isinstance(d, dict):
            raise ReportError("a report must be a JSON object")
        v = d.get("schema_version")
        if v != SCHEMA_VERSION:
            raise ReportError(f"field 'schema_version': expected {SCHEMA_VERSION}, got {v!r}")
        kw: dict[str, Any] = {}
        for f in fields(cls):
            if f.name not in d:
                if f.name in ("query_id", "query_hash", "query_text", "kind", "started_at",
                              "settings", "enabled"):
                    raise ReportError(f"field {f.name!r} is missing")
                continue
            kw[f.name] = d[f.name]
        for name, typ in (("query_id", str), ("query_hash", str), ("query_text", str),
                          ("kind", str), ("started_at", str), ("settings", dict),
                          ("enabled", bool)):
            if not isinstance(kw[name], typ):
                raise ReportError(f"field {name!r} must be {typ.__name__}")
        if not isinstance(kw.get("phases", {}), dict):
            raise ReportError("field 'phases' must be an object")
        try:
            kw["filters"] = [FilterReport(**x) for x in kw.get("filters", [])]
        except TypeError as exc:
            raise ReportError(f"field 'filters': {exc}") from None
        try:
            kw["tables"] = [TableReport(**x) for x in kw.get("tables", [])]
        except TypeError as exc:
            raise ReportError(f"field 'tables': {exc}") from None
        for i, fr in enumerate(kw["filters"]):
            if fr.kind not in _FILTER_KINDS:
                raise ReportError(f"field 'filters[{i}].kind': unknown kind {fr.kind!r}")
            if fr.outcome not in _OUTCOMES:
                raise ReportError(f"field 'filters[{i}].outcome': unknown outcome {fr.outcome!r}")
        return cls(**kw)

    def summary_line(self) -> str:
        """One readable line, e.g. ``dpp: store_sales kept 366/1824 partitions (80% pruned),
        1.2 GiB skipped; date_dim.d_date_sk values(366) in 0.4 s``."""
        parts = []
        for t in self.tables:
            if t.pruning != "applied":
                continue
            kept, total = t.partitions_kept or 0, t.partitions_total or 0
            pct = f" ({_percent(total - kept, total)} pruned)" if total else ""
            skipped = t.bytes_skipped
            extra = f", {human_bytes(skipped)} skipped" if skipped else ""
            parts.append(f"{t.table} kept {kept}/{total} partitions{pct}{extra}")
        for f in self.filters:
            n = f"({f.distinct_values})" if f.distinct_values is not None else ""
            secs = f" in {f.build_seconds:.1f} s" if f.build_seconds is not None else ""
            cache = " (cache hit)" if f.cache_hit else ""
            state = f.kind + n if f.outcome == "complete" else f.outcome
            parts.append(f"{f.build_column} {state}{secs}{cache}")
        if not any(t.pruning == "applied" for t in self.tables):
            reasons = [f"{t.table}: {t.reason}" for t in self.tables if t.reason]
            reasons += self.analysis_notes[:2]
            why = "; ".join(reasons) if reasons else "no partitioned table in the query"
            return f"dpp: no pruning ({why})"
        return "dpp: " + "; ".join(parts)

    def log(self, logger: logging.Logger) -> None:
        logger.info("%s", self.summary_line())


def _percent(part: int, whole: int) -> str:
    """Whole percents, except that 100% is only said of all (99.6% stays 99.6%)."""
    v = 100 * part / whole
    return f"{v:.1f}%" if 99 < v < 100 or 0 < v < 1 else f"{v:.0f}%"


def human_bytes(n: Optional[float]) -> str:
    if n is None:
        return "?"
    v = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(v) < 1024 or unit == "TiB":
            return f"{v:.0f} {unit}" if unit == "B" else f"{v:.1f} {unit}"
        v /= 1024
    return f"{v:.1f} TiB"  # pragma: no cover


_APPEND_LOCK = threading.Lock()


def append_jsonl(report: JobReport, path: str | os.PathLike[str]) -> None:
    """Appends the report as exactly one line: one ``os.write`` on an ``O_APPEND`` file under
    an exclusive ``flock``, so lines from threads and processes never interleave."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    line = (report.to_json() + "\n").encode("utf-8")
    with _APPEND_LOCK:
        fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                view = memoryview(line)
                while view:
                    n = os.write(fd, view)
                    view = view[n:]
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def read_jsonl(path: str | os.PathLike[str]) -> list[JobReport]:
    out = []
    with open(path, encoding="utf-8") as fh:
        for i, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                out.append(JobReport.from_dict(json.loads(line)))
            except (json.JSONDecodeError, ReportError) as exc:
                raise ReportError(f"{path}:{i}: {exc}") from None
    return out
