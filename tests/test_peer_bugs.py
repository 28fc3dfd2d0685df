"""Wrong-result bugs of the kind other engines had: a partition folder's text compared with a
build-side or literal value the way Spark would not compare them (time zones, DST, -0.0, NaN,
CHAR padding, implicit casts, DATE vs TIMESTAMP, TIMESTAMP_NTZ, column-name case), plus the
empty build side (Trino #9917), a literal standing for the partition column in a UNION branch
(SPARK-38570), non-atomic join keys (SPARK-32659) and the filter cache.

Every check is differential (``tests/differential.py``): dpp's rows must equal Spark's over the
same folders with every pruning off (or both must raise), for path and catalog tables, through
``dpp.collect`` / ``dpp.sql`` and ``dpp.join``, with the filter cache on (two runs: the second
may reuse the filter) and off, in the session time zones UTC, America/Los_Angeles and
Asia/Kolkata where time matters. Where pruning is sound and possible it is asserted too.
A test runs all its checks and lists every one that failed.
"""
from __future__ import annotations

import datetime as dt
import math
import shutil
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import make_partitioned_table, write_parquet
from tests.differential import TIME_ZONES, TZ, Checks, Fact, spark_conf, utc

# every test runs, in one of its variants (table kind, time zone, cache) and about a third of
# the others besides (tests/conftest.py); DPP_ALL_VARIANTS=1 runs them all
SAMPLE_VARIANTS = 3

LA, IST = "America/Los_Angeles", "Asia/Kolkata"
TS_UTC = pa.timestamp("us", tz="UTC")

# (kind, time zone, filter cache): each zone with both kinds, each kind with the cache on and off
KIND_TZ_CACHE = [("path", LA, False), ("catalog", LA, True), ("path", "UTC", True),
                 ("catalog", "UTC", False), ("path", IST, True), ("catalog", IST, False)]
# one zone each: both kinds, both cache settings
TZ_ROTATION = [("path", LA, False), ("catalog", "UTC", True), ("catalog", IST, False)]
KIND_CACHE = [("path", True), ("catalog", False)]


class Catalog:
    """The module's tables, dimensions and views (all named peer_*), dropped at its end."""

    def __init__(self, spark: Any, root: Path) -> None:
        self.spark, self.root = spark, root
        self.tables: list[str] = []
        self.views: list[str] = []

    def table(self, name: str, ddl: str, *statements: str, tz: str = "UTC") -> Fact:
        """A catalog table: CREATE TABLE name ddl, then the statements, in session zone tz."""
        self.spark.sql(f"DROP TABLE IF EXISTS {name}")
        self.tables.append(name)
        with spark_conf(self.spark, {TZ: tz}):
            self.spark.sql(f"CREATE TABLE {name} {ddl}")
            for s in statements:
                self.spark.sql(s)
        loc = self.spark.sql(f"DESCRIBE TABLE EXTENDED {name}") \
            .where("col_name = 'Location'").collect()[0].data_type
        return Fact("catalog", name, loc.replace("file:", "", 1))

    def path_fact(self, name: str, path: Path) -> Fact:
        self.views += [name, f"{name}_ref"]  # the plain views dpp and the reference create
        return Fact("path", name, str(path))

    def view(self, name: str, path: Path) -> None:
        self.spark.read.parquet(str(path)).createOrReplaceTempView(name)
        self.views.append(name)

    def dim(self, name: str, table: pa.Table) -> None:
        """A dimension: one Parquet file, read through a temporary view of that name."""
        path = self.root / "dims" / name / "part-0.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path)
        self.view(name, path.parent)

    def close(self) -> None:
        for t in self.tables:
            self.spark.sql(f"DROP TABLE IF EXISTS {t}")
        for v in self.views:
            self.spark.catalog.dropTempView(v)


@pytest.fixture(scope="module")
def cat(spark, tmp_path_factory) -> Iterator[Catalog]:
    c = Catalog(spark, tmp_path_factory.mktemp("peer"))
    yield c
    c.close()


def _source(cat: Catalog, name: str, rows: list[tuple[int, Any]], typ: pa.DataType) -> Path:
    """A Parquet file of (v, t) rows for Spark to write partitioned."""
    path = cat.root / name
    write_parquet(path / "part-0.parquet", {"v": pa.array([v for v, _ in rows], pa.int32()),
                                            "t": pa.array([t for _, t in rows], typ)})
    return path


