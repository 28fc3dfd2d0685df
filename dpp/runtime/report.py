"""Job-level metrics reports: what pruning did for one query, what it cost, and why not.

One :class:`JobReport` per ``dpp.sql`` / ``dpp.collect`` / ``dpp.join``. It is

* versioned (``schema_version``), so a reader can refuse lines written by a newer writer
  instead of misreading them;
* JSON-ready (``to_dict`` / ``to_json``) and read back with validation (``from_dict``): a
  report file is an interface to other tools (``dpp report``, notebooks, jq), so a line that
  does not follow the schema is an error that names the field at fault, never a silent
  default;
* one readable log line (``summary_line`` / :func:`log_report`);
* appended as one JSON line per job when ``spark.dpp.report.path`` is set
  (:func:`append_jsonl`), safely from several threads and processes, and read back with
  :func:`read_jsonl`.

The schema is documented field by field in ``docs/report-schema.md`` (from ``FIELD_DOCS``).
This module imports nothing heavier than the standard library (``dpp`` must stay light: no
PySpark here).
"""
from __future__ import annotations

import datetime as dt
import fcntl
import hashlib
import json
import logging
import math
import os
import re
import threading
import uuid
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Union

from dpp.core.errors import DppError
from dpp.core.outcomes import REPORTED_OUTCOMES
from dpp.core.refusals import Code, Refusal

__all__ = [
    "SCHEMA_VERSION", "QUERY_TEXT_LIMIT", "FILTER_KINDS", "FILTER_OUTCOMES", "PHASES",
    "ReportError", "FilterReport", "TableReport", "JobReport",
    "human_bytes", "percent", "shorten", "log_report", "append_jsonl", "read_jsonl",
]

SCHEMA_VERSION = 2
# versions this reader reads: 1 has no refusal codes (``reason_code``, ``refusals``)
_READABLE_VERSIONS = (1, 2)
QUERY_TEXT_LIMIT = 4000
_QUERY_TEXT_LIMIT = QUERY_TEXT_LIMIT  # old private name, kept for callers that used it

#: What a filter's domain turned out to be (``none``: no build row, nothing can match).
FILTER_KINDS = ("values", "range", "bloom", "all", "none", "unknown")
#: How a filter ended. The first seven are the design's; ``unavailable`` (the filter service
#: could not be reached) and ``type_mismatch`` (the build key cannot be compared in the
#: partition column's type) are produced by the session too, and mean "no pruning" as well.
FILTER_OUTCOMES = tuple(o.value for o in REPORTED_OUTCOMES)
#: Phase names the session fills, in the order a job goes through them.
PHASES = ("analysis", "build", "wait", "split_enumeration", "listing_wait", "execution",
          "total")
_PRUNING = ("applied", "none")
_JOB_KINDS = ("sql", "join", "plan")  # plan: the optimizer hook, or a Connect DataFrame plan
_SCAN_KEYS = ("files_read", "bytes_read", "partitions_read")
_FILTER_KINDS = set(FILTER_KINDS)  # old private names, kept for callers that used them
_OUTCOMES = set(FILTER_OUTCOMES)

log = logging.getLogger(__name__)

PathLike = Union[str, "os.PathLike[str]"]


class ReportError(DppError, ValueError):
    """A report (or a JSON line of one) does not follow the schema; names the field."""


# ---------------------------------------------------------------------------- the schema
@dataclass
class FilterReport:
    """One dynamic filter: a build side (dimension key) and what came of it."""

    filter_id: str
    build_table: Optional[str] = None
    build_column: str = ""
    probe_table: Optional[str] = None
    probe_column: Optional[str] = None
    build_query: Optional[str] = None
    build_rows: Optional[int] = None
    distinct_values: Optional[int] = None
    kind: str = "unknown"
    encoded_bytes: Optional[int] = None
    parts_expected: int = 0
    parts_reported: int = 0
    cache_hit: bool = False
    # the keys Spark's own dynamic pruning resolved for the scan (spark.dpp.sparkKeys.enabled):
    # no build job of dpp's ran
    spark_keys: bool = False
    # left to Spark's keys at planning: with spark_keys false, dpp's build ran at the scan's
    # listing instead (later than a build started with the query)
    deferred: bool = False
    outcome: str = "not_used"
    reason: Optional[str] = None
    build_seconds: Optional[float] = None
    wait_seconds: Optional[float] = None

    def label(self) -> str:
        """``table.column`` of the build key, for humans (the session may already qualify
        ``build_column``; then it is used as it is)."""
        col = self.build_column or self.filter_id
        if self.build_table and "." not in col:
            return f"{self.build_table}.{col}"
        return col


