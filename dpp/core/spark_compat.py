"""What differs between the PySpark lines dpp runs on (3.5 to 4.3), in one place.

Imports nothing of the project and no Spark at import time (``dpp.core`` stays light).
"""
from __future__ import annotations

import json
import threading
import weakref
from typing import Any

__all__ = ["to_arrow", "has_to_arrow", "conf_items", "session_conf"]


def has_to_arrow(df: Any) -> bool:
    """Whether ``df`` (classic or Connect) has PySpark 4's ``DataFrame.toArrow``."""
    return callable(getattr(df, "toArrow", None))


def to_arrow(df: Any) -> Any:
    """``df.toArrow()``: the rows as one ``pyarrow.Table``. PySpark 4.0 added ``toArrow``; on
    3.5 a classic DataFrame collects through ``_collect_as_arrow`` (the Arrow path its own
    ``toPandas`` takes, with ``spark.sql.execution.arrow.pyspark.enabled`` or not) and a
    Connect DataFrame through its client's ``to_table`` (what its ``collect`` does)."""
    if has_to_arrow(df):
        return df.toArrow()
    import pyarrow as pa

    collect = getattr(df, "_collect_as_arrow", None)
    if collect is not None:   # classic 3.5
        from pyspark.sql.pandas.types import to_arrow_schema

        batches = collect()
        if batches:
            return pa.Table.from_batches(batches)
        return to_arrow_schema(df.schema).empty_table()
    # Connect 3.5
    table, _ = df._session.client.to_table(df._plan.to_proto(df._session.client))
    return table


def conf_items(spark: Any) -> dict[str, str]:
    """Every setting of ``spark``'s session: ``spark.conf.getAll`` (PySpark 4.0+, one round
    trip on Spark Connect). PySpark 3.5's ``RuntimeConfig`` has no ``getAll``: there the
    ``SET`` command lists them, run through the class's own ``sql`` (never a wrapper
    ``dpp.enable`` put on the instance, which reads the settings itself)."""
    every = getattr(spark.conf, "getAll", None)   # a property: the dict itself
    if every is not None:
        return {str(k): str(v) for k, v in every.items()}
    rows = type(spark).sql(spark, "SET").collect()
    return {str(r[0]): str(r[1]) for r in rows}


class _ConfReader:
    """A classic session's settings as one JSON text: a Jackson mapper (Spark ships Jackson)
    and the way this Spark line gives the map to Java (``getAllAsJava`` from Spark 4.0; on 3.5
    Scala's converters over ``getAll``), found once per SparkContext."""

    def __init__(self, sc: Any) -> None:
        jvm = sc._jvm
        self.mapper = jvm.com.fasterxml.jackson.databind.ObjectMapper()
        self.converters = jvm.scala.collection.JavaConverters
        self.as_java: Any = None   # unknown until the first read

    def read(self, jspark: Any) -> dict[str, str]:
        jconf = jspark.conf()
        every = None
        if self.as_java is not False:
            try:
                every = jconf.getAllAsJava()
                self.as_java = True
            except Exception:   # Spark 3.5: no getAllAsJava
                if self.as_java:
                    raise
                self.as_java = False
        if every is None:
            every = self.converters.mapAsJavaMap(jconf.getAll())
        return {str(k): str(v) for k, v in json.loads(self.mapper.writeValueAsString(every)).items()}


_READERS: "weakref.WeakKeyDictionary[Any, _ConfReader]" = weakref.WeakKeyDictionary()
_READERS_LOCK = threading.Lock()


def session_conf(spark: Any) -> dict[str, str]:
    """Every setting ``spark``'s session holds (what ``spark.conf.get(key, default)`` reads
    before its default), in as few round trips as the session allows.

    Read on every query by the optimizer hook, so the classic path matters: PySpark's
    ``conf.getAll`` turns a py4j map into a dict entry by entry, about 140 py4j round trips
    for a plain session, several of them name lookups the JVM answers by scanning every jar
    of its class path for a class that does not exist (measured: 10% of the driver JVM's CPU
    with 16 queries at once). Here the session's map crosses as one JSON text, through the
    Jackson Spark ships: three round trips. A Spark Connect session has no JVM here:
    :func:`conf_items` (one RPC on PySpark 4); so does a classic session whose map cannot
    cross this way."""
    jspark = getattr(spark, "_jsparkSession", None)
    if jspark is None:
        return conf_items(spark)
    sc = spark.sparkContext
    try:
        with _READERS_LOCK:
            reader = _READERS.get(sc)
            if reader is None:
                reader = _READERS[sc] = _ConfReader(sc)
        return reader.read(jspark)
    except Exception:  # pragma: no cover - a Spark build without Jackson
        return conf_items(spark)