# ====================================================================== 1. timestamp partitions

# instants: T1 is 03-09 17:00 in LA, T2 03-10 09:00 PDT (after the DST switch), T3 midnight
# 03-11 in Kolkata, T4 midnight 03-12 in LA
T1, T2, T3, T4 = utc(2024, 3, 10, 1), utc(2024, 3, 10, 16), utc(2024, 3, 10, 18, 30), \
    utc(2024, 3, 12, 7)
TS_ROWS = [(1, T1), (2, T1), (3, T1), (4, T2), (5, T2), (6, T2), (7, T3), (8, T3), (9, T4),
           (10, T4)]


@pytest.fixture(scope="module")
def ts_facts(spark, cat) -> dict[tuple[str, str], Fact]:
    """Per session time zone, the same rows written by Spark in that zone: a path table
    (``df.write.partitionBy("t")``: folders ``t=<wall clock there>``) and a catalog table."""
    cat.dim("peer_dim_ts", pa.table({
        "id": pa.array([1, 2, 3, 4, 5], pa.int32()),
        "t": pa.array([T1, T2, utc(2024, 3, 13), T3, T4], TS_UTC),
        "name": ["a", "a", "a", "b", "b"]}))
    cat.view("peer_ts_src", _source(cat, "ts_src", TS_ROWS, TS_UTC))
    out = {}
    for tz in TIME_ZONES:
        s = {"UTC": "utc", LA: "la", IST: "ist"}[tz]
        with spark_conf(spark, {TZ: tz}):
            spark.table("peer_ts_src").write.partitionBy("t").parquet(str(cat.root / f"ts_{s}"))
        out[("path", tz)] = cat.path_fact(f"peer_ts_{s}_p", cat.root / f"ts_{s}")
        out[("catalog", tz)] = cat.table(
            f"peer_ts_{s}", "(v INT, t TIMESTAMP) USING parquet PARTITIONED BY (t)",
            f"INSERT INTO peer_ts_{s} SELECT v, t FROM peer_ts_src", tz=tz)
    return out


@pytest.mark.timeout(180)
@pytest.mark.parametrize("kind,tz,cache", KIND_TZ_CACHE)
def test_timestamp_partitions_sql(spark, ts_facts, kind, tz, cache):
    """The known bug: a folder's text is a wall-clock time in the session time zone, keys are
    instants. Two of the four partitions match (6 rows): exactly those two must be kept."""
    fact, conf = ts_facts[(kind, tz)], {TZ: tz}
    with Checks(spark) as chk:
        c = chk.sql([fact], "SELECT f.v, f.t, d.id FROM {f0} f JOIN peer_dim_ts d "
                    "ON f.t = d.t WHERE d.name = 'a'", cache=cache, settings=conf)
        assert c.expected_count == 6
        chk.pruned(c, fact.name, kept=2)
        c = chk.sql([fact], "SELECT f.v FROM {f0} f WHERE f.t IN "
                    "(SELECT t FROM peer_dim_ts WHERE name = 'b')", cache=cache, settings=conf)
        assert c.expected_count == 4
        chk.pruned(c, fact.name, kept=2)
        # literals are read in the session time zone too (static pruning)
        c = chk.sql([fact], "SELECT f.v, f.t FROM {f0} f WHERE f.t = '2024-03-09 17:00:00' "
                    "OR f.t >= TIMESTAMP '2024-03-11 00:00:00'", cache=cache, settings=conf)
        chk.pruned(c, fact.name, kept=len({t for _, t in c.expected.rows}))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind,tz,cache", TZ_ROTATION + [("path", IST, True)])
def test_timestamp_partitions_join(spark, ts_facts, kind, tz, cache):
    fact = ts_facts[(kind, tz)]
    with Checks(spark) as chk:
        c = chk.join(fact, lambda: spark.table("peer_dim_ts").where("name = 'a'"),
                     [("t", "t")], cache=cache, settings={TZ: tz})
        chk.pruned(c, fact.name, kept=2)


# ====================================================================== 2. DST gap and overlap

