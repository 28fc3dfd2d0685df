"""``spark.dpp.*`` settings: names, defaults, parsing and the errors that name the key.

Defaults, and why:
- ``enabled=true``: the runtime only ever keeps more than needed; turning it off is for A/B.
- ``coordinator=embedded``: no extra service to run; Redis is for sharing filters across
  applications and for executors publishing directly.
- ``maxDistinctValues=10000``: a partition column rarely has more distinct values than this
  (TPC-DS date keys: 73,049 days in all, a year is 366); 10k encoded values stay ~100 KB.
- ``bloomFilter.enabled=true``, ``fpp=0.01``: beyond maxDistinct a min/max range alone prunes
  little for scattered keys; a 1% bloom costs ~1.2 bytes per value.
- ``waitTimeout=30s``: dimension build sides finish in seconds; waiting longer than a fact
  scan's listing would cost is pointless, and a late filter only means no pruning.
- ``statsPruning.enabled=auto``: reading footers costs a request per kept file and pays
  only when data columns are clustered. ``auto`` samples a few footers per table and column
  (``hive_splits.profile``) and uses statistics only where files hold narrow slices of the
  column, then stops reading footers when a first sample of the kept files skips nothing;
  ``true`` always reads them, ``false`` never does (and builds no filter on data columns).
- ``rowGroupFilter.enabled=true`` (an addition): where a dynamic filter on a *data* column
  was used to test files, its values also reach Spark as a predicate on the pruned relation
  (``col IN (...)`` for up to 10 values, else ranges of them): Spark pushes it into
  Parquet, which skips the row groups it rules out, and the join gets fewer rows. Sound for
  the same reason skipping the file is (a row outside the values cannot match). A table kept
  in a few files sorted by the key gains most (TPC-DS ``inventory``: one file, one date per
  row group). ``false``: files only.
- ``filterCache.enabled=false``: a cached filter may be reused only on proof that its build
  side would return the same rows now. dpp proves the plan (canonical, with every relation's
  schema and reader options) and the value-changing session settings
  (``dpp.runtime.cache_proof``), but not the files: it knows them by path, size, modification time
  and what the file system adds (a local inode and change time, an object store's ETag),
  and a file rewritten in place with the same size within the same modification-time
  second, on a store that offers nothing more (HDFS, GCS, most Hadoop file systems), looks
  unchanged. Reading the files to prove it would cost what the build side costs. So it is
  off; ``true`` gives the semantics of Spark's own ``cache()``: a result is reused until it
  expires (``filterTtl``) or a change dpp sees; a file changed in place meanwhile may not be
  seen, and a fact partition that only its new keys need is then not read.
- ``maxFilterBytes=16m`` (an addition to DESIGN's keys): the bound on an encoded filter.
- ``filterTtl=600s`` (an addition): how long filters and cached filters live in the service
  (every Redis key expires after it).
- ``collector=auto`` (an addition): how build sides compute their domain. ``native`` is
  Spark's own aggregation (``SELECT key, count(*) GROUP BY key LIMIT n+2``, then min/max past the limit),
  which needs nothing on executors; ``arrow`` runs this package's collector in every build
  task (executors need pyarrow and this package; with Redis, tasks publish directly).
  ``auto`` is ``native``: measured by ``python -m coordinator.bench`` (docs/benchmarks.md).
- ``lister=auto`` (an addition): how the split loader lists folders. ``local`` is
  ``os.scandir`` (local paths and ``file:`` only; fastest there), ``hadoop`` is Hadoop's
  FileSystem in the driver's JVM with the session's Hadoop configuration (any scheme Spark
  reads: s3a, hdfs, gs, abfs, file). ``auto``: local for local paths, hadoop for the rest.
- ``listWholeCatalogTables=false`` (an addition, SQL-text analysis only: the optimizer hook
  leaves a catalog table it does not prune to Spark's catalog index): ``true`` makes the split
  loader list a partitioned catalog table a query reads with no partition column named
  anywhere, and hand that listing to Spark with the catalog's size figure, instead of Spark's
  metastore fetch plus listing job (``dpp.frontends.sql.whole_tables``; TPC-DS q96 on catalog tables: 18 s
  to ~10 s). Off by default: the table is then read as dpp listed it, not as Spark defines it
  (Spark's file-status cache, for one, is not consulted: files added since Spark cached the
  table's listing are read).
- ``optimizerHook=true`` (an addition): on a classic session, ``dpp.enable`` installs a rule
  in Spark's optimizer (``dpp.frontends.hook.optimizer_hook``), so DataFrame jobs, views, writes and SQL
  commands are pruned too; read at ``enable`` (installs) and per query (``false`` then
  leaves that query to Spark). ``false``: only ``spark.sql`` queries are pruned.
- ``sqlPath`` (retired; ``hook`` or ``text`` are still accepted and change nothing): a
  classic session with the optimizer hook prunes every query through the hook, ``spark.sql``
  included; a session without it (``optimizerHook=false`` at ``enable``, no JDK to compile
  it, another Spark build) and every Spark Connect client take the SQL-text analysis.
- ``connect.dataFrames=false`` (an addition): on a Spark Connect client, whether DataFrame
  star joins are pruned by rewriting the protobuf plan the client sends
  (``dpp.frontends.connect.frames``). Off by default: the rewrite replaces a fact read by a view
  over kept folders on the client, where Spark's own analysis cannot see what it stands
  for, so it is kept to shapes proven against the server's resolved schemas and refuses
  the rest (a fact read used twice, writes to tables, cached plans, nondeterministic build
  sides); correctness beats pruning. ``spark.sql`` queries take the SQL-text path either
  way. Read per action.
"""
from __future__ import annotations

