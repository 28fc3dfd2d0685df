"""What differs between the PySpark lines dpp runs on (3.5 to 4.3), in one place.

Imports nothing of the project and no Spark at import time (``dpp.core`` stays light).
"""
from __future__ import annotations

from typing import Any

__all__ = ["to_arrow", "has_to_arrow", "conf_items"]


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