# In LA: B is 01:30 PST on 03-10, just before the gap; G (10:30Z) is written "03:30", and the
# gap text "02:30" (no such LA time) is read by Spark as G too; O1 / O2 are the two instants
# of the repeated 01:30 on 11-03: Spark writes both to ONE folder, which it reads back as O1.
B, G, O1, O2 = utc(2024, 3, 10, 9, 30), utc(2024, 3, 10, 10, 30), utc(2024, 11, 3, 8, 30), \
    utc(2024, 11, 3, 9, 30)
GAP_FOLDER = "t=2024-03-10 02%3A30%3A00"


@pytest.fixture(scope="module")
def dst_facts(spark, cat, ts_facts) -> dict[str, Fact]:
    cat.dim("peer_dim_dst", pa.table({
        "t": pa.array([B, G, O1, O2], TS_UTC), "grp": pa.array([1, 1, 2, 3], pa.int32())}))
    # O2 in a second write: one write of O1 and O2 fails in Spark itself (two partition values,
    # one folder name: FileAlreadyExistsException)
    cat.view("peer_dst_src1", _source(cat, "dst_src1", [(1, B), (2, B), (3, G), (4, G), (5, O1)],
                                      TS_UTC))
    cat.view("peer_dst_src2", _source(cat, "dst_src2", [(6, O2)], TS_UTC))
    path = cat.root / "dst"
    with spark_conf(spark, {TZ: LA}):
        for src in ("peer_dst_src1", "peer_dst_src2"):
            spark.table(src).write.mode("append").partitionBy("t").parquet(str(path))
    gap = cat.root / "dst_gap"
    write_parquet(gap / "part-0.parquet", {"v": pa.array([100, 101], pa.int32())})
    shutil.copytree(gap, path / GAP_FOLDER)
    fact = cat.table("peer_dst", "(v INT, t TIMESTAMP) USING parquet PARTITIONED BY (t)",
                     "INSERT INTO peer_dst SELECT v, t FROM peer_dst_src1",
                     "INSERT INTO peer_dst SELECT v, t FROM peer_dst_src2", tz=LA)
    # added in UTC: in LA Spark would store the spec as '03:30' (which exists already)
    spark.sql(f"ALTER TABLE peer_dst ADD PARTITION (t = '2024-03-10 02:30:00') LOCATION '{gap}'")
    return {"path": cat.path_fact("peer_dst_p", path), "catalog": fact}


@pytest.mark.timeout(180)
@pytest.mark.parametrize("kind,tz,cache", [("path", LA, False), ("catalog", LA, True),
                                           ("catalog", IST, False)])
def test_dst_gap_and_overlap(spark, dst_facts, kind, tz, cache):
    fact, conf = dst_facts[kind], {TZ: tz}
    with Checks(spark) as chk:
        chk.sql([fact], "SELECT f.v, f.t, d.grp FROM {f0} f JOIN peer_dim_dst d "
                "ON f.t = d.t WHERE d.grp IN (1, 2)", cache=cache, settings=conf)
        chk.sql([fact], "SELECT f.v FROM {f0} f WHERE f.t = TIMESTAMP '2024-03-10 02:30:00' "
                "OR f.t = TIMESTAMP '2024-11-03 01:30:00'", cache=cache, settings=conf)
        chk.join(fact, lambda: spark.table("peer_dim_dst").where("grp IN (2, 3)"),
                 [("t", "t")], cache=not cache, settings=conf)


# ====================================================================== 3 and 8. -0.0 and NaN

@pytest.fixture(scope="module")
def dbl_facts(spark, cat) -> dict[str, Fact]:
    cat.dim("peer_dim_dbl", pa.table({
        "k": pa.array([0.0, -0.0, math.nan, 0.0, 7.0, -0.0, 7.0, math.nan, 0.5]),
        "name": ["pos", "neg", "nan", "pos2", "pos2", "neg2", "neg2", "nan2", "nan2"]}))
    texts = {"-0.0": [1, 2], "0.0": [3], "0.5": [4], "NaN": [5, 6], "Infinity": [7]}
    path = make_partitioned_table(cat.root / "dbl", {
        (("x", t),): {"v": pa.array(v, pa.int32())} for t, v in texts.items()})
    fact = cat.table("peer_dbl", "(v INT, x DOUBLE) USING parquet PARTITIONED BY (x)",
                     "INSERT INTO peer_dbl VALUES (1, CAST('-0.0' AS DOUBLE)), "
                     "(2, CAST('-0.0' AS DOUBLE)), (3, 0.0D), (4, 0.5D), "
                     "(5, CAST('NaN' AS DOUBLE)), (6, CAST('NaN' AS DOUBLE)), "
                     "(7, CAST('Infinity' AS DOUBLE))")
    return {"path": cat.path_fact("peer_dbl_p", path), "catalog": fact}


