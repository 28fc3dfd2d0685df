"""The native build side: Spark's own aggregation computes the key domain, no Python on executors.

Why it exists: the Arrow collector (:mod:`collectors.build`) runs a Python function in every
build task, so it needs the executors' Python to import pyarrow and this package. A job
started as ``.venv/bin/python job.py`` (venv not activated, no ``PYSPARK_PYTHON``) starts its
workers with the ``python3`` on the PATH, and on a cluster the executors may lack the package:
every build side then fails and nothing is pruned. Here the executors run only Spark's
code-generated aggregation; the driver, which has pyarrow because it imported this package,
turns the small result into a domain.

The plan, per key column:

0. ``SELECT key ... LIMIT raw_rows + 1`` collected as Arrow: a build side of at most
   ``raw_rows`` rows (a filtered dimension, what a star join mostly builds from) comes whole in
   one job without a shuffle, and the driver's collector makes the domain from its rows,
   duplicates and all, exactly as from the grouped keys below. Only a larger one is grouped.
1. ``SELECT key, count(*) ... GROUP BY key LIMIT limit + 2`` collected as Arrow (``DataFrame.toArrow``:
   Spark's JVM writes the Arrow batches; no Python worker starts). ``limit`` is what the
   collapse policy may hold exactly: ``maxDistinctValues``, or the bloom capacity when blooms
   are on (a bloom is filled from the distinct keys). At most ``limit`` + 2 groups ever reach
   the driver: ``limit`` + 1 keys and the NULL group, so that fewer rows than that proves every
   group was seen.
2. Only when there are more: ``SELECT min(key), max(key), count(*), count(key)`` — one more pass, and the domain is
   that range (no bloom: the keys needed to fill one would not fit the bound).

The driver feeds the collected keys through the very :class:`PartialCollector` the Arrow
collector runs in its tasks, so both collectors make identical domains from identical keys
(same type mapping, same NULL and NaN handling, same collapse). The result is published to
the filter service as one part from the driver.
"""
from __future__ import annotations

import logging
import os
import time
from typing import Any, Optional

from collectors.build import (BuildError, BuildResult, build_job_group, encode_bounded,
                              job_group_id, short_error, spark_to_datatype)
from collectors.partial import PartialCollector
from collectors.sink import PartialSink
from dpp.core.codec import DEFAULT_MAX_BYTES
from dpp.core.domain import Domain, TupleDomain
from dpp.core.errors import DomainError, DppError
from dpp.core.remote import functions_for
from dpp.core.spark_compat import to_arrow
from dpp.core.spark_rules import BROADCAST_KEY, broadcast_threshold
from dpp.core.policy import CollapsePolicy
from hive_splits.jvm_refs import jvm_static

__all__ = ["build_filter_native", "publish_keys", "KEY_ARROW_TYPES"]

log = logging.getLogger(__name__)

_COUNT = "__dpp_rows"

# a build side of at most this many rows is collected row by row (one column: 64k keys are a
# few hundred KB) instead of grouped by Spark first: one job, no shuffle
RAW_ROWS = 65536
# ... tried first only when Spark estimates the build side small enough to broadcast
# (dpp.core.spark_rules.broadcast_threshold, the session's own): a larger one would be
# scanned twice when its rows are too many


