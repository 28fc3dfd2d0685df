"""A declared folder read through dpp's kept-partition index (``dpp.spark.FolderIndex``) reads
exactly what ``spark.read.parquet(folder)`` reads — schema, column order, partition types and
values, the files of each partition — or is not used at all (``None``: Spark's reader).

Each layout below is checked both ways on the same folder: the index's DataFrame against
Spark's reader, whole and under partition filters, and the files each scan reads. A seeded
generator of layouts (values of every kind Spark infers, empty folders, files of differing
schemas, hidden names, levels) searches around the hand-written ones.
"""
from __future__ import annotations

import os
import random
import shutil
from pathlib import Path
from typing import Any, Optional

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpp
from hive_splits.spark_io import kept_listing_dataframe
from tests.conftest import spark_conf

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def jar(spark: Any) -> None:
    from dpp.runtime.jvm_build import load_into

    load_into(spark)


def _file(folder: Path, name: str, table: pa.Table) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, folder / name)


def _ints(**cols: list[int]) -> pa.Table:
    return pa.table({k: pa.array(v, pa.int64()) for k, v in cols.items()})


def _lazy(spark: Any, root: Path) -> Optional[Any]:
    return kept_listing_dataframe(spark, root.as_uri(), 0)


def _why(spark: Any) -> str:
    return str(spark._jvm.dpp.spark.FolderIndex.why())


def _rows(df: Any) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _files(df: Any) -> set[str]:
    """The DataFrame's files (``inputFiles``), by local path."""
    from urllib.parse import urlparse

    return {urlparse(f).path for f in df.inputFiles()}


def _read(df: Any) -> tuple[list[tuple], int]:
    """The rows of ``df`` and the files its scans read (Spark's ``numFiles``)."""
    from dpp.runtime.spark_metrics import file_scans

    rows = _rows(df)
    return rows, sum(s.files_read for s in file_scans(df))


def _same(spark: Any, root: Path, filters: tuple[str, ...] = ()) -> Any:
    """The index's reading of ``root`` equals Spark's reader's, whole and under each filter;
    returns the index's DataFrame (asserted not None)."""
    lazy = _lazy(spark, root)
    assert lazy is not None, _why(spark)
    want = spark.read.parquet(root.as_uri())
    assert lazy.schema == want.schema, (lazy.schema, want.schema)
    assert _rows(lazy) == _rows(want)
    assert _files(lazy) == _files(want)
    for f in filters:
        assert _read(lazy.where(f)) == _read(want.where(f)), f
    return lazy


def _falls_back(spark: Any, root: Path, because: str) -> None:
    assert _lazy(spark, root) is None
    assert because in _why(spark), _why(spark)


# ------------------------------------------------------------------------- layouts

def test_integer_partitions_read_as_the_reader_reads_them(spark: Any, jar: None,
                                                           tmp_path: Path) -> None:
    root = tmp_path / "t"
    for p in ("7", "007", "-3", "12", "__HIVE_DEFAULT_PARTITION__"):
        _file(root / f"p={p}", "part-0.parquet", _ints(v=[len(p)]))
    _file(root / "_temporary" / "x", "part-9.parquet", _ints(v=[99]))     # hidden
    _file(root / ".staging", "part-9.parquet", _ints(v=[98]))             # hidden
    (root / "_SUCCESS").write_text("")
    lazy = _same(spark, root, ("p = 7", "p IN (12, -3)", "p IS NULL", "p > 100"))
    assert dict((f.name, f.dataType.simpleString()) for f in lazy.schema)["p"] == "int"
    # the scan lists only what the filter keeps
    assert _read(lazy.where("p = 12"))[1] == 1


def test_words_beside_integers_make_the_column_a_string(spark: Any, jar: None,
                                                        tmp_path: Path) -> None:
    root = tmp_path / "t"
    for p in ("1", "01", "abc", "a%2Fb", "Zed"):
        _file(root / f"p={p}", "part-0.parquet", _ints(v=[1]))
    lazy = _same(spark, root, ("p = '01'", "p = '1'", "p = 'a/b'", "p < 'b'"))
    assert dict((f.name, f.dataType.simpleString()) for f in lazy.schema)["p"] == "string"