# a range domain instead of a value set: blooms off, at most one distinct value
RANGE_MODE = {"spark.dpp.bloomFilter.enabled": "false", "spark.dpp.maxDistinctValues": "1"}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind,cache", KIND_CACHE)
def test_negative_zero_partition(spark, dbl_facts, kind, cache):
    """Trino #19828: -0.0 = 0.0 in joins: folder x=-0.0 with key 0.0, x=0.0 with key -0.0."""
    fact = dbl_facts[kind]
    with Checks(spark) as chk:
        for name in ("pos", "neg"):
            c = chk.sql([fact], "SELECT f.v, f.x FROM {f0} f JOIN peer_dim_dbl d "
                        f"ON f.x = d.k WHERE d.name = '{name}'", cache=cache)
            chk.pruned(c, fact.name, kept=2)
        chk.sql([fact], "SELECT f.v, f.x FROM {f0} f WHERE f.x = -0.0D", cache=cache)
        chk.join(fact, lambda: spark.table("peer_dim_dbl").where("name = 'neg2'"),
                 [("x", "k")], cache=not cache, settings=RANGE_MODE)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind,cache", KIND_CACHE)
def test_nan_partition(spark, dbl_facts, kind, cache):
    """Spark's joins match NaN with NaN: folder x=NaN must survive a NaN key (values, range)."""
    fact = dbl_facts[kind]
    with Checks(spark) as chk:
        c = chk.sql([fact], "SELECT f.v, f.x, d.name FROM {f0} f JOIN peer_dim_dbl d "
                    "ON f.x = d.k WHERE d.name = 'nan'", cache=cache)
        assert c.expected_count == 2
        chk.pruned(c, fact.name, kept=1)
        chk.sql([fact], "SELECT f.v, f.x, d.name FROM {f0} f JOIN peer_dim_dbl d "
                "ON f.x = d.k WHERE d.name = 'nan2'", cache=not cache, settings=RANGE_MODE)
        chk.join(fact, lambda: spark.table("peer_dim_dbl").where("name LIKE 'nan%'"),
                 [("x", "k")], cache=cache)


# ====================================================================== int fact (4, 5, 6)

@pytest.fixture(scope="module")
def int_facts(spark, cat) -> dict[str, Fact]:
    cat.dim("peer_dim_int", pa.table({
        "k": pa.array([1, 2, 5, 7], pa.int32()), "name": ["one", "two", "five", "seven"],
        "sk": ["1", "2", "5", "7"]}))
    path = make_partitioned_table(cat.root / "ints", {
        (("p", str(p)),): {"v": pa.array([p * 10, p * 10 + 1], pa.int32()),
                           "s": [f"s{p}", f"s{p}"]} for p in range(1, 7)})
    values = ", ".join(f"({p * 10 + i}, 's{p}', {p})" for p in range(1, 7) for i in (0, 1))
    fact = cat.table("peer_int", "(v INT, s STRING, p INT) USING parquet PARTITIONED BY (p)",
                     f"INSERT INTO peer_int VALUES {values}")
    return {"path": cat.path_fact("peer_int_p", path), "catalog": fact}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind,cache", KIND_CACHE)
def test_empty_build_side(spark, int_facts, kind, cache):
    """Trino #9917: a build side without rows (also one Spark plans as an empty relation) must
    complete its filter — not wait out the timeout — and prune every partition."""
    fact = int_facts[kind]
    with Checks(spark) as chk:
        for where in ("d.name = 'none'", "d.k = 1 AND d.k = 2"):
            c = chk.sql([fact], "SELECT f.v, d.name FROM {f0} f JOIN peer_dim_int d "
                        f"ON f.p = d.k WHERE {where}", cache=cache)
            assert c.expected_count == 0
            chk.pruned(c, fact.name, kept=0)
        c = chk.join(fact, lambda: spark.table("peer_dim_int").where("name = 'none'"),
                     [("p", "k")], cache=not cache)
        chk.pruned(c, fact.name, kept=0)
        c = chk.join(fact, lambda: spark.createDataFrame([], "k INT, name STRING, sk STRING"),
                     [("p", "k")], cache=cache)
        chk.pruned(c, fact.name, kept=0)


