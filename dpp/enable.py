"""Switch pruning on in an existing job by configuration: ``dpp.enable(spark)``.

After ``dpp.enable(spark)``, that SparkSession's ``spark.sql(query)`` goes through a
:class:`~dpp.session.DppSession` while ``spark.dpp.enabled`` is true, and is Spark's own
``spark.sql`` while it is false. The setting is read on every call, so
``spark.conf.set("spark.dpp.enabled", "false")`` switches pruning off mid-job. Everything
returned is a plain PySpark DataFrame. ``dpp.disable(spark)`` puts the session's original
``sql`` back.

Path tables are declared by configuration, ``spark.dpp.tables.<name>=<path>`` (what
``DppSession.register_table`` does), read when enabling and again on every call, so a job
needs no other code change. A name the job's session already holds (its own temporary view, or
a table of the current database) stays the job's: dpp makes no view over it and says so once
(a warning, and a note in the next report), see :mod:`dpp.runtime.views`.

While ``spark.dpp.enabled`` is false dpp touches nothing: declared tables are not read or
registered, no view is made, and ``spark.sql`` is the function ``enable`` replaced, called as
it is — so a bad ``spark.dpp.tables.*`` entry cannot break a job that has dpp switched off.
Views dpp made while it was on are left as they are (removing them would be a change too);
they go with ``dpp.disable`` or when the declaration is removed while dpp is on.

How the wrapper is installed
----------------------------
``enable`` sets an *instance* attribute ``sql`` on that one SparkSession object, shadowing the
class's method. Other SparkSessions (``spark.newSession()``) keep the class's method and are
unaffected; ``disable`` deletes the attribute again (or restores an instance attribute that was
there before), so ``spark.sql`` is then exactly what it was.

Why the session's own statements do not recurse
-----------------------------------------------
DppSession runs build sides, the rewritten query and the unpruned fallback through Spark. It
calls Spark's *unwrapped* ``sql``: the wrapper carries the function it replaced as
``dpp_original_sql`` and ``Runtime.spark_sql`` looks it up (``dpp.runtime.services.unwrapped_sql``).
A thread-local re-entry guard was not chosen because build sides run on DppSession's worker
threads, where a thread-local flag set by the calling thread is not visible: a build-side query
would go through pruning again (another analysis, another report overwriting ``last_report``,
and for a snowflake build side even nested build jobs). Naming the original function is exact
whatever thread calls it, and also keeps a DppSession a user made by hand from going through
the wrapper of an enabled session.

What goes through pruning
-------------------------
Only a query (text starting with ``SELECT``, ``WITH``, ``FROM`` or ``(``, after comments),
called without ``args=`` or format keyword arguments. Commands (``CREATE``, ``INSERT``,
``SET``, ``EXPLAIN``...) and parameterized SQL go straight to Spark: commands run eagerly and
gain nothing from pruning, and parameter markers have no literal value the analysis could use
soundly. Registered tables such a statement names get their plain views first, so it can read
them as any Spark table.

When pruning fails
------------------
DppSession already runs a query unpruned when the analysis, a build side, the filter service
or the rewrite fails. Should it raise anything else — an internal error of this package — the
wrapper logs it and runs the query with Spark's own ``sql``, so the rows are those of Spark.
Spark's own errors (the query's: a missing table, a syntax error) and the errors a user must
fix (``ConfigError`` for a bad ``spark.dpp.*`` value or table path, ``LayoutError`` for a
folder that is not a readable Hive-partitioned table) are raised as they are.

Every ``spark.dpp.*`` value is checked by ``enable`` and again, while dpp is on, before each
query (``SELECT``/``WITH``/``FROM``, ``EXPLAIN``), whichever path then prunes it: the optimizer
hook cannot fail a plan (a bad value there only means Spark's own plan, with a warning), so a
value set later with ``spark.conf.set`` is a ``ConfigError`` naming the key and the value at
the next ``spark.sql`` query, not a silently unpruned run. ``SET`` and ``RESET`` statements go
to Spark untouched, so a bad value can be fixed with SQL too.
"""
from __future__ import annotations