@dataclass
class TableReport:
    """One table reference of the query (a table joined twice is reported twice)."""

    table: str
    alias: Optional[str] = None
    location: Optional[str] = None
    pruning: str = "none"                 # "applied" | "none"
    reason: Optional[str] = None
    reason_code: Optional[str] = None     # dpp.core.refusals.Code of ``reason``, when refused
    partitions_total: Optional[int] = None
    partitions_kept: Optional[int] = None
    pruned_static: int = 0
    pruned_dynamic: int = 0
    files_pruned_stats: int = 0
    buckets_total: Optional[int] = None   # a table bucketed by the filtered column
    buckets_kept: Optional[int] = None
    files_pruned_buckets: int = 0
    folders_listed: int = 0
    files_listed: int = 0
    files_kept: int = 0
    files_skipped: int = 0
    bytes_kept: int = 0
    bytes_skipped: int = 0
    footers_unreadable: int = 0
    footers_read: int = 0
    stats_seconds: float = 0.0            # footers awaited and tested after the filters came
    stats_note: Optional[str] = None      # why statistics stopped early (statsPruning=auto)
    # the data-column filters' values as the predicate handed with the kept files, which
    # Parquet's row groups are tested against (dpp.runtime.row_groups)
    row_group_filter: Optional[str] = None
    wait_seconds: float = 0.0
    enumeration_seconds: float = 0.0
    handoff_seconds: float = 0.0
    filters: list[dict[str, Any]] = field(default_factory=list)
    # storage requests: the loader's LIST (one per folder) and HEAD (getFileStatus) calls, by
    # its lister ("local" | "hadoop"); the handoff's as Hadoop's storage statistics count
    # them (None where they cannot tell); the metastore's partition names listed and
    # partition objects fetched (catalog tables), whether the filter reached the metastore,
    # and why not
    lister: Optional[str] = None
    list_calls: int = 0
    head_calls: int = 0
    handoff_list_calls: Optional[int] = None
    handoff_head_calls: Optional[int] = None
    metastore_names: Optional[int] = None
    metastore_fetched: Optional[int] = None
    metastore_pushed: Optional[bool] = None
    metastore_note: Optional[str] = None

    def get(self, name: str, default: Any = None) -> Any:
        """Dict-style access, so code written against ``to_dict()`` output works on both."""
        return getattr(self, name, default)


def _empty_scan() -> dict[str, Optional[int]]:
    return {k: None for k in _SCAN_KEYS}


