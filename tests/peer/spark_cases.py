"""The queries of Spark's ``DynamicPartitionPruningSuite``, ported to SQL over ``spark_tables``.

One case per query the suite runs (each ``Given`` block separately), in file order, from
``sql/core/src/test/scala/org/apache/spark/sql/DynamicPartitionPruningSuite.scala``. A case's
``conf`` holds the ``withSQLConf`` settings of the original test other than the ones the runner
switches itself (pruning on/off, adaptive execution, runtime bloom filters); the original's
values of those are named in ``note``, and its ``reuseBroadcastOnly`` / exchange reuse are
applied from there. Tables a test creates for itself are ``PeerTable``s with the rows it
writes, named ``sp_<slug>_<its name>`` (the query rewritten accordingly); DataFrame-API
queries are translated to SQL.
"""
from __future__ import annotations

from dataclasses import replace

import pyarrow as pa

from tests.peer.model import PeerCase, PeerTable
from tests.peer.spark_tables import FACT_ROWS

EXCLUDE_EMPTY_RELATION = {
    "spark.sql.adaptive.optimizer.excludedRules":
        "org.apache.spark.sql.execution.adaptive.AQEPropagateEmptyRelation",
}
USE_STATS = {"spark.sql.optimizer.dynamicPartitionPruning.useStats": "true"}
NO_STATS = {"spark.sql.optimizer.dynamicPartitionPruning.useStats": "false"}
NO_BROADCAST = {"spark.sql.autoBroadcastJoinThreshold": "-1"}

# how the original sets Spark's reuse switches around its query: each note starts with one of
# these, and the case runs with those settings (``_SWITCHES``, applied below CASES)
RBO_FALSE = "Spark: reuseBroadcastOnly=false"
RBO_FALSE_NO_REUSE = "Spark: reuseBroadcastOnly=false, exchange reuse off"
RBO_TRUE = "Spark: reuseBroadcastOnly=true"
RBO_TRUE_NO_REUSE = "Spark: reuseBroadcastOnly=true, exchange reuse off"
_RBO = "spark.sql.optimizer.dynamicPartitionPruning.reuseBroadcastOnly"
_REUSE = "spark.sql.exchange.reuse"
_SWITCHES = {  # longest first: a note's prefix picks its settings
    RBO_FALSE_NO_REUSE: {_RBO: "false", _REUSE: "false"},
    RBO_TRUE_NO_REUSE: {_RBO: "true", _REUSE: "false"},
    RBO_FALSE: {_RBO: "false"},
    RBO_TRUE: {_RBO: "true"},
}


def _table(name: str, columns: dict[str, tuple[list, pa.DataType]],
           partition_by: tuple[str, ...] = ()) -> PeerTable:
    return PeerTable(name, pa.table({c: pa.array(v, t) for c, (v, t) in columns.items()}),
                     partition_by)


def _ids(n: int) -> list[int]:
    return list(range(n))


# ---------------------------------------------------------------- tables the tests create

# 'self-join on a partitioned table should not trigger DPP': created, never filled
SELFJOIN_FACT = PeerTable("sp_selfjoin_fact", pa.table({
    "col1": pa.array([], pa.string()),
    "col2": pa.array([], pa.int64()),
    "col3": pa.array([], pa.int64()),
    "col4": pa.array([], pa.decimal128(18, 8)),
    "partCol1": pa.array([], pa.string()),
}), ("partCol1",))

# 'filtering ratio policy fallback': fact_sk's rows with store_id < 5, columns as selected
_AUX = [(d, p, u, s) for d, s, p, u in FACT_ROWS if s < 5]
FALLBACK_FACT_AUX = _table("sp_fallback_fact_aux", {
    "date_id": ([r[0] for r in _AUX], pa.int32()),
    "product_id": ([r[1] for r in _AUX], pa.int32()),
    "units_sold": ([r[2] for r in _AUX], pa.int32()),
    "store_id": ([r[3] for r in _AUX], pa.int32()),
}, ("store_id",))

# 'broadcast a single key in a HashedRelation'
SINGLE_KEY_FACT = _table("sp_single_key_fact", {
    "id": (_ids(100), pa.int64()),
    "one": ([i + 1 for i in _ids(100)], pa.int32()),
    "two": ([i + 2 for i in _ids(100)], pa.int8()),
    "three": ([i + 3 for i in _ids(100)], pa.int16()),
    "mod": ([(i * 20) % 100 for i in _ids(100)], pa.int64()),
    "str": ([str(i + 1) for i in _ids(100)], pa.string()),
}, ("one", "two", "three", "str"))
SINGLE_KEY_DIM = _table("sp_single_key_dim", {
    "id": (_ids(10), pa.int64()),
    "one": ([i + 1 for i in _ids(10)], pa.int32()),
    "two": ([i + 2 for i in _ids(10)], pa.int8()),
    "three": ([i + 3 for i in _ids(10)], pa.int16()),
    "prod": ([i * 10 for i in _ids(10)], pa.int64()),
    "str": ([str(i + 1) for i in _ids(10)], pa.string()),
})

# 'broadcast multiple keys in a LongHashedRelation'
LONG_KEYS_FACT = _table("sp_long_keys_fact", {
    "id": (_ids(100), pa.int64()),
    "one": ([i + 1 for i in _ids(100)], pa.int32()),
    "two": ([i + 2 for i in _ids(100)], pa.int8()),
    "three": ([i + 3 for i in _ids(100)], pa.int16()),
    "mod": ([(i * 20) % 100 for i in _ids(100)], pa.int64()),
    "str": ([str(i % 10) for i in _ids(100)], pa.string()),
}, ("one", "two", "three"))
LONG_KEYS_DIM = _table("sp_long_keys_dim", {
    "id": (_ids(10), pa.int64()),
    "one": ([i + 1 for i in _ids(10)], pa.int32()),
    "two": ([i + 2 for i in _ids(10)], pa.int8()),
    "three": ([i + 3 for i in _ids(10)], pa.int16()),
    "prod": ([i * 10 for i in _ids(10)], pa.int64()),
})


def _string_keys_fact(name: str) -> PeerTable:
    return _table(name, {
        "id": (_ids(100), pa.int64()),
        "one": ([str(i + 1) for i in _ids(100)], pa.string()),
        "two": ([str(i + 2) for i in _ids(100)], pa.string()),
        "three": ([str(i + 3) for i in _ids(100)], pa.string()),
        "mod": ([(i * 20) % 100 for i in _ids(100)], pa.int64()),
        "str": ([str(i % 10) for i in _ids(100)], pa.string()),
    }, ("one", "two", "three"))


