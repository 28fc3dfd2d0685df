"""The split loader: which Parquet files of a table a scan must read.

Enumerates a table's partitions level by level (or the catalog's partition list), testing each
folder's value against its column's domain *before* listing below it, waits (bounded) for
dynamic filters while enumerating levels they do not constrain, lists files only in surviving
partitions, and optionally skips files whose Parquet statistics cannot match.

Counters (all exact; see :class:`LoadResult`):

* ``folders_listed``: directory listings done, the table root included. A single-level table
  of 40 partitions where 7 survive costs 1 + 7.
* ``partitions_total``: partition folders whose name was read, at every level (children of a
  pruned folder are never seen, so never counted). For single-level tables: the partitions.
* ``pruned_static`` / ``pruned_dynamic``: pruned folders, at every level; a folder the static
  domain rules out counts as static even when a dynamic filter would also rule it out.
* ``partitions_kept``: leaf partitions that survived (their files were listed).
* Catalog tables list no folders to enumerate: ``partitions_total`` is the catalog's partition
  count, each pruned partition counts once (at the first column that rules it out), so
  ``partitions_total == partitions_kept + pruned_static + pruned_dynamic``, and
  ``folders_listed`` counts only the kept partitions' locations. With ``files_by_spark``
  (Spark's own catalog index lists the kept partitions), a catalog table whose files nothing
  here can skip (no statistics, no bucket pruning) lists no location at all: its kept
  partitions carry their catalog values only, and the file counters stay 0.
* Per level, ``levels[i]``: ``seen == kept + pruned_static + pruned_dynamic``.
* ``files_listed == files_kept + files_skipped``; ``files_skipped`` are files listed but not
  returned (today only statistics skip files, so it equals ``files_pruned_stats``).
* ``wait_seconds``: time the loader spent blocked waiting for dynamic filters (never more
  than ``wait_timeout``: every wait is bounded by one deadline measured from load start —
  but for a filter with ``open_deadline``, whose domain can only come when Spark lists the
  scan: its own wait is bounded from then).
"""
from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Optional

from dpp.core.domain import DataType, Domain, TupleDomain
from dpp.core.errors import DomainError, LayoutError, ValueOutOfRange
from dpp.core.outcomes import FilterOutcome, WaitResult
from dpp.core.spark_rules import DEFAULT_RULES, SparkRules
from hive_splits.footers import FooterCache, cannot_match, read_footer
from hive_splits.listing import DirEntry, FileEntry, Lister, LocalLister, PrelistedLister
from hive_splits.naming import DEFAULT_PARTITION_NAME, parse_folder_name, partition_path
from hive_splits.name_verdicts import NamedVerdicts, integral_name_verdicts
from hive_splits.table import CatalogPartition, Table, local_path

if TYPE_CHECKING:
    from hive_splits.metastore import Spec

__all__ = ["DynamicFilter", "KeyExpression", "Split", "KeptPartition", "FilterStatus", "LevelStats",
           "LoadResult", "SplitLoader"]

log = logging.getLogger(__name__)

#: A deliberate bug, for the differential fuzzer's self-test only (``tests/fuzz``): with this
#: environment variable set to ``1`` every load drops one partition it kept. A fuzzer that
#: does not then report wrong rows in nearly every pruned case could not find real ones.
DROP_KEPT_SWITCH = "DPP_FUZZ_DROP_KEPT_PARTITION"
#: How many partitions that switch has dropped in this process (what the self-test reads).
dropped_by_switch = 0


@dataclass
class DynamicFilter:
    """A filter whose domain arrives at run time (from the coordinator).

    ``wait(timeout_seconds)`` blocks at most that long and returns a :class:`WaitResult` whose
    domain, when complete, constrains ``column`` (keyed by it, or as its only column): the
    column of *this* table it constrains (partition or data column), in that column's type.
    """

    filter_id: str
    column: str
    wait: Callable[[float], WaitResult]
    # a key computed from partition columns (f.sid + 1): ``column`` is then its label
    expression: Optional["KeyExpression"] = None
    # the domain can only come when Spark lists the scan (the keys of Spark's own dynamic
    # pruning, or a build left to them), however long after the load starts: ``wait`` bounds
    # itself from then, and the load's deadline does not apply (at most OPEN_WAIT_S)
    open_deadline: bool = False
    # a data column's filter wanted for the rows only: its domain reaches the caller
    # (``LoadResult.data_domains``, a row filter above the scan) and is never tested against
    # file statistics (no footer is read for it, no file listed for it)
    rows_only: bool = False


#: the longest a load waits for a filter with ``open_deadline`` (its own wait bounds it first,
#: once the scan is listed): a scan listed later than this after its load started is read
#: unpruned, reported as a timeout; a query planned but never run holds a waiting daemon
#: thread no longer than this
OPEN_WAIT_S = 2 * 3600.0


@dataclass(frozen=True)
class KeyExpression:
    """A join key that is an expression of partition columns (``f.sid + 1``, ``f.a + f.b``,
    ``cast(f.k as double)``). The loader does not imitate the expression: ``evaluate`` (Spark's
    own evaluation, :class:`dpp.spark.KeyEvaluator`) takes one row of folder texts per
    partition, in the order of ``columns``, and answers per row the key as text, None for
    NULL, or an exception where evaluation fails (the partition is then kept). The filter's
    domain is of ``type``, the key's type."""

    columns: tuple[str, ...]
    type: DataType
    evaluate: Callable[[list[list[Optional[str]]]], list[Any]]


@dataclass(frozen=True)
class Split:
    """One file to read, with the typed values of its partition (``None`` = NULL)."""

    path: str
    size: int
    partition_values: dict = field(hash=False)


@dataclass(frozen=True)
class KeptPartition:
    """A surviving leaf partition: its folder, typed values and, when the folder is the
    table root joined with ``key=value`` names (always for path tables), that relative path."""

    path: str
    values: dict = field(hash=False)
    relative: Optional[str] = None
    texts: Optional[dict] = field(default=None, hash=False)  # column -> folder text (None=NULL)


@dataclass
class FilterStatus:
    """What became of one dynamic filter."""

    filter_id: str
    column: str
    arrived: bool = False
    outcome: FilterOutcome = FilterOutcome.PENDING
    reason: Optional[str] = None
    used: bool = False
    domain: Optional[str] = None  # its describe(), for reports

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["outcome"] = str(self.outcome)
        return d


@dataclass
class LevelStats:
    column: str
    seen: int = 0
    kept: int = 0
    pruned_static: int = 0
    pruned_dynamic: int = 0