@dataclass
class JobReport:
    """What dynamic pruning did for one job. Build one with :meth:`start`."""

    query_id: str
    query_hash: str
    query_text: str
    kind: str
    started_at: str
    settings: dict[str, Any]
    enabled: bool
    phases: dict[str, float] = field(default_factory=dict)
    analysis_notes: list[str] = field(default_factory=list)
    # the keys refused, as code, subject and words (their words are in analysis_notes too)
    refusals: list[dict[str, str]] = field(default_factory=list)
    environment: list[str] = field(default_factory=list)   # said once per session
    filters: list[FilterReport] = field(default_factory=list)
    tables: list[TableReport] = field(default_factory=list)
    spark_scan: dict[str, Optional[int]] = field(default_factory=_empty_scan)
    error: Optional[str] = None
    # the Spark Connect operation a served session's job ran for: session_id, user, operation
    connect_session: Optional[dict[str, str]] = None
    schema_version: int = SCHEMA_VERSION

    # ------------------------------------------------------------------ building
    @classmethod
    def start(cls, query_text: str, kind: str, settings: dict[str, Any],
              enabled: bool) -> "JobReport":
        """A fresh report: new id, the hash of the *whole* text (so two long queries that
        differ after 4000 chars still hash apart), the text truncated to bound line size."""
        return cls(query_id=uuid.uuid4().hex,
                   query_hash=query_hash(query_text),
                   query_text=query_text[:QUERY_TEXT_LIMIT], kind=kind,
                   started_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds"),
                   settings=dict(settings), enabled=enabled)

    def add_table_unpruned(self, table: str, alias: Optional[str], reason: Refusal) -> None:
        """A table reference the plan does not prune, and why (shown by ``summary_line``)."""
        if not isinstance(reason, Refusal):
            raise TypeError(f"a table is refused with a Refusal (dpp.core.refusals), not "
                            f"{type(reason).__name__} {reason!r}")
        self.tables.append(TableReport(table=table, alias=alias, pruning="none",
                                       reason=reason.words(), reason_code=reason.code.value))

    def refuse(self, refusals: "Iterable[Refusal]") -> None:
        """Keys the analysis refused: each said once, in words among the analysis notes and
        as its code in ``refusals``."""
        for r in refusals:
            entry = r.to_dict()
            if entry["words"] not in self.analysis_notes:
                self.analysis_notes.append(entry["words"])
            if entry not in self.refusals:
                self.refusals.append(entry)

    def mark_whole(self, table: TableReport) -> None:
        """A table the report lists as read whole by Spark's reader (nothing to prune)."""
        whole = Refusal(Code.NOTHING_TO_PRUNE)
        table.reason, table.reason_code = whole.words(), whole.code.value

    def add_table_result(self, table: str, alias: Optional[str], table_obj: Any,
                         result: Any) -> None:
        """From a hive_splits LoadResult: the counters, copied as they are."""
        pruned = (result.pruned_static + result.pruned_dynamic + result.files_pruned_stats
                  + getattr(result, "files_pruned_buckets", 0)) > 0 or \
            bool(getattr(result, "row_group_filter", None)) or \
            bool(getattr(result, "statically_empty", False))
        filt = [{"filter_id": f.filter_id, "arrived": bool(f.arrived), "outcome": f.outcome,
                 "reason": f.reason} for f in result.filters]
        reason = None
        if not pruned:
            why = [f"{f['filter_id']}: {f['outcome']}"
                   + (f" ({f['reason']})" if f["reason"] else "")
                   for f in filt if f["outcome"] != "complete"]
            reason = "; ".join(why) if why else "filters kept every partition"
        self.tables.append(TableReport(
            table=table, alias=alias, location=str(getattr(table_obj, "location", "")) or None,
            pruning="applied" if pruned else "none", reason=reason,
            partitions_total=result.partitions_total, partitions_kept=result.partitions_kept,
            pruned_static=result.pruned_static, pruned_dynamic=result.pruned_dynamic,
            files_pruned_stats=result.files_pruned_stats,
            buckets_total=getattr(result, "buckets_total", None),
            buckets_kept=getattr(result, "buckets_kept", None),
            files_pruned_buckets=getattr(result, "files_pruned_buckets", 0),
            folders_listed=result.folders_listed,
            files_listed=result.files_listed, files_kept=result.files_kept,
            files_skipped=result.files_skipped, bytes_kept=result.bytes_kept,
            bytes_skipped=result.bytes_skipped,
            footers_unreadable=getattr(result, "footers_unreadable", 0),
            footers_read=getattr(result, "footers_read", 0),
            stats_seconds=getattr(result, "stats_seconds", 0.0),
            stats_note=getattr(result, "stats_note", None),
            row_group_filter=getattr(result, "row_group_filter", None),
            wait_seconds=result.wait_seconds,
            enumeration_seconds=max(0.0, result.elapsed_seconds - result.wait_seconds),
            handoff_seconds=getattr(result, "handoff_seconds", 0.0), filters=filt,
            lister=getattr(result, "lister", None), list_calls=getattr(result, "list_calls", 0),
            head_calls=getattr(result, "head_calls", 0),
            handoff_list_calls=getattr(result, "handoff_list_calls", None),
            handoff_head_calls=getattr(result, "handoff_head_calls", None),
            **_metastore_fields(getattr(result, "metastore", None) or {})))

    def add_filter(self, data: dict[str, Any]) -> None:
        """Adds a filter from a dict; keys the schema does not know are dropped (the session's
        per-filter scratch dict carries more than the report keeps)."""
        known = {f.name for f in fields(FilterReport)}
        self.filters.append(FilterReport(**{k: v for k, v in data.items() if k in known}))

    # ------------------------------------------------------------------ output
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (a deep copy: callers may change it freely)."""
        return asdict(self)

    def to_json(self) -> str:
        """One line of JSON (newlines inside strings are escaped), keys sorted so two reports
        diff well; values JSON cannot hold are written as their ``str``."""
        return json.dumps(self.to_dict(), sort_keys=True, default=str, ensure_ascii=False)

    @classmethod
    def from_dict(cls, d: Any) -> "JobReport":
        """Reads a report back from ``to_dict`` output (or a parsed JSON line).

        Validates everything: types, enumerations, non-negative counters, known keys only.
        Raises :class:`ReportError` naming the field (``tables[2].partitions_kept``) and what
        was expected. Optional fields missing from the input take their defaults, so a
        reader accepts lines written before an optional field was added.
        """
        return _job_from_dict(d)

    @classmethod
    def from_json(cls, text: str) -> "JobReport":
        """``from_dict(json.loads(text))`` with a JSON syntax error as a :class:`ReportError`."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ReportError(f"not JSON: {exc}") from None
        return cls.from_dict(data)

    def summary_line(self) -> str:
        """One readable line, e.g. ``dpp: store_sales kept 366/1824 partitions (80% pruned),
        1.2 GiB skipped; date_dim.d_date_sk values(366) in 0.4 s``.

        With no table pruned: ``dpp: no pruning (why)``, the why taken from the tables'
        reasons, else the analysis notes — so a log reader sees the cause without the JSON.
        """
        applied = [t for t in self.tables if t.pruning == "applied"]
        if not applied:
            return _flat(f"dpp: no pruning ({self._why_not()})")
        names = [t.table for t in applied]
        parts = []
        for t in applied:
            name = t.table
            if names.count(t.table) > 1 and t.alias:
                name = f"{t.table} {t.alias}"  # a self-join: tell the two references apart
            parts.append(name + " " + _table_phrase(t))
        for f in self.filters:
            state = (f.kind + (f"({f.distinct_values})" if f.distinct_values is not None else "")
                     if f.outcome == "complete" else f.outcome)
            secs = f" in {f.build_seconds:.1f} s" if f.build_seconds is not None else ""
            cache = " (cache hit)" if f.cache_hit else ""
            parts.append(f"{f.label()} {state}{secs}{cache}")
        return _flat("dpp: " + "; ".join(parts))

    def console_line(self) -> str:
        """What ``spark.dpp.report.console`` prints for a query: :meth:`summary_line` with
        how long the scans waited for their filters, and the query's first words."""
        line = self.summary_line()
        wait = self.phases.get("wait")
        if wait is not None and any(t.pruning == "applied" for t in self.tables):
            line += f"; waited {wait:.1f} s"
        text = shorten(self.query_text or "", 60)
        if text:
            line += f" [{text}]"
        return line

    def _why_not(self) -> str:
        if not self.enabled:
            return "spark.dpp.enabled=false"
        reasons = [f"{t.table}: {t.reason}" for t in self.tables if t.reason]
        reasons += self.analysis_notes[:2]
        reasons += self.environment[:1]
        if self.error:
            reasons.insert(0, f"error: {self.error}")
        if not reasons:
            return "no partitioned table in the query"
        return "; ".join(_one_line(r) for r in reasons)

    def log(self, logger: logging.Logger) -> None:
        """Same as :func:`log_report` (kept as a method for the session)."""
        log_report(self, logger)