def _string_keys_dim(name: str, partition_by: tuple[str, ...] = ()) -> PeerTable:
    return _table(name, {
        "id": (_ids(10), pa.int64()),
        "one": ([str(i + 1) for i in _ids(10)], pa.string()),
        "two": ([str(i + 2) for i in _ids(10)], pa.string()),
        "three": ([str(i + 3) for i in _ids(10)], pa.string()),
        "prod": ([i * 10 for i in _ids(10)], pa.int64()),
    }, partition_by)


# 'broadcast multiple keys in an UnsafeHashedRelation'
UNSAFE_KEYS_FACT = _string_keys_fact("sp_unsafe_keys_fact")
UNSAFE_KEYS_DIM = _string_keys_dim("sp_unsafe_keys_dim")
# 'different broadcast subqueries with identical children'
DISTINCT_SUBQ_FACT = _string_keys_fact("sp_distinct_subq_fact")
DISTINCT_SUBQ_DIM = _string_keys_dim("sp_distinct_subq_dim", ("one", "two", "three", "prod"))

# 'avoid reordering broadcast join keys to match input hash partitioning'
REORDER_LARGE = _table("sp_reorder_large", {
    "id": (_ids(100), pa.int64()),
    "A": ([i + 1 for i in _ids(100)], pa.int64()),
    "B": ([i + 2 for i in _ids(100)], pa.int64()),
}, ("A",))
REORDER_DIM_TWO = _table("sp_reorder_dim_two", {
    "id": (_ids(10), pa.int64()),
    "C": ([i + 1 for i in _ids(10)], pa.int64()),
    "D": ([i + 2 for i in _ids(10)], pa.int64()),
})
REORDER_DIM_THREE = _table("sp_reorder_dim_three", {
    "id": (_ids(10), pa.int64()),
    "E": ([i + 1 for i in _ids(10)], pa.int64()),
    "F": ([i + 2 for i in _ids(10)], pa.int64()),
    "G": ([i + 3 for i in _ids(10)], pa.int64()),
})

# 'dynamic partition pruning ambiguity issue across nested joins'
NESTED_STORE = _table("sp_nested_store", {
    "ss_item_sk": ([(i + 30) % 50 for i in _ids(500)], pa.int64()),
    "ss_sold_date_sk": ([i % 20 for i in _ids(500)], pa.int64()),
    "price": ([i * 3 for i in _ids(500)], pa.int64()),
}, ("ss_sold_date_sk",))
NESTED_DATE = _table("sp_nested_date", {
    "d_date_sk": (_ids(20), pa.int64()),
    "d_year": (_ids(20), pa.int64()),
})
NESTED_ITEM = _table("sp_nested_item", {
    "i_item_sk": ([i + 30 for i in _ids(20)], pa.int64()),
})

# 'cleanup any DPP filter that isn't pushed down due to expression id clashes'
CLASH_FACT = _table("sp_clash_fact", {
    "A": (_ids(20), pa.int64()),
    "AA": (_ids(20), pa.int64()),
}, ("A",))
CLASH_DIM = _table("sp_clash_dim", {
    "B": (_ids(10), pa.int64()),
    "BB": (_ids(10), pa.int64()),
})

# 'join key with multiple references on the filtering plan'
MULTI_REF_FACT = _table("sp_multi_ref_fact", {
    "id": (_ids(100), pa.int64()),
    "a": ([str(i + 1) for i in _ids(100)], pa.string()),
    "b": ([str(i + 2) for i in _ids(100)], pa.string()),
}, ("a", "b"))
MULTI_REF_DIM = _table("sp_multi_ref_dim", {
    "id": (_ids(10), pa.int64()),
    "x": ([str(i + 1) for i in _ids(10)], pa.string()),
    "y": ([str(i + 2) for i in _ids(10)], pa.string()),
    "z": ([str(i + 2) for i in _ids(10)], pa.string()),
    "w": ([str(i + 2) for i in _ids(10)], pa.string()),
})

# 'Subquery reuse across the whole plan'
REUSE_DF1 = _table("sp_reuse_df1", {"id": (_ids(100), pa.int64()),
                                    "k": (_ids(100), pa.int64())}, ("k",))
REUSE_DF2 = _table("sp_reuse_df2", {"id": (_ids(10), pa.int64()),
                                    "k": (_ids(10), pa.int64())}, ("k",))

# 'SPARK-38674: Remove useless deduplicate in SubqueryBroadcastExec'
_DUP = [(1, "NL"), (1, "NL"), (3, "US"), (3, "US"), (3, "US")]
DUPLICATE_KEYS = _table("sp_dupkeys_duplicate_keys", {
    "store_id": ([r[0] for r in _DUP], pa.int32()),
    "country": ([r[1] for r in _DUP], pa.string()),
})

# 'static scan metrics'
METRICS_DIM = _table("sp_metrics_dim", {
    "did": (_ids(10), pa.int64()),
    "d1": ([i + 1 for i in _ids(10)], pa.int64()),
    "d2": ([0] * 10, pa.int32()),
})
METRICS_FACT = _table("sp_metrics_fact", {
    "f1": (_ids(100), pa.int64()),
    "fid": ([i % 10 for i in _ids(100)], pa.int64()),
}, ("fid",))


# ---------------------------------------------------------------- the cases

_CERTAIN = "DPP triggers only for certain types of query"
_FALLBACK = "filtering ratio policy fallback"
_RATIO = "filtering ratio policy with stats when the broadcast pruning is disabled"
_NONDET = "partition pruning in broadcast hash joins with non-deterministic probe part"
_ALIASES = "partition pruning in broadcast hash joins with aliases"
_BHJ = "partition pruning in broadcast hash joins"
_PLAN_BROADCAST = "Plan broadcast pruning only when the broadcast can be reused"
_SPARK_32659 = "SPARK-32659: Fix the data issue when pruning DPP on non-atomic type"
_SPARK_38148 = ("SPARK-38148: Do not add dynamic partition pruning if there exists static "
                "partition pruning")


def _given(test: str, given: str) -> str:
    return f"'{test}' / Given '{given}'"


_DE_QUERY = """
SELECT f.date_id, f.product_id, f.units_sold, f.store_id FROM fact_stats f
JOIN dim_stats s
ON f.store_id = s.store_id WHERE s.country = 'DE'
"""