@dataclass
class LoadResult:
    """Splits and exact counters of one load (see the module docstring for definitions)."""

    table: str
    splits: list[Split] = field(default_factory=list)
    partitions: list[KeptPartition] = field(default_factory=list)
    partitions_total: int = 0
    partitions_kept: int = 0
    # the static domain is NONE (a condition no row can meet): nothing listed, nothing read
    statically_empty: bool = False
    pruned_static: int = 0
    pruned_dynamic: int = 0
    files_pruned_stats: int = 0
    # dynamic bucket pruning (a table bucketed by one column, a domain on it): Spark's bucket
    # count, the buckets the domain's values hash to (= total when it cannot say), files skipped
    buckets_total: Optional[int] = None
    buckets_kept: Optional[int] = None
    files_pruned_buckets: int = 0
    folders_listed: int = 0
    files_listed: int = 0
    files_kept: int = 0
    files_skipped: int = 0
    bytes_kept: int = 0
    bytes_skipped: int = 0
    footers_read: int = 0
    footers_unreadable: int = 0
    stats_seconds: float = 0.0          # footers awaited and tested once the domains were known
    stats_note: Optional[str] = None    # why statistics stopped early (stats_sample)
    wait_seconds: float = 0.0
    elapsed_seconds: float = 0.0
    handoff_seconds: float = 0.0        # set by whoever hands the splits to Spark
    # kept partitions some of whose listed files were skipped: the handoff gives Spark their
    # files; every other kept folder is given whole (Spark lists it in one call)
    partial_folders: set = field(default_factory=set)
    # folders ruled out (relative to the table root, at whichever level): what an index that
    # already holds Spark's own listing takes away from it
    pruned_folders: list = field(default_factory=list)
    # kept folder -> its listed files (what the handoff can give Spark without listing again)
    listings: dict = field(default_factory=dict)
    # kept folder -> Hadoop's FileStatus[] for it (Hadoop lister only): handed to Spark as is
    jvm_statuses: dict = field(default_factory=dict)
    # data column -> the dynamic filter's domain the kept files were tested against (static
    # domain included): rows outside it cannot match either, so whoever hands the splits to
    # Spark may filter them (Parquet then skips row groups)
    data_domains: dict = field(default_factory=dict)
    row_group_filter: Optional[str] = None   # set by the handoff: the predicate it added
    filters: list[FilterStatus] = field(default_factory=list)
    levels: list[LevelStats] = field(default_factory=list)
    static_ignored: list[str] = field(default_factory=list)
    # a catalog table's kept partition locations that do not exist (read as empty, as Spark
    # reads them)
    missing_locations: list[str] = field(default_factory=list)
    # storage requests: the loader's own (by its lister) and the handoff's (Spark's, counted by
    # Hadoop's storage statistics where it can tell); the metastore's partitions fetched
    lister: str = "local"
    list_calls: int = 0
    head_calls: int = 0
    handoff_list_calls: Optional[int] = None
    handoff_head_calls: Optional[int] = None
    metastore: dict = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Counters only (no splits), JSON-ready."""
        d = {k: v for k, v in self.__dict__.items()
             if k not in ("splits", "partitions", "partial_folders", "listings",
                          "jvm_statuses", "data_domains", "pruned_folders")}
        d["filters"] = [f.to_dict() for f in self.filters]
        d["levels"] = [dict(lv.__dict__) for lv in self.levels]
        return d


class _Pending:
    """One dynamic filter being waited for on its own daemon thread, from load start."""

    def __init__(self, f: DynamicFilter, deadline: float, status: FilterStatus) -> None:
        self.filter = f
        self.deadline = time.monotonic() + OPEN_WAIT_S if f.open_deadline else deadline
        self.status = status
        self.done = threading.Event()
        self.result: Optional[WaitResult] = None
        self.resolved = False
        threading.Thread(target=self._run, name=f"dpp-wait-{f.filter_id}", daemon=True).start()

    def _run(self) -> None:
        try:
            r = self.filter.wait(max(0.0, self.deadline - time.monotonic()))
            if not isinstance(r, WaitResult):
                raise TypeError(f"wait() must return a WaitResult, got {r!r}")
            self.result = r
        except Exception as exc:
            self.result = WaitResult(None, FilterOutcome.FAILED, f"{type(exc).__name__}: {exc}")
        self.done.set()


class SplitLoader:
    """Loads the splits of one table scan under a static domain and dynamic filters.

    ``static`` constrains partition and data columns (data columns only through statistics);
    ``dynamic`` filters on one column are intersected; a filter whose domain type differs from
    its column's type is not used (outcome ``type_mismatch``). ``wait_timeout`` bounds the
    total wait, from the start of :meth:`load`. ``max_workers`` bounds the threads that list
    folders and read footers. ``rules`` are the session's (time zone, ...): a folder's text is
    read as the Spark query that follows will read it, and a column whose type cannot be read
    with certainty under them is not pruned (reported). ``stats_sample``: with statistics
    pruning, first test the footers of this many kept files (spread over them) and read no
    more when none of them can be skipped (``statsPruning=auto``); None reads every footer.
    ``files_by_spark``: the caller has Spark's own catalog index list a catalog table's kept
    partitions (the optimizer hook): their files are listed here only when statistics or
    buckets may skip some, and their locations fetched only then (Spark fetches and lists
    them anyway; doing it here too would be the same work twice).
    """

    def __init__(self, table: Table, static: Optional[TupleDomain] = None,
                 dynamic: Iterable[DynamicFilter] = (), wait_timeout: float = 0.0,
                 stats_pruning: bool = False, footer_cache: Optional[FooterCache] = None,
                 max_workers: int = 8, rules: SparkRules = DEFAULT_RULES,
                 lister: Optional[Lister] = None, stats_sample: Optional[int] = None,
                 files_by_spark: bool = False) -> None:
        if wait_timeout < 0:
            raise ValueError(f"wait_timeout must be >= 0, got {wait_timeout}")
        if max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {max_workers}")
        if stats_sample is not None and stats_sample < 1:
            raise ValueError(f"stats_sample must be >= 1 or None, got {stats_sample}")
        self.table = table
        self.static = static if static is not None else TupleDomain.all()
        self.dynamic = list(dynamic)
        self.wait_timeout = float(wait_timeout)
        self.stats_pruning = stats_pruning
        self.stats_sample = stats_sample
        self.footer_cache = footer_cache
        self.max_workers = max_workers
        self.rules = rules
        self.files_by_spark = files_by_spark
        # one lister per load (its own request counts), same kind as the table's
        self.lister = (lister or table.lister or LocalLister()).fresh()
        self._testers: dict[int, Callable[[Optional[str], Any], tuple[Any, str]]] = {}

    # ------------------------------------------------------------------ binding
    def _column_types(self) -> dict[str, Optional[DataType]]:
        out: dict[str, Optional[DataType]] = {}
        for n, t in self.table.columns:
            try:
                out[n] = DataType.from_catalog(t)
            except DomainError:
                out[n] = None  # nested or unsupported: never constrained
        for c in self.table.partition_columns:
            out[c.name] = c.type
        return out

    def load(self) -> LoadResult:
        """Enumerates, waits, prunes and lists; see the module docstring for the counters."""
        start = time.monotonic()
        deadline = start + self.wait_timeout
        t = self.table
        res = LoadResult(table=t.name)
        res.levels = [LevelStats(c.name) for c in t.partition_columns]
        types = self._column_types()
        part_names = set(t.partition_names)

        # bind the static domain once: drop (and report) domains of the wrong type
        self._static: dict[str, Domain] = {}
        if not self.static.is_none():
            for col in self.static.columns:
                d = self.static.get(col)
                assert d is not None
                ct = types.get(col)
                why = self.rules.uncertain(ct) if ct is not None else None
                if ct is None or d.type != ct or why is not None:
                    msg = (f"static domain on {col!r} ignored: " + (why or (
                           f"column {'absent' if col not in types else f'of type {ct}'}, "
                           f"domain of type {d.type}")))
                    log.warning("table %s: %s", t.name, msg)
                    res.static_ignored.append(msg)
                    continue
                self._static[col] = d

        # start waiting for every dynamic filter that can be used, all at once
        self._pending: dict[str, list[_Pending]] = {}
        self._expressions: dict[str, tuple[KeyExpression, int]] = {}   # label -> (key, level)
        for f in self.dynamic:
            st = FilterStatus(f.filter_id, f.column)
            res.filters.append(st)
            if f.expression is not None:
                self._bind_expression(f, st, deadline, types)
                continue
            if f.column not in types:
                st.outcome, st.reason = FilterOutcome.UNKNOWN_COLUMN, (
                    f"column {f.column!r} is not a column of table {t.name}")
                continue
            if (f.column not in part_names and not self.stats_pruning and not f.rows_only
                    and f.column != self._bucket_column()):
                st.outcome, st.reason = FilterOutcome.UNUSED, (
                    f"{f.column!r} is a data column and statistics pruning is off")
                continue
            ct = types.get(f.column)
            why = self.rules.uncertain(ct) if ct is not None else None
            if why is not None:
                st.outcome, st.reason = FilterOutcome.TYPE_MISMATCH, why
                log.warning("dynamic filter %s on %s: %s", f.filter_id, f.column, why)
                continue
            p = _Pending(f, deadline, st)
            self._pending.setdefault(f.column, []).append(p)
        self._dynamic_domain: dict[str, Optional[Domain]] = {}
        self._types = types
        # data columns whose filters are all wanted for the rows only
        self._rows_only = {c for c, ps in self._pending.items()
                           if c not in part_names and c not in self._expressions
                           and all(p.filter.rows_only for p in ps)}
        self._res = res

        if self.static.is_none():
            log.info("table %s: static domain is NONE; nothing to read", t.name)
            res.statically_empty = True
            self._finish_filters("static domain is NONE")
            res.elapsed_seconds = time.monotonic() - start
            return res

        with ThreadPoolExecutor(max_workers=self.max_workers,
                                thread_name_prefix="dpp-splits") as pool:
            self._pool = pool
            if t.is_catalog:
                with_files = self._files_needed()
                leaves = self._enumerate_catalog(with_files)
                if with_files:
                    self._list_files(leaves)
                else:
                    self._keep_unlisted(leaves)
            else:
                leaves = self._enumerate_folders()
                if isinstance(self.lister, PrelistedLister) and not self._files_needed():
                    # the kept-partition index lists its kept folders through Spark's own
                    # index: listing them here too would be every kept folder twice
                    self._keep_unlisted(leaves)
                else:
                    self._list_files(leaves)
        # the rows' domains, however the files came
        res.data_domains.update(self._data_domains(rows_only=True))
        if os.environ.get(DROP_KEPT_SWITCH) == "1":
            _drop_one_kept(res, self._dynamic_domain, self.table)
        self._finish_filters("not needed: no partition survived")
        res.lister = self.lister.kind
        res.list_calls, res.head_calls = self.lister.calls.snapshot()
        res.elapsed_seconds = time.monotonic() - start
        log.info("table %s: kept %d of %d partitions seen, %d files (%d bytes); listed %d "
                 "folders; waited %.3fs", t.name, res.partitions_kept, res.partitions_total,
                 res.files_kept, res.bytes_kept, res.folders_listed, res.wait_seconds)
        return res

    # ------------------------------------------------------------------ filters
    def _bind_expression(self, f: DynamicFilter, st: FilterStatus, deadline: float,
                         types: dict[str, Optional[DataType]]) -> None:
        """Waits for an expression key's filter like a column's, under its label; it is
        applied at the level of the last partition column it reads."""
        key = f.expression
        assert key is not None
        levels = {c.name: i for i, c in enumerate(self.table.partition_columns)}
        missing = [c for c in key.columns if c not in levels]
        if missing or not key.columns:
            st.outcome, st.reason = FilterOutcome.UNKNOWN_COLUMN, (
                f"key {f.column} reads {missing or 'no column'}, not partition columns of "
                f"table {self.table.name}")
            return
        if f.column in types:
            st.outcome, st.reason = FilterOutcome.UNKNOWN_COLUMN, (
                f"key label {f.column!r} is also a column of table {self.table.name}")
            return
        why = self.rules.uncertain(key.type)
        if why is not None:
            st.outcome, st.reason = FilterOutcome.TYPE_MISMATCH, why
            return
        types[f.column] = key.type
        self._expressions[f.column] = (key, max(levels[c] for c in key.columns))
        self._pending.setdefault(f.column, []).append(_Pending(f, deadline, st))

    def _expression_verdicts(self, level: int, texts: list[dict[str, Optional[str]]],
                             verdicts: list[str]) -> None:
        """Turns to "dynamic" the verdict of every kept partition whose expression key (one
        read at this level) cannot match its filter's domain: NULL never matches an equi-join;
        a key Spark fails to compute is kept (the query would meet the same rows)."""
        for label, (key, at) in self._expressions.items():
            if at != level:
                continue
            dom = self._await(label)
            if dom is None:
                continue
            rows: dict[tuple, int] = {}
            for i, t in enumerate(texts):
                if verdicts[i] == "keep":
                    rows.setdefault(tuple(t.get(c) for c in key.columns), len(rows))
            if not rows:
                continue
            try:
                answers = key.evaluate([list(r) for r in rows])
                if len(answers) != len(rows):
                    raise ValueError(f"{len(answers)} answers for {len(rows)} partitions")
            except Exception as exc:
                log.warning("table %s: key %s could not be evaluated, not pruned by it: %s",
                            self.table.name, label, exc)
                for ps in self._pending.get(label, []):
                    ps.status.used = False
                    ps.status.reason = f"the key could not be evaluated: {exc}"[:300]
                continue
            fits: list[bool] = []
            for answer in answers:
                if isinstance(answer, BaseException):
                    fits.append(True)
                    continue
                if answer is None:
                    fits.append(dom.contains(None))
                    continue
                try:
                    fits.append(dom.contains(self.rules.read_text(key.type, answer)))
                except (DomainError, ValueOutOfRange):
                    fits.append(True)
            for i, t in enumerate(texts):
                if verdicts[i] == "keep" and not fits[rows[tuple(t.get(c) for c in key.columns)]]:
                    verdicts[i] = "dynamic"

    def _await(self, column: str) -> Optional[Domain]:
        """The intersected domain of the column's dynamic filters that arrive in time."""
        if column in self._dynamic_domain:
            return self._dynamic_domain[column]
        dom: Optional[Domain] = None
        for p in self._pending.get(column, []):
            if not p.resolved:
                t0 = time.monotonic()
                p.done.wait(max(0.0, p.deadline - t0))
                self._res.wait_seconds += time.monotonic() - t0
                d = self._resolve(p)
                if d is not None:
                    dom = d if dom is None else dom.intersect(d)
        self._dynamic_domain[column] = dom
        return dom

    def _resolve(self, p: _Pending) -> Optional[Domain]:
        p.resolved = True
        st = p.status
        if not p.done.is_set():
            st.outcome = FilterOutcome.TIMEOUT
            st.reason = f"no domain within the wait timeout of {self.wait_timeout:g}s"
            log.warning("dynamic filter %s on %s: %s", st.filter_id, st.column, st.reason)
            return None
        assert p.result is not None
        r = p.result
        st.outcome, st.reason = r.outcome, r.reason
        if r.domain is None or not r.ok:
            log.info("dynamic filter %s on %s: no domain (%s: %s)", st.filter_id, st.column,
                     r.outcome, r.reason)
            return None
        ct = self._types.get(st.column)
        td = r.domain
        if td.is_none():
            d = Domain.none(ct) if ct is not None else None
        else:
            # keyed by this column, or the one column a single-key filter carries
            d = td.get(st.column)
            if d is None and len(td.columns) == 1:
                d = td.get(td.columns[0])
        if d is None:
            st.outcome, st.reason = FilterOutcome.NOT_USED, (
                f"the filter's domain does not constrain column {st.column!r}")
            return None
        st.arrived = True
        st.domain = d.describe()
        if ct is None or d.type != ct:
            st.outcome = FilterOutcome.TYPE_MISMATCH
            st.reason = (f"filter domain is of type {d.type}, column {st.column!r} is of type "
                         f"{ct if ct is not None else 'unsupported'}; not used")
            log.warning("dynamic filter %s: %s", st.filter_id, st.reason)
            return None
        st.used = True
        return d

    def _finish_filters(self, why: str) -> None:
        """Marks filters never waited for (nothing left to prune) without blocking."""
        for ps in self._pending.values():
            for p in ps:
                if not p.resolved:
                    if p.done.is_set():
                        self._resolve(p)
                        p.status.used = False
                    else:
                        p.resolved = True
                        p.status.outcome = FilterOutcome.NOT_WAITED
                        p.status.reason = why

    # ------------------------------------------------------------------ partition tests
    def _tester(self, level: int) -> Callable[[Optional[str], Any], tuple[Any, str]]:
        """A memoized test of one level's raw folder values → (typed value, verdict);
        ``where`` (a text, or a function giving it) names the partition in an error."""
        pc = self.table.partition_columns[level]
        static = self._static.get(pc.name)
        dynamic = self._await(pc.name) if pc.name in self._pending else None
        memo: dict[Optional[str], tuple[Any, str]] = {}
        # a type these rules cannot read with certainty: nothing prunes by it (the static and
        # dynamic domains were already set aside, reported), and its text is kept as it is
        uncertain = self.rules.uncertain(pc.type) is not None

        def test(raw: Optional[str], where: Any) -> tuple[Any, str]:
            hit = memo.get(raw)
            if hit is not None:
                return hit
            if raw is None or uncertain:
                value = raw
            else:
                try:
                    value = self.rules.read_text(pc.type, raw)
                except ValueOutOfRange:
                    memo[raw] = (raw, "keep")  # Spark reads it, Python cannot: never pruned
                    return raw, "keep"
                except DomainError as exc:
                    where = where() if callable(where) else where
                    raise LayoutError(f"partition folder {where!r}: value {raw!r} of column "
                                      f"{pc.name!r} cannot be read as {pc.type} ({exc})") from None
            if static is not None and not static.contains(value):
                verdict = "static"
            elif dynamic is not None and not dynamic.contains(value):
                verdict = "dynamic"
            else:
                verdict = "keep"
            memo[raw] = (value, verdict)
            return value, verdict

        test.memo = memo                   # type: ignore[attr-defined]
        test.domains = (None if uncertain else (static, dynamic))  # type: ignore[attr-defined]
        return test

    def _count(self, level: int, verdict: str, new: bool = True) -> bool:
        lv = self._res.levels[level]
        lv.seen += 1
        if new:
            self._res.partitions_total += 1
        if verdict == "keep":
            lv.kept += 1
            return True
        if verdict == "static":
            lv.pruned_static += 1
            self._res.pruned_static += 1
        else:
            lv.pruned_dynamic += 1
            self._res.pruned_dynamic += 1
        return False

    # ------------------------------------------------------------------ enumeration

    def _count_level(self, level: int, verdicts: list[str], new: bool) -> None:
        """:meth:`_count` for a whole level's verdicts at once."""
        n = Counter(verdicts)
        lv = self._res.levels[level]
        lv.seen += len(verdicts)
        if new:
            self._res.partitions_total += len(verdicts)
        lv.kept += n["keep"]
        lv.pruned_static += n["static"]
        self._res.pruned_static += n["static"]
        dynamic = len(verdicts) - n["keep"] - n["static"]
        lv.pruned_dynamic += dynamic
        self._res.pruned_dynamic += dynamic

    def _level_answers(self, depth: int, rows: list[tuple[Optional[str], ...]],
                       current: list[int], objects: Optional[list[CatalogPartition]]
                       ) -> dict[Optional[str], tuple[Any, str]]:
        """(typed value, verdict) of each distinct text the kept partitions ``current`` have
        at level ``depth`` (the level's memo, which may hold more): tested once per text, not
        once per partition."""
        test = self._tester_at(depth)
        distinct = dict.fromkeys(rows[i][depth] for i in current)
        _integral_answers(test, self.table.partition_columns[depth].type, distinct)
        memo: dict[Optional[str], tuple[Any, str]] = test.memo   # type: ignore[attr-defined]
        columns = [pc.name for pc in self.table.partition_columns]

        def where(raw: Optional[str]) -> str:   # only for an error's text
            i = next(i for i in current if rows[i][depth] == raw)
            cp = objects[i] if objects is not None else None
            return (cp.location if cp is not None and cp.location
                    else _spec_text(zip(columns, rows[i])))

        for raw in distinct:
            if raw not in memo:
                test(raw, lambda raw=raw: where(raw))
        return memo

    def _tester_at(self, depth: int) -> Callable[[Optional[str], Any], tuple[Any, str]]:
        """The level's memoized tester, made once per load."""
        if depth not in self._testers:
            self._testers[depth] = self._tester(depth)
        return self._testers[depth]

    def _scan(self, folder: str) -> tuple[list[DirEntry], list[FileEntry]]:
        """(visible sub-folders, visible files), sorted by name; a folder that cannot be
        listed is an error naming it (its rows would otherwise be lost without a word)."""
        try:
            return self.lister.list(folder)
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise LayoutError(f"table {self.table.name}: cannot list folder {folder!r}: "
                              f"{exc.strerror or exc}") from None

    def _scan_many(self, folders: list[str], missing_empty: bool = False
                   ) -> list[tuple[list[DirEntry], list[FileEntry]]]:
        """Each folder listed. ``missing_empty``: a folder that does not exist holds no file
        (recorded in ``missing_locations``) — a catalog table's kept partition location, as
        Spark's catalog index reads it (it lists the partitions' root paths and skips a
        missing one: a folder another job removed, its metastore entry left)."""
        def scan(folder: str) -> tuple[list[DirEntry], list[FileEntry]]:
            try:
                return self._scan(folder)
            except FileNotFoundError:
                if not missing_empty:
                    raise
                self._res.missing_locations.append(folder)
                return [], []

        self._res.folders_listed += len(folders)
        if len(folders) <= 1:
            return [scan(f) for f in folders]
        return list(self._pool.map(scan, folders))

    def _enumerate_folders(self) -> list[KeptPartition]:
        t = self.table
        root = t.location
        if (isinstance(self.lister, PrelistedLister) and len(t.partition_columns) == 1
                and not self._expressions):
            named = self.lister.names_below(root)
            if named is not None:
                return self._enumerate_named(root, named)
        current: list[tuple[str, dict, str, dict]] = [(root, {}, "", {})]
        for depth, pc in enumerate(t.partition_columns):
            try:
                listings = self._scan_many([f for f, *_ in current])
            except FileNotFoundError as exc:
                raise LayoutError(f"table {t.name}: folder {exc.filename or root!r} does not "
                                  f"exist (removed while the table was being listed?)") from None
            children: list[tuple] = []
            for (folder, values, rel, texts), (dirs, files) in zip(current, listings):
                if files:
                    raise LayoutError(
                        f"table {t.name}: data file {files[0].path!r} sits among partition "
                        f"folders of column {pc.name!r}, expected only {pc.name}=... folders")
                self._add_children(children, pc.name, ((e.name, e.path) for e in dirs),
                                   values, rel, texts)
            # values of this level are known; wait (bounded) for this column's filters
            test = self._tester(depth)
            # integers as Spark writes them, tested in one pass (most of the work at 100,000
            # partitions); the rest one by one below
            _integral_answers(test, pc.type, dict.fromkeys(c[5] for c in children))
            memo = test.memo   # type: ignore[attr-defined]
            if not self._expressions:
                current = self._split_level(depth, pc.name, children, test, memo)
                if not current:
                    break
                continue
            tested, readable = [], []
            for child in children:
                hit = memo.get(child[5])
                if hit is None:
                    try:
                        hit = test(child[5], child[0])
                    except LayoutError:
                        if self._data_file_below(child[0]) is not None:
                            raise
                        continue   # holds no file: Spark's discovery passes it over, so do we
                tested.append(hit)
                readable.append(child)
            children = readable
            verdicts = [v for _value, v in tested]
            all_texts: Optional[list[dict]] = None
            if self._expressions:
                all_texts = [{**texts, pc.name: raw} for _p, _v, _r, texts, _n, raw in children]
                self._expression_verdicts(depth, all_texts, verdicts)
            self._count_level(depth, verdicts, True)
            kept = []
            pruned = self._res.pruned_folders
            for i, ((path, values, rel, texts, name, raw), (value, _), verdict) in enumerate(
                    zip(children, tested, verdicts)):
                if verdict == "keep":
                    kept.append((path, {**values, pc.name: value},
                                 f"{rel}/{name}" if rel else name,
                                 all_texts[i] if all_texts is not None
                                 else {**texts, pc.name: raw}))
                else:
                    pruned.append(f"{rel}/{name}" if rel else name)
            current = kept
            if not current:
                break
        return [KeptPartition(p, v, r) for p, v, r, _t in current]

    def _enumerate_named(self, root: str, names: list[str]) -> list[KeptPartition]:
        """A one-level table whose partition folders are known by name (another listing
        made them: :class:`PrelistedLister`): integer names judged in one pass, with a path
        made only for a folder kept (at 100,000 partitions the per-folder work is most of a
        query's cost); any other level as :meth:`_enumerate_folders` judges a listed one."""
        pc = self.table.partition_columns[0]
        prefix = pc.name + "="
        cut = len(prefix) if "%" not in pc.name and "=" not in pc.name else 0
        base = root.rstrip("/") + "/"
        test = self._tester(0)
        domains = getattr(test, "domains", None)
        if cut and domains is not None:
            fast = integral_name_verdicts(names, prefix, pc.type.integral_bounds, *domains)
            if fast is not None:
                return self._named_verdicts(base, names, pc.name, fast)
        children: list[tuple] = []
        self._add_children(children, pc.name, ((n, base + n) for n in names), {}, "", {})
        _integral_answers(test, pc.type, dict.fromkeys(c[5] for c in children))
        memo = test.memo   # type: ignore[attr-defined]
        kept = self._split_level(0, pc.name, children, test, memo)
        return [KeptPartition(p, v, r) for p, v, r, _t in kept]

    def _add_children(self, children: list[tuple], column: str,
                      entries: Iterable[tuple[str, str]], values: dict, rel: str,
                      texts: dict) -> None:
        """Appends ``(path, values, rel, texts, name, raw)`` for each ``(name, path)`` that is
        a ``column=...`` folder (raw: its unescaped value, None for the NULL partition); a
        folder of another name is checked as Spark's discovery would (:meth:`_stray_folder`)
        and passed over."""
        # a folder named exactly "<column>=<text>" with nothing escaped needs no parsing
        prefix = column + "="
        cut = len(prefix) if "%" not in column and "=" not in column else 0
        for name, path in entries:
            if cut and name.startswith(prefix) and len(name) > cut and "%" not in name:
                raw: Optional[str] = name[cut:]
                children.append((path, values, rel, texts, name,
                                 None if raw == DEFAULT_PARTITION_NAME else raw))
                continue
            parsed = parse_folder_name(name)
            if parsed is None or parsed[0] != column:
                self._stray_folder(path, parsed, column)
                continue   # empty: no files to read, as in Spark's discovery
            children.append((path, values, rel, texts, name, parsed[1]))

    def _named_verdicts(self, base: str, names: list[str], column: str,
                        fast: NamedVerdicts) -> list[KeptPartition]:
        """:meth:`_enumerate_named`'s result from a level judged in one pass."""
        kept = [KeptPartition(base + names[i], {column: v}, names[i])
                for i, v in zip(fast.kept, fast.values)]
        pruned = self._res.pruned_folders
        start = 0
        for i in fast.kept:   # the names between two kept ones, a slice at a time
            pruned.extend(names[start:i])
            start = i + 1
        pruned.extend(names[start:])
        self._count_fast(0, len(names), fast)
        return kept

    def _split_level(self, depth: int, column: str, children: list[tuple],
                     test: Callable[[Optional[str], Any], tuple[Any, str]],
                     memo: dict[Optional[str], tuple[Any, str]]
                     ) -> list[tuple[str, dict, str, dict]]:
        """One level's folders into kept and pruned in one pass (no filter by expression to
        wait for): the folders a level has are 100,000 at the most partitioned tables."""
        kept = []
        pruned = self._res.pruned_folders
        verdicts = []
        for path, values, rel, texts, name, raw in children:
            hit = memo.get(raw)
            if hit is None:
                try:
                    hit = test(raw, path)
                except LayoutError:
                    if self._data_file_below(path) is not None:
                        raise
                    continue   # holds no file: Spark's discovery passes it over, so do we
            value, verdict = hit
            verdicts.append(verdict)
            if verdict == "keep":
                kept.append((path, {**values, column: value}, rel + "/" + name if rel else name,
                             {**texts, column: raw}))
            else:
                pruned.append(rel + "/" + name if rel else name)
        self._count_level(depth, verdicts, True)
        return kept

    def _stray_folder(self, path: str, parsed: Optional[tuple[str, Optional[str]]],
                      column: str) -> None:
        """A folder among ``column=...`` folders that is not one of them (``aaa_tmp``, or
        another column's). Spark's partition discovery only looks at folders holding files:
        one with no file anywhere below contributes nothing and is passed over; one holding a
        file makes Spark refuse the table (conflicting directory structures or partition
        column names), so it is an error here too, naming the folder and the file."""
        found = self._data_file_below(path)
        if found is not None:
            what = ("is not a key=value folder" if parsed is None else
                    f"is a partition of column {parsed[0]!r}")
            raise LayoutError(
                f"table {self.table.name}: folder {path!r} {what}, expected column {column!r} "
                f"at this level, and holds data file {found!r} (Spark's partition discovery "
                f"rejects such a layout too)")

    def _data_file_below(self, path: str) -> Optional[str]:
        """The first file anywhere below the folder ``path``, or None: a folder that holds
        none is no partition to Spark's discovery (its value, readable or not, contributes
        nothing)."""
        pending = [path]
        while pending:
            try:
                listings = self._scan_many(pending)
            except FileNotFoundError:
                return None   # removed meanwhile: it holds nothing now
            pending = []
            for dirs, files in listings:
                if files:
                    return files[0].path
                pending.extend(d.path for d in dirs)
        return None

    def _files_needed(self) -> bool:
        """Whether a table's kept partitions must be listed here: always, unless
        ``files_by_spark`` and nothing can skip a file (statistics on a data column's domain,
        buckets by the bucket column's)."""
        if not self.files_by_spark:
            return True
        stats = self._stats_columns()
        bucket = self._bucket_column()
        return stats or (bucket is not None and (bucket in self._static
                                                 or bucket in self._pending))

    def _stats_columns(self) -> bool:
        """Whether file statistics may skip a file: statistics pruning on, and a data column
        with a static domain or a dynamic filter not wanted for the rows only."""
        part = set(self.table.partition_names)
        return self.stats_pruning and (
            any(c not in part for c in self._static)
            or any(c not in part and c not in self._expressions and c not in self._rows_only
                   for c in self._pending))

    def _keep_unlisted(self, leaves: list[KeptPartition]) -> None:
        """The kept partitions of a table Spark lists itself (a catalog table's, a declared
        folder's kept-partition index): counted, not listed."""
        res = self._res
        for kp in leaves:
            res.partitions_kept += 1
            res.partitions.append(kp)

    def _enumerate_catalog(self, locations: bool = True) -> list[KeptPartition]:
        """The catalog's partitions the domains keep; ``locations``: with their locations
        (fetched for the survivors only), else with their catalog values alone (path "").

        Every partition is one tuple of raw texts here, and each level's test runs once per
        distinct text: at 100,000 partitions the per-partition work is what grows."""
        t = self.table
        source = t.partition_source
        part = set(t.partition_names)
        columns = [pc.name for pc in t.partition_columns]
        objects: Optional[list[CatalogPartition]] = None   # every partition, when fetched
        if source is not None and not (locations and not (
                any(c in part for c in self._static) or any(c in part for c in self._pending)
                or self._expressions)):
            # names of every partition (light), tested here; full objects for survivors only
            rows = _source_rows(source)
            self._res.metastore = {"names_listed": len(rows), "fetched": 0}
            if not locations:   # Spark's catalog index fetches what is kept, by name
                source = None
        elif source is not None:
            # no domain on a partition column: every partition survives and its object is
            # needed, so all come in one metastore call (names first would be a second round
            # trip for nothing: a catalog table read whole, ~0.1 s at 1,824 partitions)
            fetched_all, info = source.fetch_every()
            self._res.metastore = info
            objects = list(fetched_all)
            rows = [tuple(v for _, v in cp.values) for cp in objects]
            source = None
        else:
            assert t.catalog_partitions is not None
            objects = list(t.catalog_partitions)
            rows = [tuple(v for _, v in cp.values) for cp in objects]
        current = list(range(len(rows)))   # indexes of the partitions still kept
        typed: list[dict[str, Any]] = [{} for _ in rows] if len(columns) > 1 else []
        first: dict[Optional[str], tuple[Any, str]] = {}   # the first level's answers
        fast = self._catalog_fast(rows)
        if fast is not None:   # one integer level, judged in one pass
            self._count_fast(0, len(rows), fast)
            current = fast.kept
            first = {rows[i][0]: (v, "keep") for i, v in zip(fast.kept, fast.values)}
        for depth, pc in enumerate(t.partition_columns):
            if fast is not None:
                break
            answers = self._level_answers(depth, rows, current, objects)
            if depth == 0:
                first = answers
            verdicts = [answers[rows[i][depth]][1] for i in current]
            if self._expressions:
                self._expression_verdicts(depth, [dict(zip(columns, rows[i])) for i in current],
                                          verdicts)
            self._count_level(depth, verdicts, new=depth == 0)
            kept = [i for i, v in zip(current, verdicts) if v == "keep"]
            if typed:
                for i in kept:
                    typed[i][pc.name] = answers[rows[i][depth]][0]
            current = kept
            if not current:
                break

        def values_of(i: int) -> dict[str, Any]:
            if typed:
                return typed[i]
            return {columns[0]: first[rows[i][0]][0]}

        def spec_of(i: int) -> Spec:
            return tuple(zip(columns, rows[i]))

        if source is not None and current:
            fetched, info = source.fetch([spec_of(i) for i in current],
                                         [values_of(i) for i in current],
                                         [fast.sorted_values([r[0] for r in rows])]
                                         if fast is not None else self._column_values(rows))
            self._res.metastore.update(info)
            by_spec = {p.values: p for p in fetched}
            gone = [spec_of(i) for i in current if spec_of(i) not in by_spec]
            if gone:
                raise LayoutError(f"table {t.name}: partition {_spec_text(gone[0])} was listed "
                                  f"by the metastore but is no longer there (dropped while the "
                                  f"query was planned?)")
            located = {i: by_spec[spec_of(i)] for i in current}
        elif objects is not None:
            located = {i: objects[i] for i in current}
        else:
            located = {}
        out = []
        for i in current:
            cp = located.get(i)
            if cp is None or cp.location is None:   # names only: Spark's index locates it
                out.append(KeptPartition("", values_of(i), None, dict(spec_of(i))))
                continue
            path = local_path(cp.location)
            rel = partition_path(list(cp.values)) if cp.at_default_path(t.location, path) else None
            out.append(KeptPartition(path, values_of(i), rel, dict(cp.values)))
        return out

    def _catalog_fast(self, rows: list[tuple[Optional[str], ...]]) -> Optional[NamedVerdicts]:
        """A one-column table's integer partitions judged in one pass, or None where each
        must be judged on its own (see :mod:`hive_splits.name_verdicts`)."""
        if len(self.table.partition_columns) != 1 or self._expressions or not rows:
            return None
        test = self._tester_at(0)
        domains = getattr(test, "domains", None)
        if domains is None:
            return None
        texts = [r[0] for r in rows]
        return integral_name_verdicts(texts, "", self.table.partition_columns[0].type
                                      .integral_bounds, *domains)

    def _count_fast(self, level: int, seen: int, fast: NamedVerdicts) -> None:
        """:meth:`_count_level` for a level judged in one pass."""
        lv = self._res.levels[level]
        lv.seen += seen
        self._res.partitions_total += seen
        lv.kept += len(fast.kept)
        dynamic = seen - len(fast.kept) - fast.static_pruned
        lv.pruned_static += fast.static_pruned
        self._res.pruned_static += fast.static_pruned
        lv.pruned_dynamic += dynamic
        self._res.pruned_dynamic += dynamic

    def _column_values(self, rows: list[tuple[Optional[str], ...]]
                       ) -> Optional[list[list[tuple[Any, str]]]]:
        """Per partition column, every value the partitions have as (typed, text), sorted
        by value; None when a column's values cannot be ordered."""
        out = []
        for depth, _ in enumerate(self.table.partition_columns):
            test = self._tester_at(depth)  # memoized: read already while enumerating
            seen: dict[str, Any] = {}
            for row in rows:
                raw = row[depth]
                if raw is not None and raw not in seen:
                    try:
                        seen[raw] = test(raw, "")[0]
                    except LayoutError:  # of a partition pruned before: only no ranges
                        return None
            try:
                out.append(sorted(((v, t) for t, v in seen.items()), key=lambda vt: vt[0]))
            except TypeError:
                return None
        return out

    # ------------------------------------------------------------------ files
    def _bucket_column(self) -> Optional[str]:
        """The column a table is bucketed by, when exactly one (Spark's bucket id of a row is
        then ``pmod(hash(value), n)``; with several columns we do not prune)."""
        spec = getattr(self.table, "bucketing", None)
        if spec is None or len(spec.columns) != 1:
            return None
        return spec.columns[0]

    def _bucket_ids(self) -> Optional[frozenset]:
        """The bucket ids rows allowed by the bucket column's domains can be in; None: all."""
        col = self._bucket_column()
        if col is None:
            return None
        dom = self._static.get(col)
        if col in self._pending:
            d = self._await(col)
            if d is not None:
                dom = d if dom is None else dom.intersect(d)
        if dom is None:
            return None
        from hive_splits.buckets import buckets_for

        n = self.table.bucketing.num_buckets
        ids = buckets_for(dom, dom.type, n)
        self._res.buckets_total = n
        self._res.buckets_kept = n if ids is None else len(ids)
        return ids

    def _data_domains(self, rows_only: bool = False) -> dict[str, Domain]:
        """Data columns' domains (static and dynamic, intersected): those statistics test, or
        with ``rows_only`` those of the filters wanted for the rows only."""
        part = set(self.table.partition_names)
        doms = {} if rows_only else {c: d for c, d in self._static.items() if c not in part}
        for col in self._pending:
            if col in part or col in self._expressions or (col in self._rows_only) != rows_only:
                continue
            d = self._await(col)
            if d is not None:
                static = self._static.get(col)
                doms[col] = d if static is None else static.intersect(d)
        return doms

    def _list_files(self, leaves: list[KeptPartition]) -> None:
        res = self._res
        t = self.table
        if not t.partition_columns and not t.is_catalog:
            leaves = [KeptPartition(t.location, {}, "")]
        try:
            listings = self._scan_many([kp.path for kp in leaves], missing_empty=t.is_catalog)
        except FileNotFoundError as exc:
            # listed, not stat'ed first: a HEAD per kept partition costs a round trip on
            # object stores; the error names the partition all the same
            kp = next((k for k in leaves if k.path == exc.filename), None)
            spec = ", ".join(f"{k}={v!r}" for k, v in (kp.values if kp else {}).items())
            raise LayoutError(f"table {t.name}: location {exc.filename!r} of partition "
                              f"({spec}) does not exist") from None
        prefetch = self._stats_columns()
        entries: list[tuple[KeptPartition, FileEntry, Optional[Future]]] = []
        for kp, (dirs, files) in zip(leaves, listings):
            if dirs:
                raise LayoutError(
                    f"table {t.name}: folder {dirs[0].path!r} inside leaf partition "
                    f"{kp.path!r} (columns {list(t.partition_names)}): expected only data files")
            res.partitions_kept += 1
            res.partitions.append(kp)
            res.listings[kp.path] = files
            jvm_statuses = getattr(self.lister, "statuses", {}).get(kp.path)
            if jvm_statuses is not None:
                res.jvm_statuses[kp.path] = jvm_statuses
            for f in files:
                fut = (self._pool.submit(read_footer, f.path, f.size, f.mtime_ns,
                                         self.footer_cache, self.lister.read_footer, f.change)
                       if prefetch else None)
                entries.append((kp, f, fut))
        res.files_listed = len(entries)
        buckets = self._bucket_ids() if entries else None
        if buckets is not None:
            from hive_splits.buckets import bucket_of_file
            from hive_splits.listing import base_name

            left = []
            for kp, fe, fut in entries:
                b = bucket_of_file(base_name(fe.path))
                if b is not None and b not in buckets:
                    if fut is not None:
                        fut.cancel()
                    res.partial_folders.add(kp.path)
                    res.files_pruned_buckets += 1
                    res.files_skipped += 1
                    res.bytes_skipped += fe.size
                else:
                    left.append((kp, fe, fut))
            entries = left
        domains = self._data_domains() if prefetch and entries else {}
        res.data_domains = {c: d for c, d in domains.items() if c in self._pending}
        t0 = time.monotonic()
        metas: dict[int, Any] = {}

        def meta_of(i: int) -> Any:
            """Entry i's footer (awaited once), or None when unreadable (the file is kept)."""
            if i not in metas:
                fut = entries[i][2]
                assert fut is not None
                try:
                    metas[i] = fut.result()
                    res.footers_read += 1
                except Exception as exc:
                    res.footers_unreadable += 1
                    log.warning("table %s: cannot read the Parquet footer of %s (%s); file "
                                "kept unpruned", t.name, entries[i][1].path, exc)
                    metas[i] = None
            return metas[i]

        if domains and prefetch and self.stats_sample and len(entries) > self.stats_sample:
            n, k = len(entries), self.stats_sample
            probe = sorted({round(j * (n - 1) / (k - 1)) for j in range(k)}) if k > 1 else [0]
            if not any(m is not None and cannot_match(m, domains)
                       for m in (meta_of(i) for i in probe)):
                res.stats_note = (f"statistics stopped after {len(probe)} sampled footers of "
                                  f"{n} files: none could be skipped")
                log.info("table %s: %s", t.name, res.stats_note)
                domains = {}
        for i, (kp, fe, fut) in enumerate(entries):
            path, size = fe.path, fe.size
            if domains and fut is not None:
                meta = meta_of(i)
                if meta is not None and cannot_match(meta, domains):
                    res.partial_folders.add(kp.path)
                    res.files_pruned_stats += 1
                    res.files_skipped += 1
                    res.bytes_skipped += size
                    continue
            elif fut is not None:
                fut.cancel()
            res.splits.append(Split(path, size, kp.values))
            res.files_kept += 1
            res.bytes_kept += size
        if prefetch:
            res.stats_seconds = time.monotonic() - t0