def test_bigint_values_make_the_column_a_bigint(spark: Any, jar: None, tmp_path: Path) -> None:
    root = tmp_path / "t"
    for p in ("1", "5000000000", "-9"):
        _file(root / f"p={p}", "part-0.parquet", _ints(v=[1]))
    lazy = _same(spark, root, ("p = 5000000000", "p < 0"))
    assert dict((f.name, f.dataType.simpleString()) for f in lazy.schema)["p"] == "bigint"


def test_a_wider_value_only_in_an_empty_folder_is_not_trusted(spark: Any, jar: None,
                                                              tmp_path: Path) -> None:
    """Spark infers from folders that hold data: an empty ``p=abc`` leaves the column an INT
    for Spark's reader. The index cannot see which folders hold data without listing them:
    it checks a folder of the widest kind holds some, and here none does."""
    root = tmp_path / "t"
    for p in ("1", "2"):
        _file(root / f"p={p}", "part-0.parquet", _ints(v=[1]))
    (root / "p=abc").mkdir()
    _falls_back(spark, root, "widest value")
    assert dict((f.name, f.dataType.simpleString())
                for f in spark.read.parquet(root.as_uri()).schema)["p"] == "int"


def test_the_first_data_file_gives_the_columns(spark: Any, jar: None, tmp_path: Path) -> None:
    """Spark's reader takes the data columns from the first file in path order; folders of
    other columns elsewhere do not change them (``p=1/`` sorts before ``p=10/`` and
    ``p=1-x/`` before ``p=1/``)."""
    root = tmp_path / "t"
    _file(root / "p=10", "part-0.parquet", _ints(v=[1], w=[2]))
    _file(root / "p=1", "part-0.parquet", _ints(v=[3]))
    _same(spark, root, ("p = 10",))
    # a folder sorting first, empty: the next one's file still comes first
    (root / "p=0").mkdir()
    _same(spark, root, ("p = 10",))
    # a new first file with another column, in the first folder
    _file(root / "p=1", "a-part.parquet", _ints(v=[4], x=[5]))
    lazy = _same(spark, root, ("p = 1", "p = 10"))
    assert "x" in lazy.columns


def test_two_levels(spark: Any, jar: None, tmp_path: Path) -> None:
    root = tmp_path / "t"
    for y in ("2020", "2021"):
        for r in ("east", "west", "__HIVE_DEFAULT_PARTITION__"):
            _file(root / f"y={y}" / f"r={r}", "part-0.parquet", _ints(v=[int(y)]))
    _same(spark, root, ("y = 2021", "r = 'east'", "y = 2020 AND r IS NULL"))


def test_files_in_a_partitions_subfolder_are_read(spark: Any, jar: None,
                                                  tmp_path: Path) -> None:
    root = tmp_path / "t"
    _file(root / "p=1", "part-0.parquet", _ints(v=[1]))
    _file(root / "p=2" / "sub", "part-0.parquet", _ints(v=[2]))
    _same(spark, root, ("p = 2",))


def test_partition_type_inference_off(spark: Any, jar: None, tmp_path: Path) -> None:
    root = tmp_path / "t"
    for p in ("1", "01", "2020-01-01"):
        _file(root / f"p={p}", "part-0.parquet", _ints(v=[1]))
    with spark_conf(spark, {"spark.sql.sources.partitionColumnTypeInference.enabled": "false"}):
        lazy = _same(spark, root, ("p = '01'",))
        assert dict((f.name, f.dataType.simpleString()) for f in lazy.schema)["p"] == "string"


@pytest.mark.parametrize("value", ["2020-01-01", "1.5", "NaN", "+1", "1e3",
                                   "12345678901234567890"])