UNION_QUERIES = [
    # the second branch's p is the literal 5 (read from partition p=1)
    ("SELECT u.p, u.v, d.name FROM (SELECT p, v FROM {f0} UNION ALL "
     "SELECT 5 AS p, v FROM {f0} WHERE p = 1) u JOIN peer_dim_int d ON u.p = d.k "
     "WHERE d.name IN ('five', 'two')"),
    ("WITH u AS (SELECT 5 AS p, v FROM {f0} WHERE p = 1 UNION ALL SELECT p, v FROM {f0}) "
     "SELECT u.v, d.name FROM u JOIN peer_dim_int d ON u.p = d.k WHERE d.name = 'five'"),
    ("SELECT v FROM (SELECT p, v FROM {f0} UNION ALL SELECT 5 AS p, v FROM {f0}) u "
     "WHERE u.p IN (SELECT k FROM peer_dim_int WHERE name = 'five')"),
]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind,cache", KIND_CACHE)
def test_union_literal_partition_column(spark, int_facts, kind, cache):
    """SPARK-38570: a literal stands for the partition column in one UNION branch."""
    from pyspark.sql import functions as F

    fact = int_facts[kind]

    def dim() -> Any:  # the DataFrame analogue: the build key is a literal in one branch
        d = spark.table("peer_dim_int")
        return d.where("name = 'two'").select("k", "name").unionByName(
            d.where("name = 'one'").select(F.lit(5).alias("k"), "name"))

    with Checks(spark) as chk:
        for q in UNION_QUERIES:
            assert chk.sql([fact], q, cache=cache).expected_count > 0
        c = chk.join(fact, dim, [("p", "k")], cache=not cache)
        chk.pruned(c, fact.name, kept=2)