_CANONICAL_INT = re.compile(r"-?(?:0|[1-9][0-9]{0,18})")


def _integral_answers(test: Any, type_: DataType, raws: Iterable[Optional[str]]) -> None:
    """Fills ``test``'s memo for the texts of an integral column written as Spark writes
    an integer (no sign but ``-``, no leading zero, no space) and inside the type's range:
    what :meth:`SparkRules.read_text` reads from such a text is ``int(text)``, and the
    verdict is the domains' answer for it. Every other text is left to ``test`` itself. At
    100,000 partitions this is most of the loader's work, done in a third of the time."""
    bounds = type_.integral_bounds
    domains = getattr(test, "domains", None)
    if bounds is None or domains is None:
        return
    static, dynamic = domains
    # a domain's own test coerces the value to its type first (an integral type's key is the
    # integer itself): the fast test applies within every bound it would check
    lo, hi = bounds
    for d in (static, dynamic):
        if d is not None:
            if d.type.integral_bounds is None:
                return
            lo, hi = max(lo, d.type.integral_bounds[0]), min(hi, d.type.integral_bounds[1])
    memo = test.memo
    canonical = _CANONICAL_INT.fullmatch
    for raw in raws:
        if raw is None or raw in memo or canonical(raw) is None:
            continue
        value = int(raw)
        if not lo <= value <= hi:
            continue
        if static is not None and not static.contains_key(value):
            memo[raw] = (value, "static")
        elif dynamic is not None and not dynamic.contains_key(value):
            memo[raw] = (value, "dynamic")
        else:
            memo[raw] = (value, "keep")