def build_filter_native(df: Any, key: str, *, filter_id: str, max_distinct: int,
                        bloom_enabled: bool, bloom_fpp: float, bloom_capacity: Optional[int],
                        sink: PartialSink, description: Optional[str] = None,
                        raw_rows: int = RAW_ROWS) -> BuildResult:
    """Computes the domain of ``df[key]`` (its rows when there are at most ``raw_rows``,
    else Spark's aggregation of them) and publishes it.

    ``description`` is what Spark's UI and event log show for the build jobs (their job
    group is :func:`job_group_id`, so ``cancelJobGroup`` stops them). Raises
    :class:`BuildError` when Spark fails; the caller fails the filter ("no pruning").
    """
    F = functions_for(df)  # the Connect client's own functions on Spark Connect

    t0 = time.monotonic()
    if max_distinct < 0:
        raise DomainError(f"max_distinct must be >= 0, got {max_distinct}")
    policy = CollapsePolicy.of(max_distinct, float(bloom_fpp) if bloom_enabled else None,
                               bloom_capacity)
    # the hook's build frame is its key column alone, its schema already read (PySpark keeps
    # it): a projection to that column again would be five more round trips to the JVM
    selected = df if df.columns == [key] else df.select(key)
    if selected.columns[0] == _COUNT:
        raise DomainError(f"filter {filter_id!r}: key column name {_COUNT!r} is reserved")
    field = selected.schema.fields[0]
    name = field.name
    key_types = {name: spark_to_datatype(field.dataType, name)}
    group = job_group_id(filter_id)
    jobs = 1
    with build_job_group(df.sparkSession, group,
                         description or f"dpp build: {name} (filter {filter_id})"):
        try:
            distinct: Optional[int]
            limited = selected.limit(raw_rows + 1) if raw_rows > 0 else None
            raw = to_arrow(limited) if limited is not None and _small(limited) else None
            if raw is not None and len(raw) <= raw_rows:
                # every row of the build side: the collector keeps values, or collapses to
                # min/max past the limit, as it does in the build tasks
                td, distinct, rows = _collect(raw, name, policy, None)
            else:
                jobs = 2 if raw is not None else 1
                col = F.col("`" + name.replace("`", "``") + "`")
                # room for limit + 1 non-null groups and the one NULL group: fewer rows than
                # that means every group was seen (with limit + 1 rows the NULL group could
                # push a key out unseen, and the domain would lose it)
                fetch = policy.exact_limit + 2
                keys = to_arrow(selected.groupBy(col).agg(F.count(F.lit(1)).alias(_COUNT))
                                .limit(fetch))
                non_null = len(keys) - keys.column(0).null_count
                if len(keys) < fetch and non_null <= policy.exact_limit:
                    td, _d, rows = _collect(keys, name, policy, _COUNT)
                    distinct = non_null
                else:
                    jobs += 1
                    stats = to_arrow(selected.agg(
                        F.min(col).alias("lo"), F.max(col).alias("hi"),
                        F.count(F.lit(1)).alias("n"), F.count(col).alias("n_keys")))
                    rows = int(stats.column("n")[0].as_py())
                    td = _min_max(stats, name, key_types,
                                  null=rows > int(stats.column("n_keys")[0].as_py()))
                    distinct = None
        except DppError:
            raise
        except Exception as exc:
            raise BuildError(f"native build of filter {filter_id!r} failed: "
                             f"{short_error(exc)}") from exc

    result = _publish(td, key_types, filter_id, sink, rows=rows, distinct=distinct, t0=t0,
                      group=group)
    log.info("filter %s built natively: %s distinct keys in %d job(s), %.3f s", filter_id,
             "more than " + str(policy.exact_limit) if distinct is None else distinct,
             jobs, result.seconds)
    return result


def _small(limited: Any) -> bool:
    """Whether Spark's own estimate of the rows under ``limited`` (the build side with the
    row bound on top) is at most the session's broadcast threshold (a filter does not lower
    it: a table that small holds few enough rows to try); True where no estimate can be read
    (a Spark Connect DataFrame: its plan is in the server)."""
    return under_broadcast_threshold(limited, unknown=True)


def under_broadcast_threshold(df: Any, *, unknown: bool) -> bool:
    """Whether Spark's size estimate of ``df``'s optimized plan, below any limits on top, is
    at most the session's broadcast threshold; ``unknown`` where no estimate can be read.

    The estimate is read from the plan a collection of ``df`` then runs: Spark optimizes it
    once for both (its query execution keeps the optimized plan)."""
    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        return unknown
    try:
        # one round trip where the hook jar is loaded (dpp.spark.BuildSide), else the walk
        estimate = jvm_static(df.sparkSession._jvm, "dpp.spark.BuildSide", "sizeBelowLimits")
        if estimate is not None:
            size_text, raw = str(estimate(jdf)).split("\n", 1)
            return int(size_text) <= broadcast_threshold(raw or None)
        node = jdf.queryExecution().optimizedPlan()
        while node.nodeName() in ("GlobalLimit", "LocalLimit") and node.children().size() == 1:
            node = node.children().head()
        size = int(str(node.stats().sizeInBytes()))
        limit = broadcast_threshold(df.sparkSession.conf.get(BROADCAST_KEY, None))
    except Exception:   # no estimate
        return unknown
    return size <= limit