import difflib
import logging
import re
import threading
import weakref
from dataclasses import asdict, dataclass
from typing import Any, Callable, Mapping, NamedTuple, Optional

from dpp.core.errors import ConfigError
from dpp.core.remote import is_remote
from dpp.core.spark_compat import session_conf
from hive_splits.listing import LISTER_MODES

log = logging.getLogger(__name__)

PREFIX = "spark.dpp."


def _parse_bool(key: str, raw: str) -> bool:
    low = raw.strip().lower()
    if low in ("true", "1", "yes", "on"):
        return True
    if low in ("false", "0", "no", "off"):
        return False
    raise ConfigError(f"{key}={raw!r}: expected true or false")


_INT = re.compile(r"^\s*\+?\d+\s*$")


def _parse_positive_int(key: str, raw: str) -> int:
    # digits only: Python's int() also takes "1_000" and non-ASCII digits, Spark does not
    if not _INT.match(raw) or not raw.strip().lstrip("+").isascii():
        raise ConfigError(f"{key}={raw!r}: expected a positive integer")
    v = int(raw.strip())
    if v < 1:
        raise ConfigError(f"{key}={raw!r}: expected a positive integer")
    return v


def _parse_partition_count_or_off(key: str, raw: str) -> Optional[int]:
    """A partition count (0 and up), or ``off``."""
    text = raw.strip().lower()
    if text in ("off", "false", "never"):
        return None
    if not _INT.match(raw) or not text.lstrip("+").isascii() or int(text) < 0:
        raise ConfigError(f"{key}={raw!r}: expected a partition count (0 or more) or off")
    return int(text)


_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*")


def _parse_schemes(key: str, raw: str) -> tuple[str, ...]:
    """Filesystem URI schemes, comma-separated (``hdfs,webhdfs``); empty: none."""
    out = []
    for part in raw.split(","):
        s = part.strip().lower()
        if not s:
            continue
        if not _SCHEME.fullmatch(s):
            raise ConfigError(f"{key}={raw!r}: {part.strip()!r} is not a filesystem URI "
                              f"scheme (expected e.g. hdfs,webhdfs)")
        out.append(s)
    return tuple(out)


