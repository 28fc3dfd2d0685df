"""What a peer case and a peer table are: plain data, no Spark."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional

import pyarrow as pa


@dataclass(frozen=True)
class PeerTable:
    """A table of the peer suite, written as Parquet once and read as either kind.

    ``path`` kind: a temporary view of that name over ``spark.read.parquet(folder)``.
    ``catalog`` kind: ``CREATE TABLE name ... USING parquet [PARTITIONED BY (...)] LOCATION
    folder`` with its partitions recovered, and ``ANALYZE TABLE ... FOR COLUMNS`` of
    ``analyze`` when that is not empty (Spark's suite analyzes some of its tables).
    """

    name: str
    data: pa.Table
    partition_by: tuple[str, ...] = ()
    analyze: tuple[str, ...] = ()

    @property
    def partitioned(self) -> bool:
        return bool(self.partition_by)


@dataclass(frozen=True)
class PeerCase:
    """One query of a peer suite.

    ``id``: unique, ``<origin>/<slug>`` (``spark/simple-inner-join``).
    ``origin``: the test it comes from, as its suite names it.
    ``sql``: the query, over the suite's tables (and ``tables``).
    ``conf``: session settings the original test sets besides switching pruning on or off and
    adaptive execution (a broadcast threshold, exchange reuse...); applied in every mode.
    ``tables``: tables only this case uses (the suite's shared tables are always there).
    ``spark_prunes``: what the original test asserts about Spark's own pruning of this query
    (True / False), or None where it asserts nothing about it.
    ``note``: how the port differs from the original, if it does.
    """

    id: str
    origin: str
    sql: str
    conf: Mapping[str, str] = field(default_factory=dict)
    tables: tuple[PeerTable, ...] = ()
    spark_prunes: Optional[bool] = None
    note: str = ""
