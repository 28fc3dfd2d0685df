"""``DataFrame.explain()`` never starts a build side: the optimizer hook plans, starts nothing.

The rule runs whenever Spark optimizes a plan, explaining included; a thread marked by
:func:`explaining` is one whose optimizer runs are an explain, and :func:`patch_explain` marks
every ``DataFrame.explain`` of a session with the hook. A plan explained and then executed
starts its build sides on its first listing.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterable, Iterator, Optional

from dpp.core.refusals import Code, Refusal
from dpp.analysis.statements import is_query

__all__ = ["EXPLAIN", "ExplainListener", "explaining", "patch_explain"]

WHOLE = Refusal(Code.NOTHING_TO_PRUNE).words()

EXPLAIN = "spark.dpp.explaining"


@contextlib.contextmanager
def explaining(spark: Any) -> Iterator[None]:
    """Marks this thread's optimizer runs as an explain: the hook plans but starts nothing."""
    sc = spark.sparkContext
    old = sc.getLocalProperty(EXPLAIN)
    sc.setLocalProperty(EXPLAIN, "true")
    try:
        yield
    finally:
        sc.setLocalProperty(EXPLAIN, old)


_PATCH_LOCK = threading.Lock()


def patch_explain(session_of: Callable[[Any], Any]) -> None:
    """``DataFrame.explain`` of a session with the hook runs under :func:`explaining`, so
    explaining a plan never starts its build sides (once per process; a no-op for sessions
    without the hook). ``session_of``: the DppSession of a SparkSession, or None
    (:func:`dpp.enable.session_of`, handed in: this module sits below ``enable``)."""
    try:
        from pyspark.sql.classic.dataframe import DataFrame
    except ImportError:   # PySpark 3.5: the classic DataFrame is pyspark.sql's own
        from pyspark.sql.dataframe import DataFrame  # type: ignore[assignment]

    with _PATCH_LOCK:
        original = DataFrame.explain
        if getattr(original, "dpp_patched", False):
            return

        def explain(self: Any, *args: Any, **kwargs: Any) -> Any:
            spark = self.sparkSession
            dpp_session = session_of(spark)
            if dpp_session is None or getattr(dpp_session, "optimizer_hook", None) is None:
                return original(self, *args, **kwargs)
            with explaining(spark):
                return original(self, *args, **kwargs)

        explain.dpp_patched = True  # type: ignore[attr-defined]
        explain.__doc__ = original.__doc__
        DataFrame.explain = explain  # type: ignore[method-assign]


class ExplainListener:
    """What the hook decided for explained plans, collected while ``DppSession.explain``
    listens: Spark plans the query as ``EXPLAIN`` (nothing runs, no build side starts) and the
    rule's answers are described per relation. One explain listens at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._one = threading.Lock()
        self._lines: Optional[list[str]] = None

    def explain(self, session: Any, query: str) -> list[str]:
        with self._one:
            with self._lock:
                self._lines = []
            try:
                with explaining(session.spark):
                    shown = session.plain_sql(f"EXPLAIN {query}").collect()
                # Spark's EXPLAIN answers an unplannable query with the error as its text
                text = str(shown[0][0]).strip() if shown else ""
                if text.startswith("Error occurred during query planning"):
                    if is_query(query):   # analysed, not run: Spark's own error, with its why
                        session.plain_sql(query)
                    raise ValueError("Spark's EXPLAIN gives no reason for a statement")
            except Exception as exc:   # Spark's own error: the query cannot be planned
                text = [x for x in str(exc).strip().splitlines() if x.strip()]
                return [f"dpp (optimizer hook): Spark cannot plan the query: "
                        f"{text[0] if text else type(exc).__name__}"]
            finally:
                with self._lock:
                    lines, self._lines = self._lines, None
        return lines or ["dpp (optimizer hook): no partitioned Parquet relation of this plan "
                         "is joined so that dpp could prune it; Spark's plan as it is"]

    def record(self, targets: Iterable[tuple[Any, str, list[Any]]],
               unpruned: list[tuple[str, Refusal]], notes: list[str]) -> None:
        """One explained optimizer run's decisions: per relation, what prunes it (a
        ``dpp.analysis.plan_pairs.Prune``), or why nothing does."""
        with self._lock:
            if self._lines is None:
                return
        lines = []
        for _table, name, prunes in targets:
            if not prunes:
                lines.append(f"{name}: {WHOLE}")
            for p in prunes:
                kind = (" (a data column: files by statistics, row groups by the values)"
                        if p.data else "")
                by = (f"by the values of {p.build_sql}" if p.compare == "=" else
                      f"{p.compare} the {'largest' if p.compare in ('<', '<=') else 'smallest'}"
                      f" value of {p.build_sql}")
                lines.append(f"{name}: pruned on {p.fact_sql or p.column} {by} "
                             f"({p.join}){kind}")
        lines += [f"{name}: not pruned: {why}" for name, why in unpruned]
        lines += [f"note: {n}" for n in notes]
        with self._lock:
            if self._lines is not None:
                self._lines.extend(f"dpp (optimizer hook): {x}" for x in lines)