_ALIAS_NESTED = """
SELECT f.date_id, f.pid, f.sid FROM
(SELECT date_id, pid_d AS pid, sid_d AS sid FROM
  (select date_id, product_id AS pid_d, store_id AS sid_d FROM fact_stats) fs
  JOIN dim_store ds ON fs.sid_d = ds.store_id) f
JOIN dim_stats s
ON f.sid  = s.store_id  WHERE s.country = 'DE'
"""

_FALLBACK_AUX_QUERY = """
SELECT f.date_id, f.product_id, f.units_sold, f.store_id
FROM sp_fallback_fact_aux f JOIN dim_store s
ON f.store_id = s.store_id WHERE s.country = 'US'
"""

_STRING_KEYS_QUERY = """
SELECT f.id, f.one, f.two, f.str FROM {fact} f
JOIN {dim} d
ON (f.one = d.one and f.two = d.two and f.three = d.three)
WHERE d.prod > 80
"""

_SINGLE_KEY_QUERY = """
SELECT f.id, f.one, f.two, f.str FROM sp_single_key_fact f
JOIN sp_single_key_dim d
ON (f.{key} = d.{key})
WHERE d.prod > 80
"""

# Spark's queries filter the probe by an unseeded RAND(): rows differ per run in any mode
_SEEDED = ("RAND() > 0.5 on the probe side in the original, seeded here (RAND(42)) so one "
           "scan layout gives one answer: pruning the probe would change it")
_NESTED_RAND = """
SELECT f.date_id, f.pid, f.sid FROM
(SELECT date_id, product_id AS pid, store_id AS sid
   FROM fact_stats WHERE RAND(42) > 0.5) AS f
JOIN dim_stats s
ON f.sid = s.store_id WHERE s.country = 'DE'
"""

