"""What every query of one ``DppSession`` shares while it runs, whichever front end asked: the
filter service, the listers and the footer cache behind the split loaders, the
``statsPruning=auto`` verdicts, and the environment notes said once per session.

The SQL-text path, ``dpp.join``, the optimizer hook and Spark Connect's DataFrame plans all
read these through :class:`Runtime`, so a filter published for one is found by the others and
a note said by one is not said again by another.
"""
from __future__ import annotations

import logging
import re
import threading
import uuid
from typing import TYPE_CHECKING, Any, Callable, Optional

from pyspark.sql import DataFrame, SparkSession

from coordinator import FilterService, make_service
from dpp.runtime.config import DppConfig
from dpp.core.remote import is_remote
from dpp.runtime.decision import Stats
from dpp.runtime.filter_runs import EnvironmentNotes, FilterMemory
from hive_splits import Table
from hive_splits.footers import FooterCache
from hive_splits.listers import lister_for
from hive_splits.profile import KeyProfile, profile_column
from hive_splits.spark_io import driver_listing

if TYPE_CHECKING:
    from dpp.runtime.report import JobReport

__all__ = ["Runtime", "STATS_SAMPLE", "VIEW_PREFIX", "first_line", "temp_view",
           "unwrapped_sql", "view_name"]

log = logging.getLogger(__name__)

# statsPruning=auto: footers of this many kept files (spread over them) are tested first; when
# none of them can be skipped, the loader reads no more (a filter whose values are scattered
# over every file's range, TPC-DS q19's 321 items on item-sorted files)
STATS_SAMPLE = 16
# the temporary and global views dpp makes start with this
VIEW_PREFIX = "__dpp_"