def _parse_fpp(key: str, raw: str) -> float:
    try:
        v = float(raw.strip())
    except ValueError:
        raise ConfigError(f"{key}={raw!r}: expected a probability between 0 and 1, "
                          f"e.g. 0.01") from None
    if not (0.0 < v < 1.0):
        raise ConfigError(f"{key}={raw!r}: expected a probability strictly between 0 and 1, "
                          f"e.g. 0.01")
    return v


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|m|min|h)?\s*$", re.I)
_UNITS = {None: 1.0, "ms": 0.001, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def _parse_duration(key: str, raw: str) -> float:
    m = _DURATION.match(raw)
    if not m:
        raise ConfigError(f"{key}={raw!r}: expected a duration such as 30s, 500ms or 2min")
    return float(m.group(1)) * _UNITS[m.group(2).lower() if m.group(2) else None]


_SIZE = re.compile(r"^\s*(\d+)\s*([kmg]i?b?|b)?\s*$", re.I)


def _parse_size(key: str, raw: str) -> int:
    m = _SIZE.match(raw)
    if not m:
        raise ConfigError(f"{key}={raw!r}: expected a size such as 16m, 512k or 1048576")
    unit = (m.group(2) or "b").lower()[0]
    mult = {"b": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}[unit]
    v = int(m.group(1)) * mult
    if v < 1024:
        raise ConfigError(f"{key}={raw!r}: the bound must be at least 1k")
    return v


parse_size = _parse_size


def _parse_coordinator(key: str, raw: str) -> str:
    v = raw.strip()
    if v.lower() == "embedded":
        return "embedded"
    if re.match(r"^rediss?://[^\s]+$", v):
        return v
    raise ConfigError(f"{key}={raw!r}: expected 'embedded' or a redis:// or rediss:// URL")


COLLECTORS = ("auto", "native", "arrow")
STATS_MODES = ("auto", "true", "false")


def _parse_stats_mode(key: str, raw: str) -> str:
    """``auto``, or any boolean spelling (``true``/``on``/``1``...), as "true"/"false"."""
    if raw.strip().lower() == "auto":
        return "auto"
    try:
        return "true" if _parse_bool(key, raw) else "false"
    except ConfigError:
        raise ConfigError(f"{key}={raw!r}: expected auto, true or false") from None
LISTERS = LISTER_MODES
SQL_PATHS = ("text", "hook")
SQL_PATH_KEY = "spark.dpp.sqlPath"


def _parse_choice(choices: tuple[str, ...]) -> Callable[[str, str], str]:
    """A parser for a setting that takes one of ``choices`` (case-insensitive)."""
    def parse(key: str, raw: str) -> str:
        v = raw.strip().lower()
        if v not in choices:
            raise ConfigError(f"{key}={raw!r}: expected one of {', '.join(choices)}")
        return v
    return parse


def _parse_path(key: str, raw: str) -> Optional[str]:
    v = raw.strip()
    return v or None


_WARNED: set[str] = set()
_WARNED_LOCK = threading.Lock()


def suggestion(key: str) -> Optional[str]:
    """The known setting a misspelled ``spark.dpp.*`` key most likely means (a case slip, a
    letter dropped or swapped: ``spark.dpp.waitTimeot``), or None when none is close."""
    by_lower = {k.lower(): k for k in _KEYS}
    if key.lower() in by_lower:
        return by_lower[key.lower()]
    close = difflib.get_close_matches(key.lower(), list(by_lower), n=1, cutoff=0.8)
    return by_lower[close[0]] if close else None


def _warn_unknown(key: str) -> None:
    """One warning per misspelled key and process: the settings are read on every query, and
    a log that repeats the same line for each would bury everything else."""
    with _WARNED_LOCK:
        if key in _WARNED:
            return
        _WARNED.add(key)
    close = suggestion(key)
    hint = f" (did you mean {close}?)" if close else ""
    log.warning("unknown setting %s ignored%s; known: %s", key, hint, ", ".join(sorted(_KEYS)))


@dataclass(frozen=True)
class DppConfig:
    enabled: bool = True
    coordinator: str = "embedded"
    max_distinct_values: int = 10_000
    bloom_enabled: bool = True
    bloom_fpp: float = 0.01
    wait_timeout: float = 30.0
    stats_pruning: str = "auto"          # auto | true | false (STATS_MODES)
    row_group_filter: bool = True        # a data-column filter's values also filter rows
    filter_cache: bool = False           # on only on request: no cheap proof files are unchanged
    spark_keys: bool = True              # a build's keys from Spark's own broadcast where found
    report_path: Optional[str] = None
    report_console: bool = False          # one summary line per query on stderr
    max_filter_bytes: int = 16 * 1024 * 1024
    filter_ttl: float = 600.0
    collector: str = "auto"
    lister: str = "auto"
    list_whole_catalog_tables: bool = False
    declared_kept_listing: Optional[int] = 1000   # partitions; None: Spark's reader always
    # filesystems (besides the local one) whose folder times change with their entries
    declared_folder_times: tuple[str, ...] = ("hdfs",)
    optimizer_hook: bool = True
    sql_path: str = "hook"
    connect_dataframes: bool = False     # Spark Connect: the DataFrame plan rewrite
    connect_server: bool = False         # set by `dpp connect-server`: the server prunes

    @classmethod
    def from_mapping(cls, conf: Mapping[str, str]) -> "DppConfig":
        """Reads the ``spark.dpp.*`` entries of ``conf``; warns about unknown ones."""
        values: dict[str, Any] = {}
        for key, raw in conf.items():
            if not key.startswith(PREFIX) or key.startswith(TABLES_PREFIX):
                continue  # spark.dpp.tables.<name>: path tables (table_settings)
            spec = _KEYS.get(key)
            if spec is None:
                _warn_unknown(key)
                continue
            field_name, parse = spec
            values[field_name] = parse(key, str(raw))
        return cls(**values)

    @classmethod
    def from_spark(cls, spark: Any, session: Optional[Mapping[str, str]] = None
                   ) -> "DppConfig":
        """``session``: the session's settings already read this query
        (:func:`~dpp.core.spark_compat.session_conf`), not read again."""
        return cls.from_mapping(spark_settings(spark, session))

    def as_settings(self) -> dict[str, Any]:
        """The effective settings under their Spark key names (for reports)."""
        d = asdict(self)
        d["coordinator"] = redact_url(d["coordinator"])
        # a list setting as it is written (a report's settings are scalars)
        return {key: ",".join(d[name]) if isinstance(d[name], (tuple, list)) else d[name]
                for key, (name, _) in _KEYS.items()}


def spark_settings(spark: Any, session: Optional[Mapping[str, str]] = None) -> dict[str, str]:
    """Every ``spark.dpp.*`` entry of the SparkContext's conf (``--conf``), overridden by the
    session's (``spark.conf.set``), as raw strings.

    Read on every query (and by ``dpp.enable`` on every ``spark.sql`` call), so it is kept
    cheap: the context's conf cannot change once the context runs and is read once per
    context; the session's is read at once (:func:`~dpp.core.spark_compat.session_conf`: its
    map as one JSON text on a classic session, one ``getAll`` RPC on Spark Connect, where the
    server's session conf already holds its SparkConf entries). ``session``: those settings
    already read by the caller.
    """
    if is_remote(spark):
        every = session_conf(spark) if session is None else session
        return {k: v for k, v in every.items() if k.startswith(PREFIX)}
    ctx = _context(spark.sparkContext)
    conf = dict(ctx.settings)
    try:
        every = session_conf(spark) if session is None else session
        conf.update({k: v for k, v in every.items() if k.startswith(PREFIX)})
    except Exception:  # pragma: no cover - only on exotic Spark builds
        log.debug("could not read session conf through py4j", exc_info=True)
    return conf


class _Context:
    """What is read once per SparkContext: its ``spark.dpp.*`` entries."""

    def __init__(self, sc: Any) -> None:
        self.settings = {k: v for k, v in sc.getConf().getAll() if k.startswith(PREFIX)}


_CONTEXTS: "weakref.WeakKeyDictionary[Any, _Context]" = weakref.WeakKeyDictionary()
_CONTEXTS_LOCK = threading.Lock()


def _context(sc: Any) -> _Context:
    with _CONTEXTS_LOCK:
        ctx = _CONTEXTS.get(sc)
        if ctx is None:
            ctx = _CONTEXTS[sc] = _Context(sc)
        return ctx


ENABLED_KEY = "spark.dpp.enabled"
CONNECT_SERVER_KEY = "spark.dpp.connectServer"
TABLES_PREFIX = "spark.dpp.tables."
_TABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def enabled_setting(conf: Mapping[str, str]) -> bool:
    """``spark.dpp.enabled`` alone (true when unset), without reading the other keys."""
    raw = conf.get(ENABLED_KEY)
    return True if raw is None else _parse_bool(ENABLED_KEY, str(raw))


class TableSetting(NamedTuple):
    key: str    # as the conf spells it, for messages
    path: str


def table_settings(conf: Mapping[str, str]) -> dict[str, TableSetting]:
    """The path tables ``spark.dpp.tables.<name> = <path>`` declares, by lower-case name.

    A name must be a plain identifier (it becomes a view name) and the path must not be empty;
    otherwise a ``ConfigError`` names the key."""
    tables: dict[str, TableSetting] = {}
    for key, raw in conf.items():
        if not key.startswith(TABLES_PREFIX):
            continue
        name = key[len(TABLES_PREFIX):]
        if not _TABLE_NAME.match(name):
            raise ConfigError(f"{key}={raw!r}: expected {TABLES_PREFIX}<name> with a table name of "
                              f"letters, digits and _ (not starting with a digit)")
        path = str(raw).strip()
        if not path:
            raise ConfigError(f"{key}={raw!r}: expected the path of a Hive-partitioned "
                              f"Parquet folder")
        seen = tables.get(name.lower())
        if seen is not None and seen.path != path:
            raise ConfigError(f"{key}={raw!r}: table {name.lower()!r} is also declared by "
                              f"{seen.key}={seen.path!r}")
        tables[name.lower()] = TableSetting(key, path)
    return tables


def redact_url(url: str) -> str:
    """``redis://user:secret@host`` → ``redis://user:***@host``: reports never hold secrets."""
    return re.sub(r"^(rediss?://)([^:@/]*):([^@/]*)@", r"\1\2:***@", url)


_KEYS: dict[str, tuple[str, Callable[[str, str], Any]]] = {
    "spark.dpp.enabled": ("enabled", _parse_bool),
    "spark.dpp.coordinator": ("coordinator", _parse_coordinator),
    "spark.dpp.maxDistinctValues": ("max_distinct_values", _parse_positive_int),
    "spark.dpp.bloomFilter.enabled": ("bloom_enabled", _parse_bool),
    "spark.dpp.bloomFilter.fpp": ("bloom_fpp", _parse_fpp),
    "spark.dpp.waitTimeout": ("wait_timeout", _parse_duration),
    "spark.dpp.statsPruning.enabled": ("stats_pruning", _parse_stats_mode),
    "spark.dpp.rowGroupFilter.enabled": ("row_group_filter", _parse_bool),
    "spark.dpp.filterCache.enabled": ("filter_cache", _parse_bool),
    "spark.dpp.sparkKeys.enabled": ("spark_keys", _parse_bool),
    "spark.dpp.report.path": ("report_path", _parse_path),
    "spark.dpp.report.console": ("report_console", _parse_bool),
    "spark.dpp.maxFilterBytes": ("max_filter_bytes", _parse_size),
    "spark.dpp.filterTtl": ("filter_ttl", _parse_duration),
    "spark.dpp.collector": ("collector", _parse_choice(COLLECTORS)),
    "spark.dpp.lister": ("lister", _parse_choice(LISTERS)),
    "spark.dpp.listWholeCatalogTables": ("list_whole_catalog_tables", _parse_bool),
    "spark.dpp.declaredTables.keptListing": ("declared_kept_listing",
                                             _parse_partition_count_or_off),
    "spark.dpp.declaredTables.folderTimes": ("declared_folder_times", _parse_schemes),
    "spark.dpp.optimizerHook": ("optimizer_hook", _parse_bool),
    SQL_PATH_KEY: ("sql_path", _parse_choice(SQL_PATHS)),
    "spark.dpp.connect.dataFrames": ("connect_dataframes", _parse_bool),
    CONNECT_SERVER_KEY: ("connect_server", _parse_bool),
}

KNOWN_KEYS = tuple(_KEYS)


# What each setting does, for the configuration reference (docs/configuration.md, generated
# by scripts/docs_gen.py with the key, its default and its parser from above). Every key of
# KNOWN_KEYS needs an entry here: tests/test_docs_generated.py fails on an undocumented key.
SETTING_DOCS: dict[str, tuple[str, str]] = {   # key: (what it accepts, what it does)
    "spark.dpp.enabled": (
        "true, false",
        "Read on every query. `false` makes dpp change nothing: `spark.sql` is Spark's own, "
        "declared tables are not read or registered, no report is written."),
    "spark.dpp.coordinator": (
        "`embedded`, `redis://[user:pass@]host:port/db`, `rediss://…`",
        "Where filters meet their waiters. `embedded` lives in the driver and needs no "
        "service; Redis shares filters (and the filter cache) across applications and lets "
        "Arrow build tasks publish directly. Passwords are masked in reports and logs."),
    "spark.dpp.maxDistinctValues": (
        "a positive integer",
        "A build side with more distinct keys than this collapses to its min/max range, plus "
        "a bloom filter when `spark.dpp.bloomFilter.enabled`."),
    "spark.dpp.bloomFilter.enabled": (
        "true, false",
        "Add a bloom filter to a collapsed range: a range alone prunes little for scattered "
        "keys."),
    "spark.dpp.bloomFilter.fpp": (
        "a probability strictly between 0 and 1",
        "The bloom filter's false-positive rate (0.01 costs about 1.2 bytes per key)."),
    "spark.dpp.waitTimeout": (
        "a duration: `500ms`, `30s`, `2min`, seconds",
        "How long a scan waits for its filters. A late filter means no pruning of that "
        "scan (reported as `timeout`); the build job is cancelled."),
    "spark.dpp.statsPruning.enabled": (
        "auto, true, false",
        "Skip files of kept partitions by Parquet min/max statistics on a data-column join "
        "key. `auto` samples 8 footers per table and column once per session and uses "
        "statistics only where files hold narrow slices of the key (at most 75% of its "
        "range), then stops when the first 16 kept files skip nothing; `true` always reads "
        "footers; `false` builds no filter on data columns."),
    "spark.dpp.rowGroupFilter.enabled": (
        "true, false",
        "Where a data-column filter is used, hand its values to Spark as a predicate on the "
        "pruned relation (`col IN (…)` up to 10 values, else ranges), which Parquet tests "
        "each row group against. `false`: files only."),
    "spark.dpp.sparkKeys.enabled": (
        "true, false",
        "Optimizer hook on a classic session or `dpp connect-server`. `true`: a build side "
        "Spark estimates under its broadcast threshold, pruning one relation by a plain "
        "integer partition column, while Spark's own dynamic partition pruning is on "
        "(`spark.sql.optimizer.dynamicPartitionPruning.enabled`) and sees a filter it "
        "counts on that side of the join (a comparison, IN, LIKE: not a boolean column "
        "alone, IS NULL or a UDF), and the filter cache is "
        "off (`spark.dpp.filterCache.enabled`: a cached filter serves a query at planning, "
        "dpp's builds fill it), is not run as a job of its own at first; when Spark "
        "lists that relation's scan, the keys Spark's own dynamic partition pruning took "
        "from the broadcast it made anyway (the scan's resolved `DynamicPruningExpression` "
        "on that column, of the build key's type) are the filter, and only where there are "
        "none (Spark planned no such pruning, the scan is read twice in the plan, another "
        "type, or Spark broadcast the other side of the join, a fact smaller than the "
        "dimension) does dpp's build run then, later than it would have. The wait for them "
        "(`spark.dpp.waitTimeout`) counts from that listing, not from planning: the keys "
        "can only come then. Saves each such query a Spark "
        "job (~45 ms of driver CPU on a warm driver). `false`: every build runs its own job "
        "from the start."),
    "spark.dpp.filterCache.enabled": (
        "true, false",
        "Reuse a build side's filter when its fingerprint is unchanged: the build query or "
        "Spark's canonical plan with every relation's schema and reader options, the session "
        "settings that change values (time zone, ANSI, case sensitivity, rebase modes, "
        "missing/corrupt files, partition type inference, `spark.sql.legacy.*`, …) and the "
        "dimension files' paths, sizes and modification times (plus inode and change time on "
        "local disks, the ETag where the store gives one). Off by default: a file rewritten "
        "in place with the same size and modification time is not always seen. `true` has "
        "the semantics of Spark's `cache()`: a cached filter is reused until "
        "`spark.dpp.filterTtl` or a change dpp sees; files changed meanwhile in a way it "
        "cannot see are not seen (their new keys' fact partitions are not read)."),
    "spark.dpp.report.path": (
        "a file path",
        "Append one JSON line per query dpp ran (the job report); safe from several "
        "threads and processes."),
    "spark.dpp.report.console": (
        "true, false",
        "Print one line per query dpp ran on stderr: what each pruned table kept of what, "
        "the build side that pruned it and how long the scan waited. `dpp run` and "
        "`dpp-submit` turn it on unless the job sets it; `false` silences them."),
    "spark.dpp.maxFilterBytes": (
        "a size: `512k`, `16m`, bytes (at least 1k)",
        "Bound on one encoded filter. A larger partial is cut to its range; a merged "
        "filter still larger is not used (`too_large`)."),
    "spark.dpp.filterTtl": (
        "a duration",
        "Lifetime of filters and cached filters in the service; every Redis key expires "
        "after it."),
    "spark.dpp.collector": (
        "auto, native, arrow",
        "How build sides compute their keys. `native` (what `auto` means): Spark's own "
        "aggregation, nothing on executors. `arrow`: this package's collector in Python "
        "tasks (executors need pyarrow and this package)."),
    "spark.dpp.lister": (
        "auto, local, hadoop",
        "How partition folders are listed. `local`: `os.scandir` (local paths and `file:`); "
        "`hadoop`: Hadoop's FileSystem in the driver's JVM with the session's Hadoop "
        "configuration (`s3a://`, `hdfs://`, `gs://`, `abfs://`…); `auto`: local for local "
        "paths, hadoop for the rest."),
    "spark.dpp.listWholeCatalogTables": (
        "true, false",
        "SQL-text analysis only. `true`: a partitioned catalog table a query reads with no "
        "partition column named anywhere is listed by dpp and handed to Spark with the "
        "catalog's size figure, instead of Spark's metastore fetch and listing job (faster; "
        "but the table is then read as dpp listed it, not as Spark defines it: Spark's "
        "file-status cache is not consulted). `false` (the default) leaves such tables to "
        "Spark. The optimizer hook leaves every catalog table it does not prune to Spark."),
    "spark.dpp.declaredTables.keptListing": (
        "a partition count (0 or more), off",
        "A declared table (`spark.dpp.tables.*`, `register_table`) of at least this many "
        "partition folders is read through a file index that knows the partitions by their "
        "folder names (one listing per partition level) and lists a partition's files only "
        "when a scan keeps it, instead of Spark's reader listing every folder at each "
        "query; used only where the names and the first data file prove it reads what "
        "`spark.read.parquet(<folder>)` reads (integer or word partition values; see the "
        "manual's declared tables). `off`: always Spark's reader. Classic sessions, and the "
        "declared views of `dpp connect-server`."),
    "spark.dpp.declaredTables.folderTimes": (
        "filesystem URI schemes, comma-separated (may be empty)",
        "The filesystems, besides the local disk (always), whose folder modification time "
        "changes whenever an entry is added, removed or renamed (HDFS's does; an object "
        "store such as S3 keeps no folder times). On these the kept-partition index of a "
        "declared table reuses a folder's names from an earlier query while its "
        "modification time is unchanged and older than a minute (one status request "
        "instead of a listing of one request per 1,000 names); elsewhere it lists the "
        "folder at each query. Name a filesystem here only if its folder times behave so."),
    "spark.dpp.optimizerHook": (
        "true, false",
        "On a classic session `dpp.enable` installs the optimizer hook, so DataFrame jobs, "
        "writes and views are pruned too. Read per query (`false`: that query is Spark's); "
        "`false` at `enable` installs nothing and `spark.sql` takes the SQL-text analysis."),
    SQL_PATH_KEY: (
        "hook, text",
        "Retired: accepted and ignored. A classic session with the hook prunes every query "
        "through it; sessions without the hook take the SQL-text analysis."),
    "spark.dpp.connect.dataFrames": (
        "true, false",
        "Spark Connect client side only: prune DataFrame star joins by rewriting the plan "
        "the client sends. Off by default: only shapes proven right are rewritten. Read per "
        "action."),
    CONNECT_SERVER_KEY: (
        "true, false (set by `dpp connect-server`)",
        "Marks a Spark Connect server whose driver runs dpp's optimizer hook for every "
        "session: a client's `dpp.enable(spark)` then leaves the pruning to the server and "
        "keeps its own analysis off. Not meant to be set by hand."),
    TABLES_PREFIX + "<name>": (
        "a folder path (any scheme Spark reads)",
        "Declare a Hive-partitioned Parquet folder as table `<name>` (a temporary view on "
        "classic sessions, listed only when a scan needs it). A name the session already "
        "holds (its own view or table) wins and is never replaced. Read while dpp is on; an "
        "unreadable path is a `ConfigError` naming the key."),
}
