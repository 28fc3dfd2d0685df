"""The plain Spark views of registered path tables: made when a query needs a table whole.

A registered table is a folder, not a Spark table: a query that reads it unpruned (or a build
side that names it) needs a temporary view of that name. Each is made afresh once per query: a
view kept from an earlier query would read that query's file list, missing files added since
(and feeding the filter cache a stale fingerprint), and a view another DppSession made over the
same name would read that session's registration.

A name the user's session already has is the user's: a temporary view dpp did not make, or a
table of the current database. Such a name shadows the registered table — dpp neither makes nor
replaces a view over it, the analysis reads the user's object, and the decline is said once (a
warning, and a note in the next report) — until the user's object goes. "Made by dpp" is
decided by identity, not by name: the view object Spark holds under the name must be the very
one dpp created. A user who replaces dpp's view (``createOrReplaceTempView`` after dpp made its
own) therefore owns the name from then on; dpp neither overwrites nor drops that view.
"""
from __future__ import annotations

import contextlib
import logging
import threading
from typing import Any, Callable, Iterable, Iterator, Optional

from pyspark.sql import SparkSession

from hive_splits import Table

__all__ = ["PlainViews", "norm_name"]

log = logging.getLogger(__name__)

# plain views made by any DppSession, per SparkSession: (session id, name) -> the view object
# Spark holds for it (a py4j handle on a classic session; None on Spark Connect, where there is
# no JVM to ask, and the name alone says it). Only such a view is ours to replace or drop.
_MADE: dict[tuple[int, str], Any] = {}
_MADE_LOCK = threading.Lock()

# who holds a name in the user's session
_FREE, _OURS, _USER_VIEW, _USER_TABLE = "free", "ours", "view", "table"


def norm_name(name: str) -> str:
    """How table names are compared: unquoted, lower case (Spark's default resolution)."""
    return name.strip().strip("`").lower()