class Runtime:
    """The running parts one ``DppSession`` shares among its queries and front ends.

    ``env_notes`` (environment problems, said once) and ``filter_memory`` (build sides that
    pruned nothing) are handed to every :class:`~dpp.runtime.filter_runs.FilterRuns`; ``footers``
    caches Parquet footers by (path, size, mtime) for the statistics pruning of every loader.
    """

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        # Spark Connect: no JVM in this process; what needs one is left out, each said once
        self.remote = is_remote(spark)
        self.env_notes = EnvironmentNotes()
        self.filter_memory = FilterMemory()
        self.footers = FooterCache()
        self._lock = threading.RLock()
        self._service: Optional[FilterService] = None
        self._service_spec: Optional[tuple] = None
        self._listers: dict[str, Any] = {}   # the Hadoop lister's JVM handles, made once
        self._profiles: dict[tuple[str, str], KeyProfile] = {}   # statsPruning=auto verdicts

    @property
    def app_id(self) -> str:
        if self.remote:   # the server's application (filters of its sessions share it)
            return str(self.spark.conf.get("spark.app.id", None) or self.spark.session_id)
        return str(self.spark.sparkContext.applicationId)

    def filter_service(self, cfg: DppConfig) -> FilterService:
        """One service per distinct set of service settings (re-made when they change)."""
        spec = (cfg.coordinator, cfg.max_distinct_values, cfg.bloom_enabled, cfg.bloom_fpp,
                cfg.max_filter_bytes, cfg.filter_ttl)
        with self._lock:
            if self._service is None or self._service_spec != spec:
                if self._service is not None:
                    try:
                        self._service.close()
                    except Exception:  # pragma: no cover
                        log.debug("closing the old filter service failed", exc_info=True)
                self._service = make_service(
                    cfg.coordinator, app_id=self.app_id,
                    max_distinct=cfg.max_distinct_values,
                    bloom_fpp=cfg.bloom_fpp if cfg.bloom_enabled else None,
                    max_bytes=cfg.max_filter_bytes, default_ttl=cfg.filter_ttl)
                self._service_spec = spec
            return self._service

    def forget_learned(self, cfg: Optional[DppConfig] = None) -> dict[str, int]:
        """Forgets what earlier queries taught this session — cached filters (of its filter
        service, which may be shared: see ``cache_clear``), build sides that pruned nothing,
        Parquet footers, ``statsPruning=auto`` verdicts — so the next query meets dpp as a new
        application does. Rows never depend on any of it; time does (a cold run, as the
        TPC-DS bench measures its headline). ``cfg``: the settings whose filter service to
        clear even before this session made one (the embedded cache is the process's, Redis
        is shared). What was forgotten, by kind."""
        service = self.filter_service(cfg) if cfg is not None else None
        with self._lock:
            profiles = len(self._profiles)
            self._profiles.clear()
            service = service or self._service
        footers = len(self.footers)
        self.footers.clear()
        self.filter_memory.clear()
        filters = service.cache_clear() if service is not None else 0
        return {"filters": filters, "footers": footers, "verdicts": profiles}

    def lister(self, location: str, cfg: DppConfig) -> Any:
        """The lister ``spark.dpp.lister`` asks for at ``location`` (a fresh count each).
        On Spark Connect ``hadoop`` (Hadoop's FileSystem in the driver's JVM) is out of
        reach: ``auto``'s client-side listers are used (noted by :meth:`remote_notes`)."""
        mode = "auto" if self.remote and cfg.lister == "hadoop" else cfg.lister
        return lister_for(location, mode, self.spark, self._listers)

    def loader_stats(self, cfg: DppConfig) -> dict[str, Any]:
        """The SplitLoader's statistics arguments for these settings."""
        return {"stats_pruning": cfg.stats_pruning != "false",
                "stats_sample": STATS_SAMPLE if cfg.stats_pruning == "auto" else None,
                "footer_cache": self.footers}

    def stats_policy(self, cfg: DppConfig, report: "JobReport") -> Stats:
        """``spark.dpp.statsPruning.enabled`` as the decision takes it: a constant, or for
        ``auto`` a verdict per table and data column from a sample of its footers
        (:mod:`hive_splits.profile`), made once per session and noted in the report."""
        if cfg.stats_pruning != "auto":
            return cfg.stats_pruning == "true"

        def policy(table: Table, column: str) -> bool:
            key = (table.location, column)
            with self._lock:
                verdict = self._profiles.get(key)
            if verdict is None:
                verdict = profile_column(table, column, self.lister(table.location, cfg),
                                         self.footers)
                with self._lock:
                    self._profiles[key] = verdict
            note = "statistics pruning (auto): " + verdict.describe()
            if note not in report.analysis_notes:   # a column asked again by a later step
                report.analysis_notes.append(note)
            return verdict.can_pay
        return policy

    def judged(self) -> list[str]:
        """The ``statsPruning=auto`` verdicts made so far, described (for ``explain``)."""
        with self._lock:
            return sorted(v.describe() for v in self._profiles.values())

    def note_once(self, report: "JobReport", key: str) -> None:
        """Puts the Spark Connect note ``key`` (:data:`dpp.core.remote.CONNECT_NOTES`) in
        ``report``'s ``environment`` the first time this session meets it (and logs it then)."""
        from dpp.core.remote import CONNECT_NOTES

        note = CONNECT_NOTES[key]
        if self.env_notes.add(note):
            report.environment.append(note)
            log.warning("dpp: %s", note)

    def remote_notes(self, cfg: DppConfig, report: "JobReport") -> None:
        """On Spark Connect, the settings this query asks for that need the JVM, each said
        once per session."""
        if not self.remote or not cfg.enabled:
            return
        if cfg.lister == "hadoop":
            self.note_once(report, "lister")
        if cfg.collector == "arrow":
            self.note_once(report, "collector")

    def spark_sql(self, query: str, *args: object, **kwargs: object) -> DataFrame:
        """Spark's own ``sql``, past the wrapper :func:`dpp.enable` installs on the session:
        dpp's own statements (build sides, the rewritten query, the unpruned fallback) go to
        Spark, never through pruning again."""
        return unwrapped_sql(self.spark)(query, *args, **kwargs)

    def close(self) -> None:
        with self._lock:
            if self._service is not None:
                self._service.close()
                self._service = None


def unwrapped_sql(spark: SparkSession) -> Callable[..., DataFrame]:
    """``spark.sql`` as it was before :func:`dpp.enable` wrapped it (itself when not wrapped)."""
    fn = spark.sql
    return getattr(fn, "dpp_original_sql", fn)


def view_name(table: str) -> str:
    """A fresh name for a view dpp makes of ``table`` (recognisable as dpp's by its prefix)."""
    return f"{VIEW_PREFIX}{uuid.uuid4().hex[:12]}_{re.sub(r'[^A-Za-z0-9_]', '_', table)[:40]}"


def temp_view(df: DataFrame, table: str, temp_views: list[str],
              remote: Optional[SparkSession] = None, paths: int = 0) -> str:
    """``df`` under a fresh temporary view named after ``table``, recorded in
    ``temp_views`` (dropped when the query is done). ``remote``: the Spark Connect session
    ``df`` belongs to; its server resolves (and lists) ``df``'s ``paths`` paths when the view
    is made, so the driver-side listing threshold is raised around that, not around building
    the client-side plan."""
    view = view_name(table)
    if remote is not None:
        with driver_listing(remote, paths):
            df.createOrReplaceTempView(view)
    else:
        df.createOrReplaceTempView(view)
    temp_views.append(view)
    return view


def first_line(exc: BaseException) -> str:
    """An error's first line, short enough for a report's reason."""
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