def test_values_whose_type_is_not_certain_from_the_name_leave_it_to_spark(
        spark: Any, jar: None, tmp_path: Path, value: str) -> None:
    root = tmp_path / "t"
    for p in ("1", value):
        _file(root / f"p={p}", "part-0.parquet", _ints(v=[1]))
    _falls_back(spark, root, "not certain")


@pytest.mark.parametrize("layout", ["file_at_root", "summary", "not_a_partition",
                                    "partition_column_in_files", "two_columns_at_a_level"])
def test_layouts_spark_reads_otherwise_leave_it_to_spark(spark: Any, jar: None,
                                                          tmp_path: Path, layout: str) -> None:
    root = tmp_path / "t"
    for p in ("1", "2"):
        _file(root / f"p={p}", "part-0.parquet", _ints(v=[1]))
    if layout == "file_at_root":
        _file(root, "stray.parquet", _ints(v=[1]))
        why = "beside partition folders"
    elif layout == "summary":
        (root / "_metadata").write_bytes(b"")
        why = "summary file"
    elif layout == "not_a_partition":
        _file(root / "misc", "part-0.parquet", _ints(v=[1]))
        why = "no partition"
    elif layout == "partition_column_in_files":
        shutil.rmtree(root / "p=1")
        _file(root / "p=1", "part-0.parquet", _ints(v=[1], P=[5]))
        why = "named like partition column"
    else:
        _file(root / "q=1", "part-0.parquet", _ints(v=[1]))
        why = "two columns"
    _falls_back(spark, root, why)


def test_settings_that_change_the_listing_leave_it_to_spark(spark: Any, jar: None,
                                                            tmp_path: Path) -> None:
    root = tmp_path / "t"
    for p in ("1", "2"):
        _file(root / f"p={p}", "part-0.parquet", _ints(v=[1]))
    with spark_conf(spark, {"spark.sql.parquet.mergeSchema": "true"}):
        _falls_back(spark, root, "mergeSchema")
    assert _lazy(spark, root) is not None
    assert kept_listing_dataframe(spark, root.as_uri(), 3) is None
    assert "fewer than 3" in _why(spark)


# ------------------------------------------------------------------------- generated layouts

_VALUES = ["0", "1", "2", "01", "007", "-4", "12", "2147483648", "-2147483649", "abc", "Abc",
           "a%20b", "x=y", "__HIVE_DEFAULT_PARTITION__", "2021-03-04", "1.5", "NaN", "+2",
           "Infinity", "q1"]


def _draw_layout(rng: random.Random, root: Path) -> None:
    levels = rng.choice([1, 1, 2])
    names = ["p", "q"][:levels]
    per = [rng.sample(_VALUES, k=rng.randint(2, 6)) for _ in range(levels)]
    if rng.random() < 0.5:   # mostly certain kinds, so most layouts take the index
        per = [[v for v in vals if v not in ("2021-03-04", "1.5", "NaN", "+2", "Infinity")]
               or ["1"] for vals in per]
    leaves = {tuple(rng.choice(vals) for vals in per) for _ in range(rng.randint(1, 7))}
    for n, leaf in enumerate(sorted(leaves)):
        folder = root.joinpath(*[f"{c}={v}" for c, v in zip(names, leaf)])
        files = rng.choice([0, 1, 1, 1, 2]) if n else rng.choice([0, 1, 2])
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(files):
            cols = {"v": [n * 10 + i]}
            if rng.random() < 0.25:
                cols["w"] = [i]
            if rng.random() < 0.1:
                _file(folder, f"part-{i}.parquet", pa.table({"v": pa.array(["s"])}))
            else:
                _file(folder, f"part-{i}.parquet", _ints(**cols))
            if rng.random() < 0.1:
                (folder / f"part-{i}.empty.parquet").write_bytes(b"")
    if rng.random() < 0.2:
        (root / "_SUCCESS").write_text("")


# generated layouts per run (and half as many listed on the driver); `make test-compat` draws
# fewer on each Spark line
LAYOUT_SEEDS = int(os.environ.get("DPP_LAYOUT_SEEDS", "40"))