class PlainViews:
    """Creates and forgets the plain views of one DppSession's registered tables.

    ``full_dataframe(table)`` gives the DataFrame over all of a table's files; ``registered``
    looks a registered table up by normalized name; ``remote``: a Spark Connect session (no
    JVM: a view is known as dpp's by its name only).
    """

    def __init__(self, spark: SparkSession, registered: Callable[[str], Optional[Table]],
                 full_dataframe: Callable[[Table], object], remote: bool = False) -> None:
        self.spark = spark
        self._registered = registered
        self._full = full_dataframe
        self._remote = remote
        self._own: set[str] = set()
        self._declined: dict[str, str] = {}   # name -> why the user's object wins
        self._notes: list[str] = []           # declines not yet in a report
        self._lock = threading.Lock()
        self._local = threading.local()

    @contextlib.contextmanager
    def query(self) -> Iterator[None]:
        """The scope of one query on this thread: each view is made at most once in it, and
        who holds each name is asked once."""
        self._local.fresh = set()
        self._local.holders = {}
        try:
            yield
        finally:
            self._local.fresh = None
            self._local.holders = None

    # ------------------------------------------------------------------ who holds a name
    def usable(self, key: str) -> bool:
        """Whether registered table ``key`` may be read under its name: no temporary view or
        table of the user's holds the name. When one does, the decline is said once; a view
        dpp made that now hides a user's new table is dropped (the user's table wins)."""
        holder = self._holder(key)
        if holder in (_USER_VIEW, _USER_TABLE):
            if holder == _USER_TABLE:
                self.forget(key)   # our view (if any) would hide the user's table
            what, it = (("temporary view", "view") if holder == _USER_VIEW
                        else ("table in the current database", "table"))
            self._decline(key, f"registered table {key!r} is not used: the session has its "
                               f"own {what} {key!r}, which wins (dpp makes no view of that "
                               f"name; queries read the user's {it})")
            return False
        with self._lock:
            back = self._declined.pop(key, None) is not None
        if back:
            log.info("dpp: the user's object named %r is gone; registered table %r is used "
                     "again", key, key)
        return True

    def declined(self) -> list[str]:
        """Why each registered table currently shadowed by a user's object is not used."""
        with self._lock:
            return [self._declined[k] for k in sorted(self._declined)]

    def take_notes(self) -> list[str]:
        """Declines not yet said in a report (each is said in the next one)."""
        with self._lock:
            notes, self._notes = self._notes, []
        return notes

    def _decline(self, key: str, why: str) -> None:
        with self._lock:
            new = self._declined.get(key) != why
            self._declined[key] = why
            if new:
                self._notes.append(why)
        if new:
            log.warning("dpp: %s", why)

    def _holder(self, key: str) -> str:
        holders: Optional[dict[str, str]] = getattr(self._local, "holders", None)
        if holders is not None and key in holders:
            return holders[key]
        holder = self._ask_holder(key)
        if holders is not None:
            holders[key] = holder
        return holder

    def _ask_holder(self, key: str) -> str:
        if self._remote:
            return self._ask_holder_remote(key)
        catalog = self.spark._jsparkSession.sessionState().catalog()  # type: ignore[attr-defined]
        raw = catalog.getRawTempView(key)
        if raw.isDefined():
            ours = self._made_view(key)
            if ours is None or not bool(raw.get().equals(ours)):
                # the user's view (or the user replaced ours: it is theirs from now on)
                self._disown(key)
                return _USER_VIEW
        else:
            self._disown(key)   # ours was dropped (by the user): nothing of ours is left
        if self._catalog_table_exists(key):
            return _USER_TABLE
        return _OURS if raw.isDefined() else _FREE

    def _ask_holder_remote(self, key: str) -> str:
        try:
            temp = any(t.isTemporary and t.name.lower() == key
                       for t in self.spark.catalog.listTables(pattern=key))
            if temp:
                return _OURS if self._made_here(key) else _USER_VIEW
            return _USER_TABLE if self.spark.catalog.tableExists(key) else _FREE
        except Exception:   # cannot tell: the name stays as it was handled before
            return _OURS if self._made_here(key) else _FREE

    def _catalog_table_exists(self, key: str) -> bool:
        """A table (or persistent view) of this name in the current database: one catalog
        call, which never looks at temporary views."""
        try:
            jvm = self.spark._jvm  # type: ignore[attr-defined]
            ident = jvm.org.apache.spark.sql.catalyst.TableIdentifier.apply(
                key, jvm.scala.Option.apply(None))
            return bool(self.spark._jsparkSession.sessionState().catalog()  # type: ignore[attr-defined]
                        .tableExists(ident))
        except Exception:
            log.debug("could not ask the catalog for %s", key, exc_info=True)
            return False

    # ------------------------------------------------------------------ views
    def ensure(self, names: Iterable[str]) -> None:
        """Makes the plain view of each registered table among ``names`` that needs one (and
        whose name no object of the user's holds)."""
        fresh: Optional[set[str]] = getattr(self._local, "fresh", None)
        for n in names:
            key = norm_name(n)
            t = self._registered(key)
            if t is None or (fresh is not None and key in fresh):
                continue
            if not self.usable(key):
                continue  # a user's own table or view: never replaced
            self._full(t).createOrReplaceTempView(key)  # type: ignore[attr-defined]
            made = None
            if not self._remote:
                made = (self.spark._jsparkSession.sessionState().catalog()  # type: ignore[attr-defined]
                        .getRawTempView(key).get())
            with _MADE_LOCK:
                _MADE[(id(self.spark), key)] = made
            with self._lock:
                self._own.add(key)
            holders = getattr(self._local, "holders", None)
            if holders is not None:
                holders[key] = _OURS
            if fresh is not None:
                fresh.add(key)

    def forget(self, key: str) -> None:
        """A table was registered again or forgotten: a view we made over it goes — only if
        the view under that name is still the one we made (a user's replacement stays)."""
        with self._lock:
            stale = key in self._own
            self._own.discard(key)
            self._declined.pop(key, None)
        if not stale:
            return
        if not self._remote:
            raw = self.spark._jsparkSession.sessionState().catalog().getRawTempView(key)  # type: ignore[attr-defined]
            ours = self._made_view(key)
            if not raw.isDefined() or ours is None or not bool(raw.get().equals(ours)):
                self._disown(key)
                return
        self.spark.catalog.dropTempView(key)
        self._disown(key)

    def _disown(self, key: str) -> None:
        with _MADE_LOCK:
            _MADE.pop((id(self.spark), key), None)
        with self._lock:
            self._own.discard(key)

    def _made_view(self, key: str) -> Any:
        with _MADE_LOCK:
            return _MADE.get((id(self.spark), key))

    def _made_here(self, key: str) -> bool:
        with _MADE_LOCK:
            return (id(self.spark), key) in _MADE