def _table_phrase(t: TableReport) -> str:
    """``kept 7/40 partitions (82% pruned), 1.5 GiB skipped`` for one pruned table."""
    total = t.partitions_total
    if total is None:
        out = "pruned"
    else:
        kept = t.partitions_kept if t.partitions_kept is not None else total
        out = f"kept {kept}/{total} partitions"
        if total:
            out += f" ({percent(total - kept, total)} pruned)"
    if t.files_pruned_stats:
        n = t.files_pruned_stats
        out += f", {n} file{'s' if n != 1 else ''} skipped by statistics"
    if t.buckets_total is not None:
        out += (f", buckets {t.buckets_kept}/{t.buckets_total} kept "
                f"({t.files_pruned_buckets} files skipped)")
    if t.bytes_skipped:
        out += f", {human_bytes(t.bytes_skipped)} skipped"
    if t.row_group_filter:
        out += f", row groups tested against {t.row_group_filter}"
    return out


def _flat(text: str) -> str:
    """Names and reasons may hold newlines (exception texts, odd identifiers); a log line must
    stay one line, so every run of whitespace becomes one space."""
    return " ".join(text.split())


def _one_line(text: str, limit: int = 300) -> str:
    """Reasons can be exception texts spanning lines; a log line must stay one line."""
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[:limit - 1] + "…"


def shorten(text: str, width: int) -> str:
    """``text`` on one line, cut to ``width`` characters with ``…`` where it is longer."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[:width - 1] + "…"


def query_hash(text: str) -> str:
    """First 16 hex chars of the SHA-256 of the query text: groups runs of the same query
    across report files without storing (or comparing) the text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def percent(part: float, whole: float) -> str:
    """Whole percents, except near the ends: 100% and 0% are only said of all and of
    nothing (99.6% stays ``99.6%``, 0.4% stays ``0.4%``). ``-`` when ``whole`` is 0."""
    if not whole:
        return "-"
    v = 100 * part / whole
    return f"{v:.1f}%" if 99 < v < 100 or 0 < v < 1 else f"{v:.0f}%"


_percent = percent  # old private name


def human_bytes(n: Optional[float]) -> str:
    """Binary units, one decimal (``1.2 GiB``); whole bytes below 1 KiB; ``?`` if unknown."""
    if n is None:
        return "?"
    v = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(v) < 1024:
            return f"{v:.0f} {unit}" if unit == "B" else f"{v:.1f} {unit}"
        v /= 1024
    return f"{v:.1f} PiB"


def log_report(report: JobReport, logger: Optional[logging.Logger] = None) -> None:
    """Emits the report's summary line at INFO: one line per job in the driver's log."""
    (logger or log).info("%s", report.summary_line())


# ---------------------------------------------------------------------------- validation
# A field's check takes (value, field path) and returns the value, converted where JSON loses
# the type (an int where a float is meant); it rejects bool where a number is meant (in
# Python True is an int) and raises ReportError naming the path.
_Check = Callable[[Any, str], Any]


def _fail(path: str, expected: str, value: Any) -> ReportError:
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return ReportError(f"field {path!r}: expected {expected}, got {shown}")


def _str(v: Any, path: str) -> str:
    if not isinstance(v, str):
        raise _fail(path, "a string", v)
    return v