import functools
import logging
import threading
from typing import TYPE_CHECKING, Any, Callable, Optional

from dpp.runtime.config import (DppConfig, enabled_setting, spark_settings,
                        table_settings)
from dpp.core.errors import ConfigError, LayoutError
from dpp.analysis.statements import CONF_WORDS, first_word, is_explain, is_query

if TYPE_CHECKING:  # the session (and Spark) load on the first enable(), not on import
    from dpp.session import DppSession

__all__ = ["enable", "disable", "session_of"]

log = logging.getLogger(__name__)

_LOCK = threading.Lock()
_MISSING = object()
_LOCK_PATCH = threading.Lock()

class _Enabled:
    """What ``enable`` keeps for one SparkSession: its DppSession, the ``sql`` it replaced,
    and the tables registered from ``spark.dpp.tables.*``."""

    def __init__(self, spark: Any, session: "DppSession", previous: Any,
                 previous_table: Any = _MISSING) -> None:
        self.spark = spark
        self.session = session
        self.previous = previous            # the instance attribute replaced, or _MISSING
        self.previous_table = previous_table   # the same, for ``spark.table``
        self.tables: dict[str, str] = {}    # name → path registered from the conf
        self.lock = threading.Lock()

    def sync_tables(self, conf: dict[str, str]) -> None:
        """Registers declared tables that are new or moved, forgets ones no longer declared.
        A path that cannot be registered is a ConfigError naming the key and the path. While
        ``spark.dpp.enabled`` is false nothing is read, registered or made (module docstring)."""
        if not enabled_setting(conf):
            return
        wanted = table_settings(conf)
        with self.lock:
            if {n: s.path for n, s in wanted.items()} == self.tables:
                return  # the common case: nothing declared, added, moved or removed
            for name in sorted(set(self.tables) - set(wanted)):
                self.session.unregister_table(name)
                del self.tables[name]
            for name, setting in sorted(wanted.items()):
                if self.tables.get(name) == setting.path:
                    continue
                try:
                    self.session.register_table(name, setting.path)
                except Exception as exc:
                    raise ConfigError(f"{setting.key}={setting.path!r}: cannot register table "
                                      f"{name!r} at that path: {exc}") from None
                self.tables[name] = setting.path
                if self.session.optimizer_hook is not None:
                    # spark.table(name) in DataFrame code: Spark's reader the hook prunes
                    self.session.ensure_views([name])

    def forget_tables(self) -> None:
        with self.lock:
            for name in sorted(self.tables):
                self.session.unregister_table(name)
            self.tables.clear()


def _state(spark: Any) -> Optional[_Enabled]:
    return getattr(vars(spark).get("sql"), "dpp_state", None)


def session_of(spark: Any) -> Optional["DppSession"]:
    """The DppSession ``enable(spark)`` made (read its ``last_report``), or None."""
    state = _state(spark)
    return state.session if state is not None else None


def enable(spark: Any) -> "DppSession":
    """Routes this SparkSession's ``spark.sql`` through dynamic partition pruning.

    Idempotent: a second call returns the same DppSession (and re-reads the declared tables).
    A bad ``spark.dpp.*`` value or table path is a ``ConfigError`` and leaves the session as
    it was.
    """
    with _LOCK:
        state = _state(spark)
        if state is not None:
            conf = spark_settings(spark)
            DppConfig.from_mapping(conf)   # every value, even while dpp is switched off
            state.sync_tables(conf)
            return state.session
        from dpp.session import DppSession

        previous = vars(spark).get("sql", _MISSING)
        previous_table = vars(spark).get("table", _MISSING)
        original = spark.sql
        original_table = spark.table
        session = DppSession(spark)  # validates spark.dpp.* now
        _install_hook(session)
        state = _Enabled(spark, session, previous, previous_table)
        try:
            state.sync_tables(spark_settings(spark))
        except Exception:
            state.forget_tables()
            session.close()
            raise
        spark.sql = _wrapper(state, original)
        if session.optimizer_hook is not None:
            spark.table = _table_wrapper(state, original_table)
        log.info("dpp: enabled on this SparkSession (spark.dpp.enabled is read per query)")
        return session