NON_ATOMIC = {
    "path": ["named_struct('k', f.p) = named_struct('k', d.k)", "f.p = d.k + 0",
             "concat(CAST(f.p AS STRING), '') = d.sk"],
    "catalog": ["array(f.p) = array(d.k)", "struct(f.p, f.s) = struct(d.k, concat('s', d.sk))"],
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind,cache", KIND_CACHE)
def test_non_atomic_join_keys(spark, int_facts, kind, cache):
    """SPARK-32659: struct/array keys and expressions over the keys."""
    from pyspark.sql import functions as F

    fact = int_facts[kind]
    with Checks(spark) as chk:
        for on in NON_ATOMIC[kind]:
            assert chk.sql([fact], "SELECT f.v, d.name FROM {f0} f JOIN peer_dim_int d "
                           f"ON {on} WHERE d.name IN ('two', 'five')",
                           cache=cache).expected_count == 4
        # dpp.join: a key computed by an expression (a plain column of dim_df, so prunable)
        c = chk.join(fact, lambda: spark.table("peer_dim_int").where("name = 'two'")
                     .withColumn("k1", F.col("k") + 0), [("p", "k1")], cache=not cache)
        chk.pruned(c, fact.name, kept=1)
        # a struct key: Spark cannot compare it with an int, so both must raise
        chk.join(fact, lambda: spark.table("peer_dim_int").withColumn("ks", F.struct("k")),
                 [("p", "ks")], cache=cache)


# ====================================================================== 7. CHAR(n)

@pytest.fixture(scope="module")
def char_facts(spark, cat) -> dict[str, Fact]:
    cat.dim("peer_dim_str", pa.table({"s": ["ab", "ab   ", "abc", "x"],
                                      "grp": pa.array([1, 2, 3, 3], pa.int32())}))
    fact = cat.table("peer_char", "(v INT, cd CHAR(4), c CHAR(5)) USING parquet "
                     "PARTITIONED BY (c)", "INSERT INTO peer_char VALUES (1, 'd', 'ab'), "
                     "(2, 'dd', 'ab'), (3, 'd', 'abc'), (4, 'd', 'x')")
    # the same folders as a path table: STRING values, with the padding's trailing spaces
    return {"catalog": fact, "path": cat.path_fact("peer_char_p", Path(fact.path))}


# static predicates on c; and predicates left to Spark over dpp's relation after the join
# pruned it (CHAR semantics must survive there, for c and for the data column cd CHAR(4))
CHAR_STATIC = {"catalog": ("f.c = 'ab'", "f.c = 'ab   '", "f.c IN ('ab', 'x')"),
               "path": ("f.c = 'ab'",)}
CHAR_RESIDUAL = {"catalog": ("(f.c = 'ab' OR f.v < 0)", "f.cd = 'd'"),
                 "path": ("(f.c = 'ab' OR f.v < 0)",)}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind,cache", KIND_CACHE)
def test_char_padding(spark, char_facts, kind, cache):
    """CHAR(5) values read padded to 5 characters; a literal compared with them is padded too
    (not a STRING column: 'ab' = c holds for the folder c=ab%20%20%20). The path table over
    the same folders is STRING: no padding of literals there."""
    fact = char_facts[kind]
    with Checks(spark) as chk:
        chk.sql([fact], "SELECT f.v, f.cd, f.c, d.s FROM {f0} f JOIN peer_dim_str d "
                "ON f.c = d.s WHERE d.grp IN (1, 2)", cache=cache)
        for where in CHAR_STATIC[kind]:
            chk.sql([fact], "SELECT f.v, f.c FROM {f0} f WHERE " + where, cache=cache)
        for where in CHAR_RESIDUAL[kind]:
            chk.sql([fact], "SELECT f.v FROM {f0} f JOIN peer_dim_str d ON f.c = d.s "
                    f"WHERE d.grp = 2 AND {where}", cache=cache)
        chk.join(fact, lambda: spark.table("peer_dim_str").where("grp = 2"),
                 [("c", "s")], cache=not cache)


# ====================================================================== 9. STRING vs INT

@pytest.fixture(scope="module")
def strp_facts(spark, cat, int_facts) -> dict[str, Fact]:
    texts = {"01": [1], "1": [2], "a": [3], "2": [4]}
    path = make_partitioned_table(cat.root / "strp", {
        (("p", t),): {"v": pa.array(v, pa.int32())} for t, v in texts.items()})
    fact = cat.table("peer_strp", "(v INT, p STRING) USING parquet PARTITIONED BY (p)",
                     "INSERT INTO peer_strp VALUES (1, '01'), (2, '1'), (3, 'a'), (4, '2')")
    return {"path": cat.path_fact("peer_strp_p", path), "catalog": fact}


@pytest.mark.timeout(150)
@pytest.mark.parametrize("kind,ansi,cache", [("path", "true", False), ("path", "false", True),
                                             ("catalog", "true", True)])
def test_string_partition_int_key(spark, strp_facts, kind, ansi, cache):
    """Implicit casts between a STRING partition column (01, 1, a, 2) and INT keys: where Spark
    raises (ANSI: 'a' is no number) dpp must raise too, else return Spark's rows."""
    fact, conf = strp_facts[kind], {"spark.sql.ansi.enabled": ansi}
    with Checks(spark) as chk:
        chk.sql([fact], "SELECT f.v, f.p, d.name FROM {f0} f JOIN peer_dim_int d "
                "ON f.p = d.k WHERE d.name IN ('one', 'two')", cache=cache, settings=conf)
        chk.sql([fact], "SELECT f.v, f.p FROM {f0} f WHERE f.p = 1", cache=cache,
                settings=conf)
        if ansi == "true":
            chk.sql([fact], "SELECT f.v, f.p FROM {f0} f WHERE f.p IN "
                    "(SELECT sk FROM peer_dim_int WHERE name = 'one')", cache=cache,
                    settings=conf)
        chk.join(fact, lambda: spark.table("peer_dim_int").where("name = 'one'"),
                 [("p", "k")], cache=not cache, settings=conf)


# ====================================================================== 10. DATE vs TIMESTAMP

@pytest.fixture(scope="module")
def date_facts(spark, cat) -> dict[str, Fact]:
    # midnight of 03-10 in UTC, LA and Kolkata (group 1), and an instant at noon UTC (group 2)
    cat.dim("peer_dim_tsk", pa.table({
        "t": pa.array([utc(2024, 3, 10), utc(2024, 3, 10, 8), utc(2024, 3, 9, 18, 30),
                       utc(2024, 3, 10, 12)], TS_UTC),
        "grp": pa.array([1, 1, 1, 2], pa.int32())}))
    cat.dim("peer_dim_date", pa.table({
        "dt": pa.array([dt.date(2024, 3, 10), dt.date(2024, 3, 11), dt.date(2024, 3, 12)])}))
    days = {"2024-03-09": [1, 2], "2024-03-10": [3, 4], "2024-03-11": [5]}
    path = make_partitioned_table(cat.root / "dates", {
        (("d", t),): {"v": pa.array(v, pa.int32())} for t, v in days.items()})
    fact = cat.table("peer_date", "(v INT, d DATE) USING parquet PARTITIONED BY (d)",
                     "INSERT INTO peer_date VALUES (1, DATE'2024-03-09'), (2, DATE'2024-03-09'),"
                     " (3, DATE'2024-03-10'), (4, DATE'2024-03-10'), (5, DATE'2024-03-11')")
    return {"path": cat.path_fact("peer_date_p", path), "catalog": fact}


@pytest.mark.timeout(150)
@pytest.mark.parametrize("kind,tz,cache", TZ_ROTATION)
def test_date_partitions_timestamp_keys(spark, date_facts, ts_facts, kind, tz, cache):
    """Spark compares DATE with TIMESTAMP as midnight in the session time zone."""
    fact, conf = date_facts[kind], {TZ: tz}
    with Checks(spark) as chk:
        for grp in (1, 2):
            chk.sql([fact], "SELECT f.v, f.d, d.t FROM {f0} f JOIN peer_dim_tsk d "
                    f"ON f.d = d.t WHERE d.grp = {grp}", cache=cache, settings=conf)
        # and the other way: TIMESTAMP partitions (written in this zone) against DATE keys
        chk.sql([ts_facts[(kind, tz)]], "SELECT f.v, f.t FROM {f0} f WHERE f.t IN "
                "(SELECT dt FROM peer_dim_date WHERE dt > DATE'2024-03-10')",
                cache=cache, settings=conf)
        chk.join(fact, lambda: spark.table("peer_dim_tsk").where("grp = 1"),
                 [("d", "t")], cache=not cache, settings=conf)


# ====================================================================== 11. TIMESTAMP_NTZ

@pytest.fixture(scope="module")
def ntz_facts(spark, cat) -> dict[str, Fact]:
    wall = [dt.datetime(2024, 3, 9, 17), dt.datetime(2024, 3, 10, 2, 30),
            dt.datetime(2024, 3, 11)]
    cat.dim("peer_dim_ntz", pa.table({
        "tn": pa.array([wall[0], wall[1], dt.datetime(2024, 3, 12)], pa.timestamp("us")),
        "tl": pa.array([utc(2024, 3, 10, 1), utc(2024, 3, 10, 2, 30), utc(2024, 3, 11)],
                       TS_UTC),
        "grp": pa.array([1, 1, 2], pa.int32())}))
    rows = [(1, wall[0]), (2, wall[1]), (3, wall[2]), (4, wall[0])]
    cat.view("peer_ntz_src", _source(cat, "ntz_src", rows, pa.timestamp("us")))
    spark.table("peer_ntz_src").write.partitionBy("t").parquet(str(cat.root / "ntz"))
    fact = cat.table("peer_ntz", "(v INT, t TIMESTAMP_NTZ) USING parquet PARTITIONED BY (t)",
                     "INSERT INTO peer_ntz SELECT v, t FROM peer_ntz_src")
    return {"path": cat.path_fact("peer_ntz_p", cat.root / "ntz"), "catalog": fact}


NTZ_INFERENCE = {"spark.sql.timestampType": "TIMESTAMP_NTZ"}


@pytest.mark.timeout(150)
@pytest.mark.parametrize("kind,tz,cache,extra", [
    ("catalog", LA, False, {}), ("path", "UTC", True, {}), ("path", IST, False, NTZ_INFERENCE)],
    ids=["catalog-LA", "path-UTC", "path-IST-inferNTZ"])
def test_timestamp_ntz(spark, ntz_facts, kind, tz, cache, extra):
    """A TIMESTAMP_NTZ partition column (or one Spark infers as NTZ) joined to NTZ keys and to
    TIMESTAMP keys (instants: Spark compares the NTZ value taken in the session time zone)."""
    fact, conf = ntz_facts[kind], {TZ: tz, **extra}
    with Checks(spark) as chk:
        for key in ("tn", "tl"):
            chk.sql([fact], "SELECT f.v, f.t FROM {f0} f JOIN peer_dim_ntz d "
                    f"ON f.t = d.{key} WHERE d.grp = 1", cache=cache, settings=conf)
        chk.sql([fact], "SELECT f.v, f.t FROM {f0} f WHERE f.t = "
                "TIMESTAMP_NTZ '2024-03-10 02:30:00'", cache=cache, settings=conf)
        chk.join(fact, lambda: spark.table("peer_dim_ntz").where("grp = 1"),
                 [("t", "tn")], cache=not cache, settings=conf)


# ====================================================================== 12. column-name case

@pytest.fixture(scope="module")
def mixed_facts(spark, cat, int_facts) -> dict[str, Fact]:
    path = make_partitioned_table(cat.root / "mixed", {
        (("Part", str(p)),): {"v": pa.array([p * 10, p * 10 + 1], pa.int32())}
        for p in range(1, 5)})
    values = ", ".join(f"({p * 10 + i}, {p})" for p in range(1, 5) for i in (0, 1))
    fact = cat.table("peer_mixed", "(v INT, Part INT) USING parquet PARTITIONED BY (Part)",
                     f"INSERT INTO peer_mixed VALUES {values}")
    return {"path": cat.path_fact("peer_mixed_p", path), "catalog": fact}


@pytest.mark.timeout(150)
@pytest.mark.parametrize("kind,case_sensitive,cache", [
    ("path", "false", True), ("catalog", "false", False), ("catalog", "true", True)])
def test_mixed_case_partition_column(spark, mixed_facts, kind, case_sensitive, cache):
    """Folders Part=..., queried as part / PART / Part: Spark resolves all three unless
    spark.sql.caseSensitive; where it resolves them, pruning is sound and expected."""
    fact, conf = mixed_facts[kind], {"spark.sql.caseSensitive": case_sensitive}
    names = ("PART", "Part") if case_sensitive == "false" else ("part", "Part")
    with Checks(spark) as chk:
        for col in names:
            c = chk.sql([fact], "SELECT f.v, d.name FROM {f0} f JOIN peer_dim_int d "
                        f"ON f.{col} = d.k WHERE d.name IN ('one', 'two')", cache=cache,
                        settings=conf)
            if c.expected_count > 0:
                chk.pruned(c, fact.name, kept=2)
        c = chk.sql([fact], "SELECT v FROM {f0} WHERE Part = 2", cache=cache, settings=conf)
        chk.pruned(c, fact.name, kept=1)
        for col in ("Part", "part") if case_sensitive == "false" else ("Part",):
            c = chk.join(fact, lambda: spark.table("peer_dim_int").where("name = 'two'"),
                         [(col, "k")], cache=not cache, settings=conf)
            if c.expected_count > 0:
                chk.pruned(c, fact.name, kept=1)


# ====================================================================== the filter cache

@pytest.mark.timeout(120)
def test_filter_cache_is_not_shared_across_time_zones(spark, ts_facts):
    """A build side whose rows depend on the session time zone (hour() of an instant): the
    filter cached by a run in UTC must not serve the same build query in Los Angeles."""
    from dpp import DppSession

    dpp = DppSession(spark)
    q = "SELECT f.v FROM {f0} f JOIN peer_dim_ts d ON f.t = d.t WHERE hour(d.t) = 17"
    with Checks(spark) as chk:
        for tz in ("UTC", LA):
            chk.sql([ts_facts[("catalog", tz)]], q, cache=True, settings={TZ: tz}, session=dpp)


@pytest.mark.timeout(120)
def test_filter_cache_dimension_without_files(spark, int_facts, cat):
    """A dimension view over local rows has no files to fingerprint: redefining the view must
    not reuse the filter built from its previous rows."""
    cat.views.append("peer_dim_local")
    q = "SELECT f.v, d.name FROM {f0} f JOIN peer_dim_local d ON f.p = d.k WHERE d.name = 'x'"
    with Checks(spark) as chk:
        for k in (1, 2):
            spark.createDataFrame([(k, "x"), (6, "y")], "k INT, name STRING") \
                .createOrReplaceTempView("peer_dim_local")
            assert chk.sql([int_facts["path"]], q, cache=True).expected_count == 2