def _bool(v: Any, path: str) -> bool:
    if not isinstance(v, bool):
        raise _fail(path, "true or false", v)
    return v


def _count(v: Any, path: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise _fail(path, "a non-negative integer", v)
    return v


def _seconds(v: Any, path: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise _fail(path, "a non-negative number of seconds", v)
    return float(v)


def _one_of(options: tuple[str, ...]) -> _Check:
    def check(v: Any, path: str) -> str:
        if not isinstance(v, str) or v not in options:
            raise _fail(path, "one of " + ", ".join(options), v)
        return v
    return check


def _optional(check: _Check) -> _Check:
    def opt(v: Any, path: str) -> Any:
        return None if v is None else check(v, path)
    return opt


def _str_list(v: Any, path: str) -> list[str]:
    if not isinstance(v, list):
        raise _fail(path, "a list of strings", v)
    return [_str(x, f"{path}[{i}]") for i, x in enumerate(v)]


_HEX32 = re.compile(r"[0-9a-f]{32}")
_HEX16 = re.compile(r"[0-9a-f]{16}")


def _hex(pattern: re.Pattern[str], what: str) -> _Check:
    def check(v: Any, path: str) -> str:
        if not isinstance(v, str) or not pattern.fullmatch(v):
            raise _fail(path, what, v)
        return v
    return check


def _query_text(v: Any, path: str) -> str:
    s = _str(v, path)
    if len(s) > QUERY_TEXT_LIMIT:
        raise _fail(path, f"at most {QUERY_TEXT_LIMIT} characters", f"{len(s)} characters")
    return s


def _utc_time(v: Any, path: str) -> str:
    s = _str(v, path)
    try:
        t = dt.datetime.fromisoformat(s)
    except ValueError:
        raise _fail(path, "an ISO 8601 time", v) from None
    if t.utcoffset() != dt.timedelta(0):
        raise _fail(path, "an ISO 8601 time in UTC (+00:00)", v)
    return s


def _settings(v: Any, path: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise _fail(path, "an object of spark.dpp.* settings", v)
    for k, x in v.items():
        if not isinstance(k, str) or not k.startswith("spark.dpp."):
            raise _fail(f"{path}.{k}", "a spark.dpp.* key", k)
        if x is not None and not isinstance(x, (str, int, float, bool)):
            raise _fail(f"{path}.{k}", "a string, number, boolean or null", x)
    return dict(v)


def _connect_session(v: Any, path: str) -> dict[str, str]:
    keys = ("session_id", "user", "operation")
    if not isinstance(v, dict) or set(v) - set(keys):
        raise _fail(path, "an object with " + ", ".join(keys), v)
    return {k: _str(x, f"{path}.{k}") for k, x in v.items()}


def _phases(v: Any, path: str) -> dict[str, float]:
    if not isinstance(v, dict):
        raise _fail(path, "an object of phase name -> seconds", v)
    return {k: _seconds(x, f"{path}.{k}") for k, x in v.items()}


def _spark_scan(v: Any, path: str) -> dict[str, Optional[int]]:
    if not isinstance(v, dict):
        raise _fail(path, "an object with " + ", ".join(_SCAN_KEYS), v)
    for k in v:
        if k not in _SCAN_KEYS:
            raise ReportError(f"field '{path}.{k}': unknown field (known: "
                              + ", ".join(_SCAN_KEYS) + ")")
    return {k: _optional(_count)(v.get(k), f"{path}.{k}") for k in _SCAN_KEYS}


def _table_filter(v: Any, path: str) -> dict[str, Any]:
    """``tables[i].filters[j]``: outcome is the split loader's word (it has more states than
    a filter's final outcome, e.g. ``pending`` or ``unknown_column``), so any string."""
    return _record(v, path, _TABLE_FILTER_SPEC, required=("filter_id", "arrived", "outcome"))


def _list_of(item: Callable[[Any, str], Any]) -> _Check:
    def check(v: Any, path: str) -> list[Any]:
        if not isinstance(v, list):
            raise _fail(path, "a list", v)
        return [item(x, f"{path}[{i}]") for i, x in enumerate(v)]
    return check


_TABLE_FILTER_SPEC: dict[str, _Check] = {
    "filter_id": _str, "arrived": _bool, "outcome": _str, "reason": _optional(_str),
}

_FILTER_SPEC: dict[str, _Check] = {
    "filter_id": _str,
    "build_table": _optional(_str),
    "build_column": _str,
    "probe_table": _optional(_str),
    "probe_column": _optional(_str),
    "build_query": _optional(_str),
    "build_rows": _optional(_count),
    "distinct_values": _optional(_count),
    "kind": _one_of(FILTER_KINDS),
    "encoded_bytes": _optional(_count),
    "parts_expected": _count,
    "parts_reported": _count,
    "cache_hit": _bool,
    "spark_keys": _bool,
    "deferred": _bool,
    "outcome": _one_of(FILTER_OUTCOMES),
    "reason": _optional(_str),
    "build_seconds": _optional(_seconds),
    "wait_seconds": _optional(_seconds),
}

_TABLE_SPEC: dict[str, _Check] = {
    "table": _str,
    "alias": _optional(_str),
    "location": _optional(_str),
    "pruning": _one_of(_PRUNING),
    "reason": _optional(_str),
    "reason_code": _optional(lambda v, p: _code(v, p)),
    "partitions_total": _optional(_count),
    "partitions_kept": _optional(_count),
    "pruned_static": _count,
    "pruned_dynamic": _count,
    "files_pruned_stats": _count,
    "buckets_total": _optional(_count),
    "buckets_kept": _optional(_count),
    "files_pruned_buckets": _count,
    "folders_listed": _count,
    "files_listed": _count,
    "files_kept": _count,
    "files_skipped": _count,
    "bytes_kept": _count,
    "bytes_skipped": _count,
    "footers_unreadable": _count,
    "footers_read": _count,
    "stats_seconds": _seconds,
    "stats_note": _optional(_str),
    "row_group_filter": _optional(_str),
    "wait_seconds": _seconds,
    "enumeration_seconds": _seconds,
    "handoff_seconds": _seconds,
    "filters": _list_of(_table_filter),
    "lister": _optional(_str),
    "list_calls": _count,
    "head_calls": _count,
    "handoff_list_calls": _optional(_count),
    "handoff_head_calls": _optional(_count),
    "metastore_names": _optional(_count),
    "metastore_fetched": _optional(_count),
    "metastore_pushed": _optional(_bool),
    "metastore_note": _optional(_str),
}

_JOB_SPEC: dict[str, _Check] = {
    "schema_version": _count,  # the version itself is checked first, before anything else
    "query_id": _hex(_HEX32, "32 lowercase hex characters (a uuid4 hex)"),
    "query_hash": _hex(_HEX16, "16 lowercase hex characters"),
    "query_text": _query_text,
    "kind": _one_of(_JOB_KINDS),
    "started_at": _utc_time,
    "settings": _settings,
    "enabled": _bool,
    "phases": _phases,
    "analysis_notes": _str_list,
    "refusals": _list_of(lambda v, p: _refusal(v, p)),
    "environment": _str_list,
    "filters": _list_of(lambda v, p: FilterReport(**_record(v, p, _FILTER_SPEC,
                                                               required=("filter_id",)))),
    "tables": _list_of(lambda v, p: _table_from(v, p)),
    "spark_scan": _spark_scan,
    "error": _optional(_str),
    "connect_session": _optional(lambda v, p: _connect_session(v, p)),
}

_JOB_REQUIRED = ("query_id", "query_hash", "query_text", "kind", "started_at", "settings",
                 "enabled")

# Names people (and older drafts of the schema) reach for that this schema spells otherwise.
_RENAMED = {"pruned_stats": "files_pruned_stats"}


def _record(v: Any, path: str, spec: dict[str, _Check],
            required: tuple[str, ...]) -> dict[str, Any]:
    """Checks one JSON object against ``spec``: required keys present (in spec order, so the
    first one missing is named), no unknown keys, each value checked and converted."""
    if not isinstance(v, dict):
        raise _fail(path or "report", "a JSON object", v)
    prefix = f"{path}." if path else ""
    for name in spec:
        if name in required and name not in v:
            raise ReportError(f"field '{prefix}{name}' is missing")
    for k in v:
        if k not in spec:
            hint = (f"; the schema calls it {_RENAMED[k]!r}" if k in _RENAMED else "")
            raise ReportError(f"field '{prefix}{k}': unknown field{hint}")
    return {k: spec[k](x, f"{prefix}{k}") for k, x in v.items()}


def _table_from(v: Any, path: str) -> TableReport:
    kw = _record(v, path, _TABLE_SPEC, required=("table",))
    t = TableReport(**kw)
    if (t.partitions_total is not None and t.partitions_kept is not None
            and t.partitions_kept > t.partitions_total):
        raise ReportError(f"field '{path}.partitions_kept': {t.partitions_kept} is more than "
                          f"partitions_total ({t.partitions_total})")
    return t


def _job_from_dict(d: Any) -> JobReport:
    if not isinstance(d, dict):
        raise _fail("report", "a JSON object", d)
    if "schema_version" not in d:
        raise ReportError("field 'schema_version' is missing")
    v = d["schema_version"]
    if v not in _READABLE_VERSIONS or isinstance(v, bool):
        raise ReportError(f"field 'schema_version': this reader knows versions "
                          f"{', '.join(map(str, _READABLE_VERSIONS))}, got {v!r} (a report "
                          f"from another dpp version?)")
    kw = _record(d, "", _JOB_SPEC, required=_JOB_REQUIRED)
    kw["schema_version"] = SCHEMA_VERSION   # read as this version's (1 lacks only codes)
    return JobReport(**kw)


_CODES = {c.value for c in Code}


def _code(v: Any, path: str) -> str:
    if not isinstance(v, str) or v not in _CODES:
        raise _fail(path, "a refusal code (docs/why-not.md)", v)
    return v


def _refusal(v: Any, path: str) -> dict[str, str]:
    if not isinstance(v, dict) or set(v) != {"code", "subject", "words"}:
        raise _fail(path, "an object of code, subject and words", v)
    return {"code": _code(v["code"], f"{path}.code"), "subject": _str(v["subject"], path),
            "words": _str(v["words"], path)}


# ---------------------------------------------------------------------------- files
_APPEND_LOCK = threading.Lock()


def append_jsonl(report: JobReport, path: PathLike) -> None:
    """Appends the report as exactly one line.

    Lines from several threads and processes never interleave: the line is built first, then
    written with one ``os.write`` on an ``O_APPEND`` descriptor while holding both a
    process-wide lock (threads) and an exclusive ``flock`` on the file (processes — and
    writers on other hosts do not share it, so keep one file per host on NFS). Should the
    kernel ever write short, the rest follows under the same locks, so the line stays whole.
    Creates the parent folders.
    """
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


def read_jsonl(path: PathLike) -> list[JobReport]:
    """Every report of a JSON-lines file, in file order; blank lines are skipped.

    A line that is not JSON, not UTF-8, or not a valid report raises :class:`ReportError`
    naming ``path:line`` and the field — a report file is read to draw conclusions, so a bad
    line is not silently dropped.
    """
    out = []
    with open(path, "rb") as fh:
        for i, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ReportError(f"{path}:{i}: not UTF-8 text ({exc.reason})") from None
            if not line.strip():
                continue
            try:
                out.append(JobReport.from_json(line))
            except ReportError as exc:
                raise ReportError(f"{path}:{i}: {exc}") from None
    return out


def _metastore_fields(m: dict[str, Any]) -> dict[str, Any]:
    """A load's ``metastore`` counters (hive_splits.metastore) as report fields."""
    if not m:
        return {}
    return {"metastore_names": m.get("names_listed"), "metastore_fetched": m.get("fetched"),
            "metastore_pushed": m.get("pushed"), "metastore_note": m.get("note")}


# What each field means, for the report schema page (docs/report-schema.md, generated by
# scripts/docs_gen.py with each field's type from the dataclasses and its check from the specs
# above). Keys are "<record>.<field>" with record job, filters, tables or tables.filters;
# tests/test_docs_generated.py fails when a field of the schema has no entry here.
FIELD_DOCS: dict[str, str] = {
    "job.schema_version": f"the schema's version ({SCHEMA_VERSION}); a reader reads the "
                          f"versions it knows ({', '.join(map(str, _READABLE_VERSIONS))}) "
                          f"and refuses others",
    "job.query_id": "uuid4 hex, unique per job",
    "job.query_hash": "first 16 hex digits of the sha256 of the whole query text",
    "job.query_text": f"the query (first {QUERY_TEXT_LIMIT:,} characters); for `dpp.join` and "
                      "plans a description",
    "job.kind": "`sql` (the SQL-text analysis), `join` (`dpp.join`) or `plan` (the optimizer "
                "hook, or a Spark Connect DataFrame plan)",
    "job.started_at": "ISO 8601 time, UTC",
    "job.settings": "the effective `spark.dpp.*` settings (Redis passwords masked)",
    "job.enabled": "`spark.dpp.enabled`",
    "job.phases": "seconds per phase: " + ", ".join(f"`{p}`" for p in PHASES)
                  + "; the optimizer hook adds `submit` (build jobs reaching Spark's queue) "
                    "and `row_filter_wait` (planning held for row-group filters)",
    "job.analysis_notes": "why the analysis gave up, or what it skipped",
    "job.refusals": "the join keys and IN subqueries not used: each `code` (listed in "
                    "docs/why-not.md), the `subject` it is about (the key) and its `words` "
                    "(also among `analysis_notes`); since schema version 2",
    "job.environment": "what this session lacks and what it costs (said once per session, "
                       "e.g. on Spark Connect)",
    "job.filters": "one entry per dynamic filter (below)",
    "job.tables": "one entry per table reference (below); a table joined twice appears twice",
    "job.spark_scan": "after execution: `files_read`, `bytes_read`, `partitions_read` summed "
                      "over the executed plan's file scans; null before",
    "job.error": "a job-level failure, if any",
    "job.connect_session": "on a Spark Connect server with dpp inside: the client session's "
                           "`session_id`, `user` and `operation` the job ran for; else null",
    "filters.filter_id": "`<query id prefix>-f<n>`",
    "filters.build_table": "the build side's table",
    "filters.build_column": "the build key (`table.column`)",
    "filters.probe_table": "the table the filter prunes",
    "filters.probe_column": "the column of that table it prunes by",
    "filters.build_query": "the build side's SQL (null where there is no text, e.g. `dpp.join`)",
    "filters.build_rows": "rows the build side produced",
    "filters.distinct_values": "values in the merged filter when it is a value set",
    "filters.kind": "what the filter turned out to be: "
                    + ", ".join(f"`{k}`" for k in FILTER_KINDS),
    "filters.encoded_bytes": "size of the merged filter in the wire codec",
    "filters.parts_expected": "build tasks expected to report",
    "filters.parts_reported": "build tasks that reported",
    "filters.cache_hit": "the filter came from the filter cache (no Spark job ran)",
    "filters.spark_keys": "the filter is the keys Spark's own dynamic pruning resolved for the "
                          "scan (`spark.dpp.sparkKeys.enabled`; no build job of dpp's ran)",
    "filters.deferred": "the build was left to Spark's keys when the query was planned "
                        "(`spark.dpp.sparkKeys.enabled`); with `spark_keys` false none came, "
                        "and dpp's build ran when the scan was listed",
    "filters.outcome": "how it ended: " + ", ".join(f"`{o}`" for o in FILTER_OUTCOMES)
                       + "; anything but `complete` means no pruning by it",
    "filters.reason": "why not `complete`",
    "filters.build_seconds": "the build job's time",
    "filters.wait_seconds": "the time a waiter blocked on it",
    "tables.table": "the table's name",
    "tables.alias": "its alias in the query",
    "tables.location": "its root folder",
    "tables.pruning": "`applied` (something was skipped) or `none`",
    "tables.reason": "why not: the analysis' reason, or each filter's outcome",
    "tables.reason_code": "the reason's code (listed in docs/why-not.md) when dpp refused the "
                          "table; null when the reason is the filters' outcomes; since schema "
                          "version 2",
    "tables.partitions_total": "partition folders whose names were read, at every level "
                               "(children of a pruned folder are never seen); catalog tables: "
                               "the catalog's partition count",
    "tables.partitions_kept": "leaf partitions that survived",
    "tables.pruned_static": "folders pruned by the query's literals",
    "tables.pruned_dynamic": "folders pruned by dynamic filters (static wins when both apply)",
    "tables.files_pruned_stats": "files skipped by Parquet min/max statistics",
    "tables.buckets_total": "a table bucketed by a filtered column: its bucket count",
    "tables.buckets_kept": "buckets the filter's values hash to",
    "tables.files_pruned_buckets": "files of other buckets skipped",
    "tables.folders_listed": "directory listings, the table root included",
    "tables.files_listed": "files listed (`files_kept + files_skipped`)",
    "tables.files_kept": "files handed to Spark",
    "tables.files_skipped": "files listed but not handed to Spark (files of pruned folders are "
                            "never listed, so not counted)",
    "tables.bytes_kept": "bytes of the kept files",
    "tables.bytes_skipped": "bytes of the skipped files (as `files_skipped`: listed files only)",
    "tables.footers_unreadable": "corrupt or zero-byte files kept (warned about)",
    "tables.footers_read": "Parquet footers read for statistics pruning",
    "tables.stats_seconds": "time spent awaiting and testing footers once the filters were "
                            "known",
    "tables.stats_note": "why statistics pruning stopped early (`auto`)",
    "tables.row_group_filter": "the data-column filters' values as the predicate handed to "
                               "Spark with the kept files; null where none was added",
    "tables.wait_seconds": "time blocked on filters",
    "tables.enumeration_seconds": "time spent listing",
    "tables.handoff_seconds": "time spent handing the kept files to Spark",
    "tables.filters": "the filters on this reference (below)",
    "tables.lister": "which lister listed: `local` or `hadoop` (`spark` where Spark lists)",
    "tables.list_calls": "the lister's LIST requests (one per folder listed)",
    "tables.head_calls": "the lister's HEAD requests (path statuses asked)",
    "tables.handoff_list_calls": "Spark's LIST requests during the handoff, as the filesystem "
                                 "counts them; null where nothing counts them",
    "tables.handoff_head_calls": "Spark's HEAD requests during the handoff; null where nothing "
                                 "counts them",
    "tables.metastore_names": "catalog tables: partition names listed",
    "tables.metastore_fetched": "catalog tables: partition objects the metastore returned",
    "tables.metastore_pushed": "catalog tables: whether the filter of kept values reached the "
                               "metastore",
    "tables.metastore_note": "catalog tables: why not, or how the table was read",
    "tables.filters.filter_id": "the filter",
    "tables.filters.arrived": "whether it arrived before the scan stopped waiting",
    "tables.filters.outcome": "the split loader's word for it (`complete`, `timeout`, "
                              "`pending`, …)",
    "tables.filters.reason": "why not `complete`",
}