def _install_hook(session: "DppSession") -> None:
    """The optimizer hook on a classic session (``spark.dpp.optimizerHook``, default true):
    DataFrame jobs, views, writes and commands are pruned too. Where it cannot be installed
    (Spark Connect: no JVM in Python; no JDK to compile it) only ``spark.sql`` queries are,
    and the reason is logged and kept as the session's ``hook_note``."""
    from dpp.core.remote import is_remote

    session.hook_note = None  # type: ignore[attr-defined]
    if is_remote(session.spark):
        if session.config.connect_server:   # the server prunes: never twice
            from dpp.session import SERVER_PRUNES

            session.hook_note = SERVER_PRUNES  # type: ignore[attr-defined]
            log.info("dpp: %s", SERVER_PRUNES)
            return
        note = ("Spark Connect: no optimizer hook (no JVM in Python); spark.sql queries are "
                "pruned by the SQL-text analysis")
        try:
            from dpp.frontends.connect.frames import ConnectFrames

            session.connect_frames = ConnectFrames(session)
            note += ("; DataFrame star joins over catalog tables and declared folders only "
                     "with spark.dpp.connect.dataFrames=true (off by default: the client-side "
                     "plan rewrite keeps only shapes it can prove and sends the rest as built)")
        except Exception as exc:   # another client build: SQL only
            note += f"; DataFrame plans are not ({type(exc).__name__}: {exc})"
            log.warning("dpp: %s", note)
        session.hook_note = note  # type: ignore[attr-defined]
        return
    if not session.config.optimizer_hook:
        session.hook_note = "spark.dpp.optimizerHook=false: only spark.sql queries are pruned"  # type: ignore[attr-defined]
        return
    try:
        from dpp.frontends.hook.optimizer_hook import OptimizerHook, patch_explain

        session.optimizer_hook = OptimizerHook(session)
        patch_explain(session_of)
    except Exception as exc:
        session.hook_note = (f"optimizer hook unavailable, only spark.sql queries are pruned: "  # type: ignore[attr-defined]
                             f"{type(exc).__name__}: {exc}")
        log.warning("dpp: %s", session.hook_note)  # type: ignore[attr-defined]


def disable(spark: Any) -> None:
    """Puts back the ``spark.sql`` that ``enable`` replaced; a no-op when not enabled."""
    with _LOCK:
        state = _state(spark)
        if state is None:
            return
        if state.previous is _MISSING:
            del spark.sql
        else:
            spark.sql = state.previous
        if getattr(vars(spark).get("table"), "dpp_state", None) is state:
            if state.previous_table is _MISSING:
                del spark.table
            else:
                spark.table = state.previous_table
        state.forget_tables()
        state.session.close()


