"""The plain Spark views of registered path tables: made when a query needs a table whole.

A registered table is a folder, not a Spark table: a query that reads it unpruned (or a build
side that names it) needs a temporary view of that name. Only views a DppSession made are ever
replaced — a user's own view of the same name is theirs — and each is made afresh once per
query: a view kept from an earlier query would read that query's file list, missing files
added since (and feeding the filter cache a stale fingerprint), and a view another DppSession
made over the same name would read that session's registration.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Callable, Iterable, Iterator, Optional

from pyspark.sql import SparkSession

from hive_splits import Table

__all__ = ["PlainViews", "norm_name"]

# plain views made by any DppSession, per SparkSession: such a view is ours to replace
_MADE: set[tuple[int, str]] = set()
_MADE_LOCK = threading.Lock()


def norm_name(name: str) -> str:
    """How table names are compared: unquoted, lower case (Spark's default resolution)."""
    return name.strip().strip("`").lower()


class PlainViews:
    """Creates and forgets the plain views of one DppSession's registered tables.

    ``full_dataframe(table)`` gives the DataFrame over all of a table's files; ``registered``
    looks a registered table up by normalized name.
    """

    def __init__(self, spark: SparkSession, registered: Callable[[str], Optional[Table]],
                 full_dataframe: Callable[[Table], object]) -> None:
        self.spark = spark
        self._registered = registered
        self._full = full_dataframe
        self._own: set[str] = set()
        self._lock = threading.Lock()
        self._local = threading.local()

    @contextlib.contextmanager
    def query(self) -> Iterator[None]:
        """The scope of one query on this thread: each view is made at most once in it."""
        self._local.fresh = set()
        try:
            yield
        finally:
            self._local.fresh = None

    def ensure(self, names: Iterable[str]) -> None:
        """Makes the plain view of each registered table among ``names`` that needs one."""
        fresh: Optional[set[str]] = getattr(self._local, "fresh", None)
        for n in names:
            key = norm_name(n)
            t = self._registered(key)
            if t is None or (fresh is not None and key in fresh):
                continue
            if self.spark.catalog.tableExists(key) and not self._made_here(key):
                continue  # a user's own table or view: never replaced
            self._full(t).createOrReplaceTempView(key)  # type: ignore[attr-defined]
            with _MADE_LOCK:
                _MADE.add((id(self.spark), key))
            with self._lock:
                self._own.add(key)
            if fresh is not None:
                fresh.add(key)

    def forget(self, key: str) -> None:
        """A table was registered again: a view we made over the old registration goes."""
        with self._lock:
            stale = key in self._own
            self._own.discard(key)
        if stale:
            self.spark.catalog.dropTempView(key)
            with _MADE_LOCK:
                _MADE.discard((id(self.spark), key))

    def _made_here(self, key: str) -> bool:
        with _MADE_LOCK:
            return (id(self.spark), key) in _MADE