def _collect(table: Any, name: str, policy: CollapsePolicy, count_column: Optional[str]
             ) -> tuple[TupleDomain, Optional[int], int]:
    """The domain of ``table``'s key column (its rows, or its groups with their counts in
    ``count_column``) by the build tasks' collector, its exact distinct count while known,
    and the rows it stands for."""
    collector = PartialCollector(
        table.schema, [name], max_distinct=policy.max_distinct,
        bloom_enabled=policy.bloom_fpp is not None, bloom_fpp=policy.bloom_fpp or 0.01,
        bloom_capacity=policy.bloom_capacity, count_column=count_column)
    for batch in table.to_batches():
        collector.add_batch(batch)
    return collector.result(), collector.distinct(), collector.rows


def _min_max(table: Any, name: str, key_types: dict, null: bool) -> TupleDomain:
    """The range domain of a one-row ``lo, hi`` Arrow table."""
    import pyarrow as pa

    t = key_types[name]
    lo, hi = table.column("lo"), table.column("hi")
    if lo.null_count == len(lo):  # only NULL keys (cannot happen past the limit; kept sound)
        return TupleDomain.of({name: Domain.only_null(t) if null else Domain.none(t)})
    # through the collector's min/max mode, so NaN and -0.0 are handled as in build tasks
    both = pa.table({name: pa.concat_arrays([lo.combine_chunks(), hi.combine_chunks()])})
    collector = PartialCollector(both.schema, [name], max_distinct=0, bloom_enabled=False,
                                 bloom_fpp=0.01, bloom_capacity=None)
    for batch in both.to_batches():
        collector.add_batch(batch)
    d = collector.result().get(name)
    assert d is not None
    return TupleDomain.of({name: Domain(d.type, d.value_set, null)})


# the integer key types whose values can come as plain numbers (dpp.spark.SparkKeys), by
# Spark's name of the type
KEY_ARROW_TYPES = {"int": "int32", "bigint": "int64", "smallint": "int16", "tinyint": "int8"}


def publish_keys(values: list[int], name: str, spark_type: str, *, filter_id: str,
                 max_distinct: int, bloom_enabled: bool, bloom_fpp: float,
                 bloom_capacity: Optional[int], sink: PartialSink) -> BuildResult:
    """Publishes the domain of a build side whose keys are known without running it (the keys
    Spark's own dynamic pruning took from its broadcast), made as the native build makes it
    from the same keys: the collector, its collapse and bloom, one part from the driver."""
    import pyarrow as pa

    t0 = time.monotonic()
    policy = CollapsePolicy.of(max_distinct, float(bloom_fpp) if bloom_enabled else None,
                               bloom_capacity)
    arrow_type = getattr(pa, KEY_ARROW_TYPES[spark_type])()
    table = pa.table({name: pa.array(values, type=arrow_type)})
    td, distinct, rows = _collect(table, name, policy, None)
    key_types = {name: spark_to_datatype(_spark_type(spark_type), name)}
    return _publish(td, key_types, filter_id, sink, rows=rows, distinct=distinct, t0=t0,
                    group="")


def _publish(td: TupleDomain, key_types: dict, filter_id: str, sink: PartialSink, *,
             rows: int, distinct: Optional[int], t0: float, group: str) -> BuildResult:
    """Publishes ``td`` as the filter's one part, from the driver (cut to min/max where it
    does not fit the service's bound)."""
    payload, coarsened = encode_bounded(td, int(getattr(sink, "max_bytes", DEFAULT_MAX_BYTES)),
                                        f"filter {filter_id}")
    expect = getattr(sink, "expect_parts", None)
    if expect is not None:
        expect(filter_id, 1, key_types)
    sink.publish_on_driver(filter_id, 0, payload)
    return BuildResult(
        filter_id=filter_id, parts_expected=1, rows=rows, distinct=distinct,
        seconds=time.monotonic() - t0, published_by="driver", executor_pids=(),
        parts_reported=1, key_types=key_types, payload_bytes=len(payload),
        coarsened_parts=int(coarsened), driver_pid=os.getpid(), job_group=group)


def _spark_type(name: str) -> Any:
    from pyspark.sql import types as T

    return {"int": T.IntegerType(), "bigint": T.LongType(), "smallint": T.ShortType(),
            "tinyint": T.ByteType()}[name]