def _wrapper(state: _Enabled, original: Callable[..., Any]) -> Callable[..., Any]:
    session = state.session

    @functools.wraps(original)
    def sql(sqlQuery: str, args: Any = None, **kwargs: Any) -> Any:
        if first_word(sqlQuery) in CONF_WORDS:
            return original(sqlQuery, args, **kwargs)   # SET/RESET: how a bad value is fixed
        conf = spark_settings(state.spark)
        if not enabled_setting(conf):
            return original(sqlQuery, args, **kwargs)   # dpp off: Spark's own, untouched
        if is_query(sqlQuery) or is_explain(sqlQuery):
            # the hook cannot fail a plan: a bad value is said here, not run unpruned silently
            DppConfig.from_mapping(conf)
        state.sync_tables(conf)
        if session.optimizer_hook is not None and is_explain(sqlQuery):
            from dpp.frontends.hook.optimizer_hook import explaining

            with explaining(state.spark):   # planned, never run: no build side starts
                return session.plain_sql(sqlQuery, args, **kwargs)
        if args is not None or kwargs or not is_query(sqlQuery):
            return session.plain_sql(sqlQuery, args, **kwargs)
        if session.optimizer_hook is not None:
            return session.plain_sql(sqlQuery)   # the optimizer hook prunes it
        try:
            return session.sql(sqlQuery)
        except (ConfigError, LayoutError):
            raise
        except Exception as exc:
            if _is_spark_error(exc):
                raise
            failure = exc
        log.warning("dpp: pruning failed internally, running the query with Spark's own sql: "
                    "%s: %s", type(failure).__name__, failure, exc_info=failure)
        return session.plain_sql(sqlQuery)

    sql.dpp_original_sql = original  # type: ignore[attr-defined]
    sql.dpp_state = state  # type: ignore[attr-defined]
    return sql


def _table_wrapper(state: _Enabled, original: Callable[..., Any]) -> Callable[..., Any]:
    """``spark.table(name)`` of a declared table reads the folder as ``spark.read.parquet``
    would now: its view is made afresh first (Spark lists and types the folder when the
    DataFrame is made, as the reader does), so a DataFrame job sees the files of the moment
    it names the table, never those of the moment the table was declared."""

    @functools.wraps(original)
    def table(tableName: str) -> Any:
        _fresh_view(state, tableName)
        return original(tableName)

    table.dpp_state = state  # type: ignore[attr-defined]
    _patch_reader_table()
    return table


def _fresh_view(state: _Enabled, name: object) -> None:
    """A declared table's view made afresh before ``spark.table`` / ``spark.read.table``
    reads it (a no-op for any other name, or while dpp is off)."""
    from dpp.runtime.views import norm_name   # here: dpp.runtime.views imports hive_splits, which imports dpp

    conf = spark_settings(state.spark)
    if isinstance(name, str) and enabled_setting(conf):
        state.sync_tables(conf)
        if norm_name(name) in state.tables:
            state.session.ensure_views([name])


def _patch_reader_table() -> None:
    """``spark.read.table(name)`` as ``spark.table(name)``: a declared table's view made
    afresh first (once per process; sessions without dpp are untouched)."""
    from pyspark.sql.readwriter import DataFrameReader

    with _LOCK_PATCH:
        original = DataFrameReader.table
        if getattr(original, "dpp_patched", False):
            return

        @functools.wraps(original)
        def table(self: Any, tableName: str) -> Any:
            spark = getattr(self, "_spark", None)
            state = _state(spark) if spark is not None else None
            if state is not None and state.session.optimizer_hook is not None:
                _fresh_view(state, tableName)
            return original(self, tableName)

        table.dpp_patched = True  # type: ignore[attr-defined]
        DataFrameReader.table = table  # type: ignore[method-assign]


def _is_spark_error(exc: BaseException) -> bool:
    """An error raised by Spark itself (the query's own), not by this package."""
    try:
        from py4j.protocol import Py4JError
        from pyspark.errors import PySparkException
    except ImportError:  # pragma: no cover - pyspark is a dependency
        return False
    if _jvm_missing(exc):
        return False
    return isinstance(exc, (PySparkException, Py4JError))


def _jvm_missing(exc: BaseException) -> bool:
    """This package asking a Spark Connect session for a JVM handle (``sparkContext``,
    ``_jvm``...): PySpark raises that as its own error, but it is this package's fault, so
    the query runs with Spark's own ``sql`` instead of failing."""
    get = getattr(exc, "getCondition", None) or getattr(exc, "getErrorClass", None)
    try:
        return get is not None and get() == "JVM_ATTRIBUTE_NOT_SUPPORTED"
    except Exception:  # pragma: no cover
        return False
