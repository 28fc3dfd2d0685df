"""``DataFrame.explain()`` never starts a build side: the optimizer hook plans, starts nothing.

The rule runs whenever Spark optimizes a plan, explaining included; a thread marked by
:func:`explaining` is one whose optimizer runs are an explain, and :func:`patch_explain` marks
every ``DataFrame.explain`` of a session with the hook. A plan explained and then executed
starts its build sides on its first listing.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

__all__ = ["EXPLAIN", "explaining", "patch_explain"]

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


def patch_explain() -> None:
    """``DataFrame.explain`` of a session with the hook runs under :func:`explaining`, so
    explaining a plan never starts its build sides (once per process; a no-op for sessions
    without the hook)."""
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
            from dpp.enable import session_of

            dpp_session = session_of(spark)
            if dpp_session is None or getattr(dpp_session, "optimizer_hook", None) is None:
                return original(self, *args, **kwargs)
            with explaining(spark):
                return original(self, *args, **kwargs)

        explain.dpp_patched = True  # type: ignore[attr-defined]
        explain.__doc__ = original.__doc__
        DataFrame.explain = explain  # type: ignore[method-assign]
