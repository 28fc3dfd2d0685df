"""What the analysis learns about a table, kept for the session and dropped when Spark drops it.

Analysing a query asks Spark about every table it names: a catalog table's metadata and
columns (metastore calls), a view's or dimension's schema (``spark.table(name).schema``, a
full analysis). Measured at SF1 that was up to 0.6 s per query on path tables and 0.7-3.6 s on
catalog tables — for answers that do not change between queries.

So answers are kept per name, each with a *token*: the identity of Spark's own object for the
name — the temporary view's relation, or the relation Spark caches for a catalog table
(``SessionCatalog.getCachedTable``). Spark replaces or drops those objects on exactly the events
that change a table for this session (``CREATE OR REPLACE TEMP VIEW``, ``DROP``, ``ALTER``,
``INSERT``, ``REFRESH TABLE``, ``spark.catalog.refreshTable``), so a changed token means the
kept answer is stale and it is asked again. Checking a token is an in-memory lookup in the JVM
(a few py4j calls, well under a millisecond), never an analysis or a metastore call. Where Spark
holds no object for a name (a table it has not resolved, a global temp view) nothing is kept.

What is kept is the *shape* only — columns, partition columns, location. A catalog table's
partition list is fetched for every query (``with_catalog_partitions``): a partition another job
added must never be missed.
"""
from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Optional, TypeVar

from dpp.core.remote import is_remote

__all__ = ["SchemaCache"]

log = logging.getLogger(__name__)

T = TypeVar("T")
_SESSION_CATALOG = "spark_catalog"


class SchemaCache:
    """Per-session answers keyed by table name, valid while Spark's object for it is the same."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, str], tuple[int, Any]] = {}
        self.hits = 0
        self.misses = 0
        self._refs: Optional[tuple[Any, Any, Any]] = None

    def get_or_compute(self, kind: str, name: str, compute: Callable[[], T]) -> T:
        """The kept answer of ``kind`` for ``name`` if Spark's object is unchanged, else
        ``compute()`` (kept when Spark now holds an object for the name)."""
        key = (kind, name)
        token = self.token(name)
        with self._lock:
            entry = self._entries.get(key)
            if token is not None and entry is not None and entry[0] == token:
                self.hits += 1
                return entry[1]
            self.misses += 1
        value = compute()
        token = self.token(name)  # resolving the table may have made Spark cache it
        with self._lock:
            if token is None:
                self._entries.pop(key, None)
            else:
                self._entries[key] = (token, value)
        return value

    def forget(self, name: str) -> None:
        with self._lock:
            for key in [k for k in self._entries if k[1] == name]:
                del self._entries[key]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def _jvm_refs(self) -> tuple[Any, Any, Any]:
        """The session catalog and the two JVM classes a token needs, resolved once (each
        py4j class lookup is a reflection round trip of several milliseconds)."""
        if self._refs is None:
            jvm = self.spark._jvm
            self._refs = (self.spark._jsparkSession.sessionState().catalog(),
                          jvm.java.lang.System,
                          jvm.org.apache.spark.sql.catalyst.QualifiedTableName)
        return self._refs

    def token(self, name: str) -> Optional[int]:
        """Identity of Spark's current object for ``name`` (None: Spark holds none; always
        on Spark Connect, whose objects live in the server: nothing is kept there)."""
        if is_remote(self.spark):
            return None
        try:
            catalog, system, qualified_name = self._jvm_refs()
            parts = name.split(".")
            if len(parts) == 3 and parts[0].lower() == _SESSION_CATALOG:
                parts = parts[1:]   # how the optimizer hook names a catalog table
            if len(parts) == 1:
                view = catalog.getRawTempView(parts[0])
                if view.isDefined():
                    return int(system.identityHashCode(view.get())) * 2 + 1
                db = catalog.getCurrentDatabase()
            elif len(parts) == 2:
                db = parts[0]
            else:
                return None
            qualified = qualified_name(_SESSION_CATALOG, db, parts[-1])
            plan = catalog.getCachedTable(qualified)
            if plan is None:
                return None
            return int(system.identityHashCode(plan)) * 2
        except Exception:  # another Spark build: keep nothing, ask every time
            log.debug("no schema token for %s", name, exc_info=True)
            return None