def _source_rows(source: Any) -> list[tuple[Optional[str], ...]]:
    """Every partition of a catalog source as a tuple of raw texts (None: NULL)."""
    rows = getattr(source, "rows", None)
    if rows is not None:
        return rows()
    return [tuple(v for _, v in spec) for spec in source.names()]


def _spec_text(values: Iterable[tuple[str, Optional[str]]]) -> str:
    """A partition named as the metastore names it (for errors about a partition whose
    location is not fetched yet)."""
    return "/".join(f"{k}={'__HIVE_DEFAULT_PARTITION__' if v is None else v}"
                    for k, v in values)


def _drop_one_kept(res: LoadResult, domains: Mapping[str, Optional[Domain]],
                   table: Table) -> None:
    """The self-test's mutation: one kept partition that holds rows is ruled out as if a
    filter had pruned it (its files gone from the splits, its folder among the pruned).

    Dropping a kept partition whose rows no build side asked for changes no answer, and a
    self-test that drops one measures the data, not the fuzzer. So the partition dropped is
    the one most likely to hold a matching row: one with rows on disk (a kept partition with
    no file, or only empty files, is never dropped: when that is all dpp kept, the switch
    does not act), whose values the build sides' exact domains name (a bloom or range domain
    only says "maybe"), then the one with the most rows. Fuzzer-only: it reads the local
    files' footers itself, whatever the loader listed."""
    import os.path

    import pyarrow.parquet as pq

    where: dict[tuple, str] = {}
    if any(not kp.path for kp in res.partitions) and table.is_catalog:
        # kept partitions of a catalog table Spark lists itself carry no location: ask
        try:
            parts = (table.partition_source.fetch_every()[0]
                     if table.partition_source is not None
                     else list(table.catalog_partitions or ()))
            where = {tuple(cp.values): cp.location for cp in parts}
        except Exception:
            where = {}

    def rows(kp: KeptPartition) -> int:
        path = kp.path or where.get(tuple((kp.texts or {}).items()), "")
        if not path:
            return 0
        folder = local_path(path)
        try:
            names = [n for n in os.listdir(folder) if not n.startswith(("_", "."))]
        except OSError:
            return 0
        total = 0
        for n in names:
            try:
                total += pq.read_metadata(os.path.join(folder, n)).num_rows
            except Exception:  # not a Parquet file Spark reads: no rows of ours
                pass
        return total

    def named(kp: KeptPartition) -> int:
        hits = 0
        for column, dom in domains.items():
            value = kp.values.get(column)
            if dom is None or value is None or column not in kp.values or not dom.is_exact():
                continue
            try:
                hits += bool(dom.contains(value))
            except Exception:  # a value the domain cannot type: not named
                pass
        return hits

    counted = [(named(kp), n, i) for i, kp in enumerate(res.partitions)
               if (n := rows(kp)) > 0]
    for _named, _rows, i in sorted(counted, reverse=True)[:1]:
        kp = res.partitions[i]
        mine = [s for s in res.splits if os.path.dirname(s.path) == kp.path]
        del res.partitions[i]
        res.splits = [s for s in res.splits if os.path.dirname(s.path) != kp.path]
        res.listings.pop(kp.path, None)
        res.jvm_statuses.pop(kp.path, None)
        if kp.relative is not None:
            res.pruned_folders.append(kp.relative)
        res.partitions_kept -= 1
        res.pruned_dynamic += 1
        res.files_kept -= len(mine)
        res.bytes_kept -= sum(s.size for s in mine)
        global dropped_by_switch
        dropped_by_switch += 1
        return