@pytest.mark.parametrize("seed", range(LAYOUT_SEEDS))
def test_generated_layouts_read_as_the_reader_reads_them(spark: Any, jar: None,
                                                         tmp_path: Path, seed: int) -> None:
    """Whenever the index takes a generated folder, it reads what Spark's reader reads (or
    fails where Spark's reader fails); where it does not, it says why."""
    rng = random.Random(seed)
    root = tmp_path / "g"
    _draw_layout(rng, root)
    try:
        want = spark.read.parquet(root.as_uri())
        want_schema = want.schema
        want_rows = _rows(want)
    except Exception:
        want = None
    lazy = _lazy(spark, root)
    if lazy is None:
        assert _why(spark), "no reason given"
        return
    if want is None:
        with pytest.raises(Exception):
            _rows(lazy)
        return
    assert lazy.schema == want_schema
    assert _rows(lazy) == want_rows
    part = [f.name for f in want_schema.fields][-1]
    for value in {r[part] for r in want.select(part).collect()}:
        cond = f"`{part}` IS NULL" if value is None else f"`{part}` = {value!r}"
        assert _rows(lazy.where(cond)) == _rows(want.where(cond)), cond


@pytest.mark.parametrize("seed", range(LAYOUT_SEEDS, LAYOUT_SEEDS + LAYOUT_SEEDS // 2))
def test_generated_layouts_listed_on_the_driver_read_as_the_reader_reads_them(
        spark: Any, jar: None, tmp_path: Path, seed: int) -> None:
    """With Spark's listing threshold at one folder, every listing of the index's kept local
    folders takes the driver's way (a clone of the session listing without a job): it still
    reads what Spark's reader reads."""
    with spark_conf(spark, {"spark.sql.sources.parallelPartitionDiscovery.threshold": "1"}):
        test_generated_layouts_read_as_the_reader_reads_them(spark, jar, tmp_path, seed)


def _jobs_of(spark: Any, group: str, action: Any) -> int:
    sc = spark.sparkContext
    sc.setJobGroup(group, group)
    try:
        action()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
    return len(sc.statusTracker().getJobIdsForGroup(group))


def test_many_local_kept_folders_are_listed_without_a_job(spark: Any, jar: None,
                                                          tmp_path: Path) -> None:
    """Past Spark's listing threshold (32 folders) Spark's index lists with a job of a task
    per folder; the index lists kept local folders on the driver instead, with Spark's own
    listing code: a scan of all 40 folders runs the same jobs as Spark's reader's scan (whose
    listing ran when it was made), and reads the same rows."""
    root = tmp_path / "t"
    for d in range(1, 41):
        _file(root / f"p={d}", "part-0.parquet", _ints(v=[d]))
    want = spark.read.parquet(root.as_uri())
    lazy = _lazy(spark, root)
    assert lazy is not None, _why(spark)
    assert _rows(lazy) == _rows(want)
    n_want = _jobs_of(spark, "kl-want", lambda: want.agg({"v": "sum"}).collect())
    lazy = _lazy(spark, root)
    n_lazy = _jobs_of(spark, "kl-lazy", lambda: lazy.agg({"v": "sum"}).collect())
    assert n_lazy == n_want, (n_lazy, n_want)


# ------------------------------------------------------------------------- through dpp

NAME = "kl_fact"
DIM = "kl_dim"


@pytest.fixture()
def declared(spark: Any, jar: None, tmp_path: Path) -> Any:
    root = tmp_path / "fact"
    for d in range(1, 41):
        _file(root / f"day={d}", "part-0.parquet", _ints(item=[d, d + 100], amount=[d, 2 * d]))
    spark.createDataFrame([(d, 1 if d in (3, 17, 29) else 0) for d in range(1, 41)],
                          "d_day INT, pick INT").createOrReplaceTempView(DIM)
    with spark_conf(spark, {f"spark.dpp.tables.{NAME}": str(root),
                            "spark.dpp.declaredTables.keptListing": "10"}):
        session = dpp.enable(spark)
        assert session.optimizer_hook is not None, session.hook_note
        try:
            yield root, session
        finally:
            dpp.disable(spark)
            spark.catalog.dropTempView(NAME)
            spark.catalog.dropTempView(DIM)


QUERY = (f"SELECT f.day, count(*) AS n, sum(f.amount) AS s FROM {NAME} f JOIN {DIM} d "
         f"ON f.day = d.d_day WHERE d.pick = 1 GROUP BY f.day ORDER BY f.day")


def _want(spark: Any, root: Path) -> list[tuple]:
    spark.read.parquet(root.as_uri()).createOrReplaceTempView("kl_ref")
    try:
        with spark_conf(spark, {"spark.dpp.enabled": "false"}):
            return [tuple(r) for r in spark.sql(QUERY.replace(NAME, "kl_ref")).collect()]
    finally:
        spark.catalog.dropTempView("kl_ref")


def test_a_declared_table_is_pruned_through_the_index(spark: Any, declared: Any) -> None:
    root, session = declared
    df = spark.sql(QUERY)
    got = [tuple(r) for r in df.collect()]
    assert got == _want(spark, root)
    assert [r[0] for r in got] == [3, 17, 29]
    report = session.last_report.to_dict()
    fact = [t for t in report["tables"] if t.get("partitions_kept") is not None][0]
    assert (fact["partitions_kept"], fact["partitions_total"]) == (3, 40), fact
    # the loader judged the folders the index knows by name and listed none: the index
    # lists the kept three through Spark's own index (listing them here too was each twice)
    assert fact["list_calls"] == 0, fact
    # the declared table's relation is over the index; the scan read the kept files only
    leaf = spark.table(NAME)._jdf.queryExecution().analyzed().collectLeaves().head()
    assert leaf.relation().location().getClass().getSimpleName() == "FolderIndex"
    from dpp.runtime.spark_metrics import file_scans

    assert sum(s.files_read for s in file_scans(df)) == 3


def test_data_added_between_two_queries_is_read(spark: Any, declared: Any) -> None:
    root, _session = declared
    assert [tuple(r) for r in spark.sql(QUERY).collect()] == _want(spark, root)
    _file(root / "day=17", "part-1.parquet", _ints(item=[7], amount=[1000]))
    _file(root / "day=29" / "late", "part-0.parquet", _ints(item=[8], amount=[5]))
    got = [tuple(r) for r in spark.sql(QUERY).collect()]
    assert got == _want(spark, root)
    assert dict((r[0], r[1]) for r in got)[17] == 3


def test_a_folder_that_changes_the_type_is_read_as_the_reader_reads_it(
        spark: Any, declared: Any) -> None:
    root, _session = declared
    _file(root / "day=later", "part-0.parquet", _ints(item=[1], amount=[1]))
    want = spark.read.parquet(root.as_uri())
    assert dict((f.name, f.dataType.simpleString()) for f in want.schema)["day"] == "string"
    got = spark.table(NAME)
    assert got.schema == want.schema
    assert _rows(got) == _rows(want)
    some = f"SELECT day, sum(amount) FROM {NAME} WHERE day IN ('3', 'later') GROUP BY day"
    assert _rows(spark.sql(some)) == _rows(spark.sql(some.replace(NAME, "parquet.`"
                                                                   + root.as_uri() + "`")))


def test_a_write_over_the_declared_table_fails_as_the_readers_fails(
        spark: Any, declared: Any, tmp_path: Path) -> None:
    """``df.write.mode("overwrite")`` into the folder the DataFrame reads: Spark deletes the
    folder first, then its reader fails reading the files it listed when the DataFrame was
    made. The index lists a kept partition when the scan runs: a folder gone since the
    DataFrame was made fails the write too, never writes fewer rows in silence."""
    root, _session = declared
    df = spark.table(NAME).where("day = 3")
    with pytest.raises(Exception) as got:
        df.write.mode("overwrite").parquet(root.as_uri())
    assert "no longer exists" in str(got.value)
    # Spark's own reader, on a copy: the same write fails too
    copy = tmp_path / "copy"
    for d in (3, 4):
        _file(copy / f"day={d}", "part-0.parquet", _ints(item=[d], amount=[d]))
    with pytest.raises(Exception):
        spark.read.parquet(copy.as_uri()).where("day = 3").write.mode("overwrite") \
            .parquet(copy.as_uri())


def test_a_dataframe_run_twice_reads_the_listing_of_its_first_run(
        spark: Any, declared: Any) -> None:
    root, _session = declared
    df = spark.table(NAME).where("day = 17")
    first = _rows(df)
    _file(root / "day=17", "part-1.parquet", _ints(item=[7], amount=[1000]))
    assert _rows(df) == first
    assert len(_rows(spark.table(NAME).where("day = 17"))) == len(first) + 1


def test_a_kept_partition_holding_another_level_fails_as_the_reader_fails(
        spark: Any, jar: None, tmp_path: Path) -> None:
    """``p=1/q=2/`` beside ``p=2/``: Spark's reader refuses the folder (conflicting partition
    columns). The index knows ``p=1`` by name only; when a scan keeps it, its listing finds
    the other level and the scan fails too — never rows with a column missing."""
    root = tmp_path / "t"
    _file(root / "p=2", "part-0.parquet", _ints(v=[2]))
    _file(root / "p=1" / "q=2", "part-0.parquet", _ints(v=[1]))
    with pytest.raises(Exception):
        spark.read.parquet(root.as_uri()).collect()
    lazy = _lazy(spark, root)
    if lazy is None:
        return   # refused when made: Spark's reader, which fails
    assert _rows(lazy.where("p = 2")) == [(2, 2)]   # a folder of the known layout
    with pytest.raises(Exception):
        lazy.where("p = 1").collect()


def test_a_kept_folder_without_files_reads_nothing(spark: Any, jar: None,
                                                   tmp_path: Path) -> None:
    """The fuzzer's seed 1901: ``p=false/`` empty beside ``p=true/``, a scan that keeps only
    the empty one. Spark's index over folders without a file answers one directory without
    partition values, which the scan of this table could not read (it failed with an
    ``ArrayIndexOutOfBoundsException``): it reads nothing, as Spark's reader does."""
    root = tmp_path / "t"
    _file(root / "p=true", "part-0.parquet", _ints(v=[1]))
    (root / "p=false").mkdir()
    _same(spark, root, ("p = 'false'", "p = 'true'", "p IN ('false', 'x')"))


def test_a_join_that_keeps_only_an_empty_folder_reads_nothing(spark: Any,
                                                               declared: Any) -> None:
    root, _session = declared
    (root / "day=41").mkdir()
    spark.createDataFrame([(41, 1), (3, 0)], "d_day INT, pick INT") \
        .createOrReplaceTempView(DIM)
    got = [tuple(r) for r in spark.sql(QUERY).collect()]
    assert got == _want(spark, root) == []
    one = (f"SELECT f.day, count(*) FROM {NAME} f JOIN {DIM} d ON f.day = d.d_day "
           f"WHERE d.pick = 1 GROUP BY f.day")
    assert [tuple(r) for r in spark.sql(one).collect()] == []


def test_listing_only_folders_without_files_gives_no_valueless_partition(
        spark: Any, jar: None, tmp_path: Path) -> None:
    """What a scan kept may be only folders without a file: Spark's index over them answers
    one directory with no partition values, and Spark's own dynamic pruning then reads the
    first value of an empty row (the fuzzer's seed 1901: ``ArrayIndexOutOfBoundsException``).
    The index answers no directory instead."""
    root = tmp_path / "t"
    _file(root / "p=true", "part-0.parquet", _ints(v=[1]))
    (root / "p=false").mkdir()
    lazy = _lazy(spark, root)
    assert lazy is not None, _why(spark)
    plan = lazy.where("p = 'false'")._jdf.queryExecution().optimizedPlan()
    cond = plan.condition()
    index = plan.child().relation().location()
    jvm = spark._jvm
    filters = jvm.java.util.ArrayList()
    filters.add(cond)
    seq = jvm.org.apache.spark.api.python.PythonUtils.toSeq(filters)   # Scala 2.12 and 2.13
    none = jvm.org.apache.spark.api.python.PythonUtils.toSeq(jvm.java.util.ArrayList())
    listed = index.listFiles(seq, none)
    for i in range(listed.size()):
        assert listed.apply(i).values().numFields() == 1


def test_two_dataframes_of_the_table_made_apart_each_read_their_own_folders(
        spark: Any, declared: Any) -> None:
    """A DataFrame of the declared table made before a partition was added, joined with one
    made after, both by the same dimension: each relation's index knows its own folders.
    Their loads are not one (an answer that names kept folders speaks only for the folders
    one index knows): the new partition is judged and read by the relation that has it."""
    root, _session = declared
    spark.createDataFrame([(50, 1), (3, 1), (4, 0)], "d_day INT, pick INT") \
        .createOrReplaceTempView("kl_dim2")
    dim = spark.table("kl_dim2").where("pick = 1").select("d_day")
    before = spark.table(NAME)
    _file(root / "day=50", "part-0.parquet", _ints(item=[50], amount=[7]))
    after = spark.table(NAME)
    got = (before.join(dim, before.day == dim.d_day).select("day", "amount")
           .unionByName(after.join(dim, after.day == dim.d_day).select("day", "amount")))
    ref = spark.read.parquet(root.as_uri())
    ref_before = ref.where("day != 50")   # what the reader made before the partition read
    want = (ref_before.join(dim, ref_before.day == dim.d_day).select("day", "amount")
            .unionByName(ref.join(dim, ref.day == dim.d_day).select("day", "amount")))
    try:
        assert _rows(got) == _rows(want)
        assert (50, 7) in _rows(got)
    finally:
        spark.catalog.dropTempView("kl_dim2")


# --------------------------------------------------------------- folder modification times

def _aged(root: Path, seconds: float = 3600.0) -> None:
    """Every folder under ``root`` (and it) last changed ``seconds`` ago."""
    import os
    import time

    then = time.time() - seconds
    for folder in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        os.utime(folder, (then, then))


def test_on_a_filesystem_with_folder_times_the_names_are_listed_again_only_after_a_change(
        spark: Any, jar: None, tmp_path: Path) -> None:
    """``spark.dpp.declaredTables.folderTimes`` names ``lagfs`` (the local disk behind an
    object store's interface: its folders keep the disk's times): the index reuses a folder's
    entries while its time stands — fewer LIST requests than without the setting, the same
    rows — and a partition added since (the root's time moves) is read at once."""
    from hive_splits.storage_calls import lag_uri

    if spark.sparkContext.getConf().get("spark.hadoop.fs.lagfs.impl", None) is None:
        pytest.skip("the session was started without fs.lagfs.impl (counting_conf)")
    lagfs = spark._jvm.dpp.hadoop.LaggedLocalFileSystem
    root = tmp_path / "fact"
    for d in range(1, 13):
        _file(root / f"day={d}", "part-0.parquet", _ints(item=[d], amount=[d]))
    _aged(root)
    uri = lag_uri(root)

    def opened(times: str) -> tuple[list[tuple], int]:
        with spark_conf(spark, {"spark.dpp.declaredTables.folderTimes": times}):
            before = int(lagfs.counts()[0])
            lazy = kept_listing_dataframe(spark, uri, 0)
            lists = int(lagfs.counts()[0]) - before
        assert lazy is not None, _why(spark)
        return _rows(lazy), lists

    want = _rows(spark.read.parquet(uri))
    opened("lagfs")   # the entries read once under the setting
    timed, timed_lists = opened("lagfs")
    untimed, untimed_lists = opened("")
    again, again_lists = opened("")
    assert timed == untimed == again == want
    assert untimed_lists == again_lists   # without the setting: listed at every opening
    assert timed_lists < untimed_lists, (timed_lists, untimed_lists)
    # a partition added: the root's time moves, its entries are listed again, the rows read
    _file(root / "day=13", "part-0.parquet", _ints(item=[13], amount=[13]))
    rows, fresh_lists = opened("lagfs")
    assert rows == _rows(spark.read.parquet(uri))
    assert (13, 13, 13) in rows
    # changed within the last minute (the server's clock may differ from the driver's): not
    # kept, so the next opening lists the root again
    _rows_again, again_lists = opened("lagfs")
    assert again_lists == fresh_lists > timed_lists, (again_lists, fresh_lists, timed_lists)


def test_folder_times_take_filesystem_schemes_only() -> None:
    from dpp.core.errors import ConfigError
    from dpp.runtime.config import DppConfig

    cfg = DppConfig.from_mapping({"spark.dpp.declaredTables.folderTimes": " HDFS, webhdfs ,"})
    assert cfg.declared_folder_times == ("hdfs", "webhdfs")
    assert DppConfig.from_mapping({}).declared_folder_times == ("hdfs",)
    assert DppConfig.from_mapping({"spark.dpp.declaredTables.folderTimes": ""}
                               ).declared_folder_times == ()
    with pytest.raises(ConfigError, match="s3a://"):
        DppConfig.from_mapping({"spark.dpp.declaredTables.folderTimes": "hdfs,s3a://"})


# ------------------------------------------------------------------------- the first folder's schema

def _all_aged(root: Path, seconds: float) -> None:
    """Every file and folder under ``root`` (and it) last changed ``seconds`` ago."""
    import os
    import time

    then = time.time() - seconds
    for p in [root, *root.rglob("*")]:
        os.utime(p, (then, then))


def test_an_unchanged_first_folder_is_probed_once_and_a_change_is_read(
        spark: Any, jar: None, tmp_path: Path) -> None:
    """The schema Spark's reader takes from the first data file is kept by that folder's
    files (each one's path, length and time) and the session's settings: opened again, the
    index runs no job for it; the first file rewritten with another column, a file added
    before it in path order, or a setting that changes how Spark reads its types — each is
    read as Spark's reader reads it."""
    root = tmp_path / "t"
    for d in range(1, 6):
        _file(root / f"p={d}", "part-1.parquet", _ints(v=[d]))
    _all_aged(root, 3600)
    _same(spark, root)                       # probed once, kept (the files are old)
    assert _jobs_of(spark, "kl-probe", lambda: _lazy(spark, root)) == 0
    # the first file rewritten with another column (and, old again, another time)
    first = root / "p=1" / "part-1.parquet"
    pq.write_table(pa.table({"v": pa.array([1], pa.int64()), "w": pa.array(["a"])}), first)
    _all_aged(root, 600)
    lazy = _same(spark, root)
    assert "w" in lazy.columns
    # a file that comes first in path order
    pq.write_table(pa.table({"u": pa.array([5], pa.int64())}), root / "p=1" / "part-0.parquet")
    _all_aged(root, 300)
    lazy = _same(spark, root)
    assert "u" in lazy.columns and "w" not in lazy.columns
    # a setting that changes the type Spark reads a column as
    pq.write_table(pa.table({"u": pa.array([b"x"], pa.binary())}), root / "p=1" / "part-0.parquet")
    _all_aged(root, 200)
    plain = _same(spark, root)
    with spark_conf(spark, {"spark.sql.parquet.binaryAsString": "true"}):
        text = _same(spark, root)
    assert dict(plain.dtypes)["u"] == "binary" and dict(text.dtypes)["u"] == "string"


def test_a_first_folder_changed_just_now_is_probed_again(spark: Any, jar: None,
                                                         tmp_path: Path) -> None:
    """Files changed within the last seconds are not trusted by their time (a rewrite in the
    same clock tick would not move it): each opening probes them again."""
    root = tmp_path / "t"
    for d in range(1, 6):
        _file(root / f"p={d}", "part-1.parquet", _ints(v=[d]))
    _same(spark, root)
    assert _jobs_of(spark, "kl-fresh", lambda: _lazy(spark, root)) == 1