CASES: list[PeerCase] = [
    PeerCase(
        id="spark/simple-inner-join",
        origin="simple inner join triggers DPP with mock-up tables",
        sql="""
SELECT f.date_id, f.store_id FROM fact_sk f
JOIN dim_store s ON f.store_id = s.store_id AND s.country = 'NL'
""",
        spark_prunes=True,
        note=RBO_FALSE_NO_REUSE,
    ),
    PeerCase(
        id="spark/self-join-window",
        origin="self-join on a partitioned table should not trigger DPP",
        sql="""
SELECT b.col1 FROM sp_selfjoin_fact a
JOIN
(SELECT * FROM (
    SELECT *, Lag(col4) OVER (PARTITION BY partCol1, col1 ORDER BY col2) prev_col4
    FROM (SELECT partCol1, col1, col2, col3, col4 FROM sp_selfjoin_fact) subquery) subquery2
  WHERE  col3 = 0 AND col4 = prev_col4
) b
ON a.partCol1 = b.partCol1
""",
        tables=(SELFJOIN_FACT,),
        spark_prunes=False,
        note=f"{RBO_FALSE_NO_REUSE}; table fact (CREATE TABLE, never filled) renamed "
             "sp_selfjoin_fact, varchar columns as strings",
    ),
    PeerCase(
        id="spark/not-in-no-existence-join",
        origin="DPP should not be rewritten as an existential join",
        sql="""
SELECT * FROM product p WHERE p.store_id NOT IN
 (SELECT f.store_id FROM fact_sk f JOIN dim_store d ON f.store_id = d.store_id
    WHERE d.state_province = 'NL'
 )
""",
        conf={"spark.sql.optimizer.dynamicPartitionPruning.fallbackFilterRatio": "1.5"},
        note=f"{RBO_FALSE_NO_REUSE}; the test asserts no ExistenceJoin in the plan, "
             "nothing about pruning",
    ),
    # 'DPP triggers only for certain types of query' (Spark: reuseBroadcastOnly=false)
    PeerCase(
        id="spark/certain-types-dpp-disabled",
        origin=_given(_CERTAIN, "dynamic partition pruning disabled"),
        sql="""
SELECT * FROM fact_sk f
LEFT SEMI JOIN dim_store s
ON f.store_id = s.store_id AND s.country = 'NL'
""",
        spark_prunes=None,
        note=f"{RBO_FALSE}, dynamicPartitionPruning.enabled=false: Spark asserts no pruning "
             "only because pruning is off (the runner switches it); with pruning on the same "
             "query is spark/certain-types-left-semi-left, asserted to prune",
    ),
    PeerCase(
        id="spark/certain-types-not-partition-column",
        origin=_given(_CERTAIN, "not a partition column"),
        sql="""
SELECT * FROM fact_np f
JOIN dim_store s
ON f.date_id = s.store_id WHERE s.country = 'NL'
""",
        spark_prunes=False,
        note=RBO_FALSE,
    ),
    PeerCase(
        id="spark/certain-types-no-dim-predicate",
        origin=_given(_CERTAIN, "no predicate on the dimension table"),
        sql="""
SELECT * FROM fact_sk f
JOIN dim_store s
ON f.store_id = s.store_id
""",
        spark_prunes=False,
        note=RBO_FALSE,
    ),
    PeerCase(
        id="spark/certain-types-left-semi-left",
        origin=_given(_CERTAIN, "left-semi join with partition column on the left side"),
        sql="""
SELECT * FROM fact_sk f
LEFT SEMI JOIN dim_store s
ON f.store_id = s.store_id AND s.country = 'NL'
""",
        spark_prunes=True,
        note=RBO_FALSE_NO_REUSE,
    ),
    PeerCase(
        id="spark/certain-types-left-semi-right",
        origin=_given(_CERTAIN, "left-semi join with partition column on the right side"),
        sql="""
SELECT * FROM dim_store s
LEFT SEMI JOIN fact_sk f
ON f.store_id = s.store_id AND s.country = 'NL'
""",
        spark_prunes=True,
        note=RBO_FALSE_NO_REUSE,
    ),
    PeerCase(
        id="spark/certain-types-left-outer-left",
        origin=_given(_CERTAIN, "left outer with partition column on the left side"),
        sql="""
SELECT * FROM fact_sk f
LEFT OUTER JOIN dim_store s
ON f.store_id = s.store_id WHERE f.units_sold = 10
""",
        spark_prunes=False,
        note=RBO_FALSE,
    ),
    PeerCase(
        id="spark/certain-types-right-outer-left",
        origin=_given(_CERTAIN, "right outer join with partition column on the left side"),
        sql="""
SELECT * FROM fact_sk f RIGHT OUTER JOIN dim_store s
ON f.store_id = s.store_id WHERE s.country = 'NL'
""",
        spark_prunes=True,
        note=RBO_FALSE_NO_REUSE,
    ),
    # 'filtering ratio policy fallback' (Spark: reuseBroadcastOnly=false, exchange reuse off,
    # AQEPropagateEmptyRelation excluded)
    PeerCase(
        id="spark/fallback-no-stats-selective",
        origin=_given(_FALLBACK, "no stats and selective predicate"),
        sql="""
SELECT f.date_id, f.product_id, f.units_sold, f.store_id FROM fact_sk f
JOIN dim_store s
ON f.store_id = s.store_id WHERE s.country LIKE '%C_%'
""",
        conf={**EXCLUDE_EMPTY_RELATION, **USE_STATS},
        spark_prunes=True,
        note=RBO_FALSE_NO_REUSE,
    ),
    PeerCase(
        id="spark/fallback-dim-too-large",
        origin=_given(_FALLBACK, "no stats and selective predicate with the size of dim too "
                                 "large"),
        sql=_FALLBACK_AUX_QUERY,
        conf={**EXCLUDE_EMPTY_RELATION, **USE_STATS,
              "spark.sql.optimizer.dynamicPartitionPruning.fallbackFilterRatio": "0.02"},
        tables=(FALLBACK_FACT_AUX,),
        spark_prunes=False,
        note=f"{RBO_FALSE_NO_REUSE}; table fact_aux (fact_sk's rows with store_id < 5, "
             "partitioned by store_id) renamed sp_fallback_fact_aux",
    ),
    PeerCase(
        id="spark/fallback-dim-too-large-cached",
        origin=_given(_FALLBACK, "no stats and selective predicate with the size of dim too "
                                 "large but cached"),
        sql="""
SELECT f.date_id, f.product_id, f.units_sold, f.store_id
FROM sp_fallback_fact_aux f JOIN dim_store s
ON f.store_id = s.store_id WHERE s.country = 'US'
""",
        conf={**EXCLUDE_EMPTY_RELATION, **USE_STATS},
        tables=(FALLBACK_FACT_AUX,),
        spark_prunes=True,
        note=f"{RBO_FALSE_NO_REUSE}; fact_aux renamed sp_fallback_fact_aux; the original "
             "joins cached_dim_store, a temp view of spark.table('dim_store').cache(): a "
             "single SQL query cannot cache, so this joins dim_store itself (Spark's pruning "
             "there relied on the cached relation's size statistics)",
    ),
    PeerCase(
        id="spark/fallback-dim-small",
        origin=_given(_FALLBACK, "no stats and selective predicate with the size of dim small"),
        sql="""
SELECT f.date_id, f.product_id, f.units_sold, f.store_id FROM fact_sk f
JOIN dim_store s
ON f.store_id = s.store_id WHERE s.country = 'NL'
""",
        conf={**EXCLUDE_EMPTY_RELATION, **USE_STATS},
        spark_prunes=True,
        note=RBO_FALSE_NO_REUSE,
    ),
    # 'filtering ratio policy with stats when the broadcast pruning is disabled'
    # (Spark: reuseBroadcastOnly=false, exchange reuse off)
    PeerCase(
        id="spark/ratio-stats-disabled",
        origin=_given(_RATIO, "disabling the use of stats in the DPP heuristic"),
        sql=_DE_QUERY,
        conf=NO_STATS,
        spark_prunes=True,
        note=RBO_FALSE_NO_REUSE,
    ),
    PeerCase(
        id="spark/ratio-stats-disables-pruning",
        origin=_given(_RATIO, "filtering ratio with stats disables pruning"),
        sql="""
SELECT f.date_id, f.product_id, f.units_sold, f.store_id FROM fact_stats f
JOIN dim_stats s
ON (f.store_id = s.store_id) WHERE s.store_id > 0 AND s.store_id IN
(SELECT p.store_id FROM product p)
""",
        conf=USE_STATS,
        spark_prunes=False,
        note=RBO_FALSE_NO_REUSE,
    ),
    PeerCase(
        id="spark/ratio-stats-enables-pruning",
        origin=_given(_RATIO, "filtering ratio with stats enables pruning"),
        sql=_DE_QUERY,
        conf=USE_STATS,
        spark_prunes=True,
        note=RBO_FALSE_NO_REUSE,
    ),
    PeerCase(
        id="spark/ratio-stats-complex-join-condition",
        origin=_given(_RATIO, "join condition more complex than fact.attr = dim.attr"),
        sql="""
SELECT f.date_id, f.product_id, f.units_sold, f.store_id
FROM fact_stats f JOIN dim_stats s
ON f.store_id + 1 = s.store_id WHERE s.country = 'DE'
""",
        conf=USE_STATS,
        spark_prunes=True,
        note=RBO_FALSE_NO_REUSE,
    ),
    # 'partition pruning in broadcast hash joins with non-deterministic probe part'
    PeerCase(
        id="spark/nondeterministic-probe",
        origin=_given(_NONDET, "alias with simple join condition, and non-deterministic query"),
        sql=_NESTED_RAND,
        spark_prunes=False,
        note=f"{RBO_TRUE}; {_SEEDED}",
    ),
    PeerCase(
        id="spark/nondeterministic-probe-nested",
        origin=_given(_NONDET, "alias over multiple sub-queries with simple join condition"),
        sql="""
SELECT f.date_id, f.pid, f.sid FROM
(SELECT date_id, pid_d AS pid, sid_d AS sid FROM
  (SELECT date_id, product_id AS pid_d, store_id AS sid_d FROM fact_stats
  WHERE RAND(42) > 0.5) fs
  JOIN dim_store ds ON fs.sid_d = ds.store_id) f
JOIN dim_stats s
ON f.sid  = s.store_id  WHERE s.country = 'DE'
""",
        spark_prunes=False,
        note=f"{RBO_TRUE}; {_SEEDED}",
    ),
    # 'partition pruning in broadcast hash joins with aliases' (Spark: reuseBroadcastOnly=true)
    PeerCase(
        id="spark/aliases-simple",
        origin=_given(_ALIASES, "alias with simple join condition, using attribute names only"),
        sql="""
SELECT f.date_id, f.pid, f.sid FROM
(select date_id, product_id as pid, store_id as sid from fact_stats) as f
JOIN dim_stats s
ON f.sid = s.store_id WHERE s.country = 'DE'
""",
        spark_prunes=True,
        note=RBO_TRUE,
    ),
    PeerCase(
        id="spark/aliases-expr-condition",
        origin=_given(_ALIASES, "alias with expr as join condition"),
        sql="""
SELECT f.date_id, f.pid, f.sid FROM
(SELECT date_id, product_id AS pid, store_id AS sid FROM fact_stats) AS f
JOIN dim_stats s
ON f.sid + 1 = s.store_id + 1 WHERE s.country = 'DE'
""",
        spark_prunes=True,
        note=RBO_TRUE,
    ),
    PeerCase(
        id="spark/aliases-nested",
        origin=_given(_ALIASES, "alias over multiple sub-queries with simple join condition"),
        sql=_ALIAS_NESTED,
        spark_prunes=True,
        note=RBO_TRUE,
    ),
    PeerCase(
        id="spark/aliases-nested-2",
        origin=_given(_ALIASES, "alias over multiple sub-queries with simple join condition"),
        sql="""
SELECT f.date_id, f.pid_d as pid, f.sid_d as sid FROM
 (SELECT date_id, pid_dd AS pid_d, sid_dd AS sid_d FROM
  (
   (select date_id, product_id AS pid_dd, store_id AS sid_dd FROM fact_stats) fss
     JOIN dim_store ds ON fss.sid_dd = ds.store_id
   ) fs
  JOIN dim_store ds ON fs.sid_dd = ds.store_id
 ) f
JOIN dim_stats s
ON f.sid_d  = s.store_id  WHERE s.country = 'DE'
""",
        spark_prunes=True,
        note=f"{RBO_TRUE}; the second Given of the test with this text",
    ),
    # 'partition pruning in broadcast hash joins'
    PeerCase(
        id="spark/bhj-no-broadcast-no-duplication",
        origin=_given(_BHJ, "disable broadcast pruning and disable subquery duplication"),
        sql=_DE_QUERY,
        spark_prunes=False,
        note=f"{RBO_TRUE_NO_REUSE}: Spark's no-pruning assertion rests on exchange reuse off "
             "(same query and conf as spark/bhj-reuse-broadcast, which prunes with reuse on)",
    ),
    PeerCase(
        id="spark/bhj-subquery-duplication",
        origin=_given(_BHJ, "disable reuse broadcast results and enable subquery duplication"),
        sql=_DE_QUERY,
        conf={**USE_STATS,
              "spark.sql.optimizer.dynamicPartitionPruning.fallbackFilterRatio": "0.5"},
        spark_prunes=True,
        note=RBO_FALSE_NO_REUSE,
    ),
    PeerCase(
        id="spark/bhj-reuse-broadcast",
        origin=_given(_BHJ, "enable reuse broadcast results and disable query duplication"),
        sql=_DE_QUERY,
        spark_prunes=True,
        note=RBO_TRUE,
    ),
    PeerCase(
        id="spark/bhj-no-bhj-no-duplication",
        origin=_given(_BHJ, "disable broadcast hash join and disable query duplication"),
        sql=_DE_QUERY,
        conf=NO_BROADCAST,
        spark_prunes=False,
        note=RBO_TRUE,
    ),
    PeerCase(
        id="spark/bhj-no-bhj-duplication",
        origin=_given(_BHJ, "disable broadcast hash join and enable query duplication"),
        sql=_DE_QUERY,
        conf={**NO_BROADCAST, **USE_STATS},
        spark_prunes=True,
        note=RBO_FALSE,
    ),
    # 'broadcast a single key in a HashedRelation' (Spark: reuseBroadcastOnly=true)
    PeerCase(
        id="spark/single-key-long",
        origin="broadcast a single key in a HashedRelation",
        sql=_SINGLE_KEY_QUERY.format(key="one"),
        tables=(SINGLE_KEY_FACT, SINGLE_KEY_DIM),
        note=f"{RBO_TRUE}; tables fact, dim renamed sp_single_key_fact, sp_single_key_dim "
             "(byte -> int8, short -> int16)",
    ),
    PeerCase(
        id="spark/single-key-byte",
        origin="broadcast a single key in a HashedRelation",
        sql=_SINGLE_KEY_QUERY.format(key="two"),
        tables=(SINGLE_KEY_FACT, SINGLE_KEY_DIM),
        note=f"{RBO_TRUE}; tables fact, dim renamed sp_single_key_fact, sp_single_key_dim "
             "(byte -> int8, short -> int16)",
    ),
    PeerCase(
        id="spark/single-key-string",
        origin="broadcast a single key in a HashedRelation",
        sql=_SINGLE_KEY_QUERY.format(key="str"),
        tables=(SINGLE_KEY_FACT, SINGLE_KEY_DIM),
        note=f"{RBO_TRUE}; tables fact, dim renamed sp_single_key_fact, sp_single_key_dim "
             "(byte -> int8, short -> int16)",
    ),
    PeerCase(
        id="spark/multiple-keys-long-hashed",
        origin="broadcast multiple keys in a LongHashedRelation",
        sql=_STRING_KEYS_QUERY.format(fact="sp_long_keys_fact", dim="sp_long_keys_dim"),
        tables=(LONG_KEYS_FACT, LONG_KEYS_DIM),
        note=f"{RBO_TRUE}; tables fact, dim renamed sp_long_keys_fact, sp_long_keys_dim "
             "(byte -> int8, short -> int16)",
    ),
    PeerCase(
        id="spark/multiple-keys-unsafe-hashed",
        origin="broadcast multiple keys in an UnsafeHashedRelation",
        sql=_STRING_KEYS_QUERY.format(fact="sp_unsafe_keys_fact", dim="sp_unsafe_keys_dim"),
        tables=(UNSAFE_KEYS_FACT, UNSAFE_KEYS_DIM),
        note=f"{RBO_TRUE}; tables fact, dim renamed sp_unsafe_keys_fact, sp_unsafe_keys_dim",
    ),
    PeerCase(
        id="spark/distinct-broadcast-subqueries",
        origin="different broadcast subqueries with identical children",
        sql=_STRING_KEYS_QUERY.format(fact="sp_distinct_subq_fact", dim="sp_distinct_subq_dim"),
        tables=(DISTINCT_SUBQ_FACT, DISTINCT_SUBQ_DIM),
        spark_prunes=True,
        note=f"{RBO_TRUE}; tables fact, dim renamed sp_distinct_subq_fact, "
             "sp_distinct_subq_dim; Spark asserts 3 distinct broadcast pruning subqueries",
    ),
    PeerCase(
        id="spark/avoid-reordering-broadcast-keys",
        origin="avoid reordering broadcast join keys to match input hash partitioning",
        sql="""
SELECT /*+ BROADCAST(prod) */ *
FROM sp_reorder_large fact
LEFT JOIN sp_reorder_dim_two dim ON fact.A = dim.C AND fact.B = dim.D
JOIN sp_reorder_dim_three prod ON fact.B = prod.F AND fact.A = prod.E
WHERE prod.G > 5
""",
        conf=NO_BROADCAST,
        tables=(REORDER_LARGE, REORDER_DIM_TWO, REORDER_DIM_THREE),
        spark_prunes=True,
        note=f"{RBO_FALSE}; DataFrame API in the original (fact.join(dim, A = C and B = D, "
             "LEFT).join(broadcast(prod), B = F and A = E).where(G > 5) over SELECT * of each "
             "table), translated to SQL with a BROADCAST hint; tables large, dimTwo, dimThree "
             "renamed sp_reorder_large, sp_reorder_dim_two, sp_reorder_dim_three",
    ),
    PeerCase(
        id="spark/nested-joins-ambiguity",
        origin="dynamic partition pruning ambiguity issue across nested joins",
        sql="""
WITH aux AS
(SELECT i_item_sk as frequent_item_sk FROM sp_nested_store, sp_nested_item, sp_nested_date
WHERE ss_sold_date_sk = d_date_sk
AND ss_item_sk = i_item_sk
AND d_year IN (2, 4, 6, 8, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19)
GROUP BY i_item_sk HAVING count(*) > 0)
SELECT sum(sales) a
    FROM (SELECT price sales FROM sp_nested_item, sp_nested_date, aux, sp_nested_store
    WHERE d_year IN (1, 3, 5, 7)
      AND ss_sold_date_sk = d_date_sk
      AND ss_item_sk = i_item_sk
      AND i_item_sk = frequent_item_sk) x
""",
        tables=(NESTED_STORE, NESTED_DATE, NESTED_ITEM),
        note=f"{RBO_TRUE}; tables store, date, item renamed sp_nested_store, "
             "sp_nested_date, sp_nested_item",
    ),
    PeerCase(
        id="spark/cleanup-expression-id-clashes",
        origin="cleanup any DPP filter that isn't pushed down due to expression id clashes",
        sql="""
SELECT A, AA FROM
 (SELECT A, AA from sp_clash_fact
 JOIN sp_clash_dim ON (A = B AND AA = BB) WHERE BB > 1)
 JOIN sp_clash_dim ON (AA = BB AND A = B)
WHERE BB < 5
""",
        tables=(CLASH_FACT, CLASH_DIM),
        note=f"{RBO_TRUE}; tables fact, dim renamed sp_clash_fact, sp_clash_dim; the test "
             "asserts no unpushed dynamic pruning filter, nothing about pruning",
    ),
    PeerCase(
        id="spark/cleanup-nondeterminism",
        origin="cleanup any DPP filter that isn't pushed down due to non-determinism",
        sql=_NESTED_RAND,
        note=f"{RBO_TRUE}; {_SEEDED}; the test "
             "asserts no unpushed dynamic pruning filter, nothing about pruning",
    ),
    PeerCase(
        id="spark/join-key-multiple-references",
        origin="join key with multiple references on the filtering plan",
        sql="""
SELECT f.id, f.a, f.b FROM sp_multi_ref_fact f
JOIN sp_multi_ref_dim d
ON f.b + f.a = d.y + d.z
WHERE d.x = (SELECT avg(p.w) FROM sp_multi_ref_dim p)
""",
        conf={**EXCLUDE_EMPTY_RELATION, "spark.sql.ansi.enabled": "false"},
        tables=(MULTI_REF_FACT, MULTI_REF_DIM),
        spark_prunes=True,
        note=f"{RBO_TRUE}; tables fact, dim renamed sp_multi_ref_fact, sp_multi_ref_dim",
    ),
    PeerCase(
        id="spark/uncorrelated-scalar-subquery",
        origin="Make sure dynamic pruning works on uncorrelated queries",
        sql="""
SELECT d.store_id,
       SUM(f.units_sold),
       (SELECT SUM(f.units_sold)
        FROM fact_stats f JOIN dim_stats d ON d.store_id = f.store_id
        WHERE d.country = 'US') AS total_prod
FROM fact_stats f JOIN dim_stats d ON d.store_id = f.store_id
WHERE d.country = 'US'
GROUP BY 1
""",
        spark_prunes=True,
        note=f"{RBO_TRUE}; Spark asserts one SubqueryBroadcastExec and one reuse of it "
             "(pruning in both the query and its scalar subquery)",
    ),
    PeerCase(
        id="spark/spark-32509-unused-filter-reuse",
        origin="SPARK-32509: Unused Dynamic Pruning filter shouldn't affect canonicalization "
               "and exchange reuse",
        sql="""
WITH view1 as (
   SELECT f.store_id FROM fact_stats f WHERE f.units_sold = 70
 )

 SELECT * FROM view1 v1 join view1 v2 WHERE v1.store_id = v2.store_id
""",
        conf=NO_BROADCAST,
        spark_prunes=False,
        note=RBO_TRUE,
    ),
    PeerCase(
        id="spark/broadcast-pruning-build-side",
        origin=_given(_PLAN_BROADCAST, "dynamic pruning filter on the build side"),
        sql="""
SELECT f.date_id, f.store_id, f.product_id, f.units_sold FROM fact_np f
JOIN code_stats s
ON f.store_id = s.store_id WHERE f.date_id <= 1030
""",
        spark_prunes=False,
        note=RBO_TRUE,
    ),
    PeerCase(
        id="spark/broadcast-pruning-probe-side",
        origin=_given(_PLAN_BROADCAST, "dynamic pruning filter on the probe side"),
        sql="""
SELECT /*+ BROADCAST(f)*/
f.date_id, f.store_id, f.product_id, f.units_sold FROM fact_np f
JOIN code_stats s
ON f.store_id = s.store_id WHERE f.date_id <= 1030
""",
        spark_prunes=True,
        note=RBO_TRUE,
    ),
    *[
        PeerCase(
            id=f"spark/spark-32659-{data_type}-{mode.lower().replace('_', '-')}",
            origin=_SPARK_32659,
            sql=f"""
SELECT f.date_id, f.product_id, f.units_sold, f.store_id FROM fact_stats f
JOIN dim_stats s
ON {data_type}(f.store_id) = {data_type}(s.store_id) WHERE s.country = 'DE'
""",
            conf={"spark.sql.codegen.factoryMode": mode},
            spark_prunes=True,
            note=f"codegen factory mode {mode}, {data_type} join keys; the original also "
                 "loops dynamicPartitionPruning.enabled over true/false (the runner switches "
                 "it: one case for both; Spark asserts pruning when enabled, none when not)",
        )
        for mode in ("NO_CODEGEN", "CODEGEN_ONLY")
        for data_type in ("struct", "array")
    ],
    PeerCase(
        id="spark/spark-32817-empty-broadcast",
        origin="SPARK-32817: DPP throws error when the broadcast side is empty",
        sql="""
SELECT * FROM fact_sk f
JOIN dim_store s
ON f.store_id = s.store_id WHERE s.country = 'XYZ'
""",
        conf=EXCLUDE_EMPTY_RELATION,
        spark_prunes=True,
        note=RBO_TRUE,
    ),
    PeerCase(
        id="spark/subquery-reuse-whole-plan",
        origin="Subquery reuse across the whole plan",
        sql="""
SELECT df1.id, df2.k
FROM sp_reuse_df1 df1 JOIN sp_reuse_df2 df2 ON df1.k = df2.k
WHERE df2.id < (SELECT max(id) FROM sp_reuse_df2 WHERE id <= 2)
""",
        tables=(REUSE_DF1, REUSE_DF2),
        spark_prunes=True,
        note=f"{RBO_FALSE_NO_REUSE}, adaptive execution off (DisableAdaptiveExecution); "
             "tables df1, df2 renamed sp_reuse_df1, sp_reuse_df2 (aliased df1, df2)",
    ),
    PeerCase(
        id="spark/spark-34436-like-any",
        origin="SPARK-34436: DPP support LIKE ANY/ALL expression",
        sql="""
SELECT date_id, product_id FROM fact_sk f
JOIN dim_store s
ON f.store_id = s.store_id WHERE s.country LIKE ANY ('%D%E%', '%A%B%')
""",
        spark_prunes=True,
    ),
    PeerCase(
        id="spark/spark-34595-rlike",
        origin="SPARK-34595: DPP support RLIKE expression",
        sql="""
SELECT date_id, product_id FROM fact_sk f
JOIN dim_store s
ON f.store_id = s.store_id WHERE s.country RLIKE '[DE|US]'
""",
        spark_prunes=True,
    ),
    PeerCase(
        id="spark/spark-34637-broadcast-stage-first",
        origin="SPARK-34637: DPP side broadcast query stage is created firstly",
        sql="""
WITH v as (
   SELECT f.store_id FROM fact_stats f WHERE f.units_sold = 70 group by f.store_id
 )

 SELECT * FROM v v1 join v v2 WHERE v1.store_id = v2.store_id
""",
        spark_prunes=True,
        note=RBO_TRUE,
    ),
    PeerCase(
        id="spark/spark-35568-aqe-window",
        origin="SPARK-35568: Fix UnsupportedOperationException when enabling both AQE and DPP",
        sql="""
SELECT s.store_id, f.product_id
FROM (SELECT DISTINCT * FROM fact_sk) f
  JOIN (SELECT
          *,
          ROW_NUMBER() OVER (PARTITION BY store_id ORDER BY state_province DESC) AS rn
        FROM dim_store) s
   ON f.store_id = s.store_id
WHERE s.country = 'DE' AND s.rn = 1
""",
    ),
    PeerCase(
        id="spark/spark-36444-subquery-expr",
        origin="SPARK-36444: Remove OptimizeSubqueries from batch of PartitionPruning",
        sql="""
SELECT date_id, product_id FROM fact_sk f
JOIN (select store_id + 3 as new_store_id from dim_store where country = 'US') s
ON f.store_id = s.new_store_id
""",
        spark_prunes=True,
    ),
    *[
        PeerCase(
            id=f"spark/spark-38148-{slug}-{n}",
            origin=_SPARK_38148,
            sql=sql.format(condition=condition),
            spark_prunes=has_dpp,
            note=f"condition {condition}; {where}",
        )
        for condition, slug, has_dpp in (
            ("f.store_id = 1", "eq", False),
            ("1 = f.store_id", "eq-flipped", False),
            ("f.store_id <=> 1", "null-safe-eq", False),
            ("1 <=> f.store_id", "null-safe-eq-flipped", False),
            ("f.store_id > 1", "gt", True),
            ("5 > f.store_id", "gt-flipped", True),
        )
        for n, (sql, where) in enumerate((
            ("""
SELECT /*+ broadcast(s) */ * FROM fact_sk f
JOIN dim_store s ON f.store_id = s.store_id AND {condition}
""", "partitioned table on the left, condition in ON (df1)"),
            ("""
SELECT /*+ broadcast(s) */ * FROM fact_sk f
JOIN dim_store s ON f.store_id = s.store_id
WHERE {condition}
""", "partitioned table on the left, condition in WHERE (df2)"),
            ("""
SELECT /*+ broadcast(s) */ * FROM dim_store s
JOIN fact_sk f ON f.store_id = s.store_id AND {condition}
""", "partitioned table on the right, condition in ON (df3)"),
            ("""
SELECT /*+ broadcast(s) */ * FROM dim_store s
JOIN fact_sk f ON f.store_id = s.store_id
WHERE {condition}
""", "partitioned table on the right, condition in WHERE (df4)"),
        ), start=1)
    ],
    PeerCase(
        id="spark/spark-38570-literal-union",
        origin="SPARK-38570: Fix incorrect DynamicPartitionPruning caused by Literal",
        sql="""
SELECT f.store_id,
       f.date_id,
       s.state_province
FROM (SELECT 4 AS store_id,
               date_id,
               product_id
      FROM   fact_sk
      WHERE  date_id >= 1300
      UNION ALL
      SELECT 5 AS store_id,
               date_id,
               product_id
      FROM   fact_stats
      WHERE  date_id <= 1000) f
JOIN dim_store s
ON f.store_id = s.store_id
WHERE s.country = 'US'
""",
        spark_prunes=False,
    ),
    PeerCase(
        id="spark/spark-38674-duplicate-keys",
        origin="SPARK-38674: Remove useless deduplicate in SubqueryBroadcastExec",
        sql="""
SELECT date_id, product_id FROM fact_sk f
JOIN sp_dupkeys_duplicate_keys s
ON f.store_id = s.store_id WHERE s.country = 'US' AND date_id > 1050
""",
        tables=(DUPLICATE_KEYS,),
        spark_prunes=True,
        note="table duplicate_keys renamed sp_dupkeys_duplicate_keys",
    ),
    PeerCase(
        id="spark/spark-39338-union-empty-references",
        origin="SPARK-39338: Remove dynamic pruning subquery if pruningKey's references is "
               "empty",
        sql="""
SELECT f.store_id,
       f.date_id,
       s.state_province
FROM (SELECT   store_id,
               date_id,
               product_id
      FROM   fact_stats
      WHERE  date_id <= 1000
      UNION ALL
      SELECT 4 AS store_id,
               date_id,
               product_id
      FROM   fact_sk
      WHERE  date_id >= 1300) f
JOIN dim_store s
ON f.store_id = s.store_id
WHERE s.country IN ('US', 'NL')
""",
        spark_prunes=True,
        note="Spark asserts exactly one dynamic pruning expression (on fact_stats)",
    ),
    PeerCase(
        id="spark/spark-39217-union-pruning-side",
        origin="SPARK-39217: Makes DPP support the pruning side has Union",
        sql="""
SELECT f.store_id,
       f.date_id,
       s.state_province
FROM (SELECT 4 AS store_id,
               date_id,
               product_id
      FROM   fact_sk
      WHERE  date_id >= 1300
      UNION ALL
      SELECT   store_id,
               date_id,
               product_id
      FROM   fact_stats
      WHERE  date_id <= 1000) f
JOIN dim_store s
ON f.store_id = s.store_id
WHERE s.country IN ('US', 'NL')
""",
        spark_prunes=True,
        note="Spark asserts exactly one dynamic pruning expression (on fact_stats)",
    ),
    # DynamicPartitionPruningV1Suite
    PeerCase(
        id="spark/static-scan-metrics-full",
        origin="static scan metrics",
        sql="SELECT sum(f1) FROM sp_metrics_fact",
        tables=(METRICS_DIM, METRICS_FACT),
        spark_prunes=False,
        note=f"{RBO_FALSE_NO_REUSE}, adaptive execution off; tables fact, dim renamed "
             "sp_metrics_fact, sp_metrics_dim; Spark asserts no static metrics (no dynamic "
             "pruning) and all 10 partitions read",
    ),
    PeerCase(
        id="spark/static-scan-metrics-static-filter",
        origin="static scan metrics",
        sql="SELECT sum(f1) FROM sp_metrics_fact WHERE fid = 5",
        tables=(METRICS_DIM, METRICS_FACT),
        spark_prunes=False,
        note=f"{RBO_FALSE_NO_REUSE}, adaptive execution off; table fact renamed "
             "sp_metrics_fact; Spark asserts no static metrics (no dynamic pruning) and 1 "
             "partition read (static pruning)",
    ),
    PeerCase(
        id="spark/static-scan-metrics-dpp",
        origin="static scan metrics",
        sql="SELECT sum(f1) FROM sp_metrics_fact, sp_metrics_dim WHERE fid = did AND d1 = 6",
        tables=(METRICS_DIM, METRICS_FACT),
        spark_prunes=True,
        note=f"{RBO_FALSE_NO_REUSE}, adaptive execution off; tables fact, dim renamed "
             "sp_metrics_fact, sp_metrics_dim; Spark asserts static metrics of the whole "
             "table and 1 partition read (dynamic pruning)",
    ),
    # DynamicPartitionPruningV1SuiteAEOn
    PeerCase(
        id="spark/spark-39447-empty-broadcast-aqe",
        origin="SPARK-39447: Avoid AssertionError in AdaptiveSparkPlanExec.doExecuteBroadcast",
        sql="""
WITH empty_result AS (
  SELECT * FROM fact_stats WHERE product_id < 0
)
SELECT *
FROM   (SELECT /*+ SHUFFLE_MERGE(fact_sk) */ empty_result.store_id
        FROM   fact_sk
               JOIN empty_result
                 ON fact_sk.product_id = empty_result.product_id) t2
       JOIN empty_result
         ON t2.store_id = empty_result.store_id
""",
        spark_prunes=False,
        note="only in the adaptive-execution-on suite (DynamicPartitionPruningV1SuiteAEOn)",
    ),
    PeerCase(
        id="spark/spark-37995-aqe-subquery-replan",
        origin="SPARK-37995: PlanAdaptiveDynamicPruningFilters should use prepareExecutedPlan "
               "rather than createSparkPlan to re-plan subquery",
        sql="""
SELECT f.date_id, f.store_id FROM fact_sk f
JOIN dim_store s ON f.store_id = s.store_id AND s.country = 'NL'
WHERE s.state_province != (SELECT max(state_province) FROM dim_stats)
""",
        spark_prunes=True,
        note=f"{RBO_FALSE_NO_REUSE}; only in the adaptive-execution-on suite "
             "(DynamicPartitionPruningV1SuiteAEOn)",
    ),
]


def _original_switches(case: PeerCase) -> PeerCase:
    """The case with the reuse switches its test sets (named by its note's prefix)."""
    for prefix, conf in _SWITCHES.items():
        if case.note.startswith(prefix):
            return replace(case, conf={**conf, **case.conf})
    return case


CASES = [_original_switches(c) for c in CASES]

# Not ported:
# - 'no partition pruning when the build side is a stream'
#   (DynamicPartitionPruningDataSourceSuiteBase): its build side is a MemoryStream (streaming).
# - BroadcastVarPushdownV2Suite's 'DPP triggers only for certain types of query for broadcast
#   var pushdown', 'different broadcast subqueries with identical children for broadcast var
#   pushdown', 'Make sure dynamic pruning works on uncorrelated queries for broadcast var
#   pushdown' and 'SPARK-34637: DPP side broadcast query stage is created firstly for broadcast
#   var pushdown': ignore(...)d, and only in subclasses over the V2 in-memory catalog (testcat);
#   their queries are ported above under the base tests' names.
# - DynamicPartitionPruningV2Suite, V2FilterSuite: the base tests over the V2 in-memory catalog
#   (testcat), no tests of their own.
