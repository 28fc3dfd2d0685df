"""Listing where it is expensive: the Hadoop lister, catalog partitions from the metastore,
and what happens when storage misbehaves (a folder gone, a folder that may not be read)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from dpp.runtime.config import DppConfig
from dpp.core.domain import INT, STRING, Domain, TupleDomain
from dpp.core.errors import ConfigError, LayoutError
from hive_splits import DynamicFilter, SplitLoader, table_from_path, to_dataframe
from hive_splits.listers import lister_for
from hive_splits.listing import HadoopLister, LocalLister, _decode_statuses, is_local_location
from hive_splits.metastore import MetastorePartitions, partitions_fetched_metric
from hive_splits.table import table_from_catalog
from tests.conftest import answer, make_lister, make_partitioned_table


def rows(df) -> Counter:
    return Counter(tuple(r) for r in df.collect())


# ------------------------------------------------------------------ lister basics

def test_lister_choice_follows_the_scheme_and_the_setting(spark) -> None:
    assert isinstance(lister_for("/data/t"), LocalLister)
    assert isinstance(lister_for("file:/data/t"), LocalLister)
    assert isinstance(lister_for("s3a://bucket/t", "auto", spark), HadoopLister)
    assert isinstance(lister_for("/data/t", "hadoop", spark), HadoopLister)
    with pytest.raises(LayoutError, match="s3a://bucket/t.*local"):
        lister_for("s3a://bucket/t", "local")
    with pytest.raises(LayoutError, match="needs a Spark session"):
        lister_for("hdfs://nn/t", "auto", None)
    with pytest.raises(ConfigError, match="spark.dpp.lister='ftp'"):
        DppConfig.from_mapping({"spark.dpp.lister": "ftp"})
    assert DppConfig.from_mapping({"spark.dpp.lister": "Hadoop"}).lister == "hadoop"
    assert is_local_location("relative/path") and not is_local_location("gs://b/t")


def test_a_scheme_without_a_filesystem_is_an_error_naming_the_location(spark) -> None:
    with pytest.raises(LayoutError, match="nosuchfs://bucket/t"):
        table_from_path("nosuchfs://bucket/t", lister=HadoopLister(spark))


def test_status_decoding_stops_at_the_padding() -> None:
    def entry(ftype: int, path: str, length: int) -> bytes:
        p = path.encode()
        msg = bytes([0x08, ftype, 0x12, len(p)]) + p + bytes([0x18, length])
        return len(msg).to_bytes(4, "big") + msg

    buf = entry(1, "file:/t/k=a%3Ab", 0) + entry(2, "file:/t/f.parquet", 42) + bytes(64)
    assert [(t, p, n) for t, p, n, _ in _decode_statuses(buf)] == \
        [(1, "file:/t/k=a%3Ab", 0), (2, "file:/t/f.parquet", 42)]


def test_hadoop_lister_sees_what_the_local_one_sees(spark, tmp_path: Path) -> None:
    """Names with escapes, spaces, ``;``, ``@`` and non-ASCII characters, hidden files, the
    default partition: the same entries, and one LIST per folder, no call per file."""
    root = tmp_path / "t"
    names = ["k=a%3Ab", "k=x y", "k=ü;,@", "k=__HIVE_DEFAULT_PARTITION__", "k=50%25"]
    for n in names:
        (root / n).mkdir(parents=True)
        for i in range(3):
            (root / n / f"part-{i}.parquet").write_bytes(b"x" * (i + 1))
        (root / n / ".part-0.parquet.crc").write_bytes(b"c")
    (root / "_SUCCESS").write_text("")
    local, hadoop = LocalLister(), HadoopLister(spark)
    uri = hadoop.location(str(root))
    assert uri == "file:" + str(root)
    ldirs, lfiles = local.list(str(root))
    hdirs, hfiles = hadoop.list(uri)
    assert [d.name for d in hdirs] == [d.name for d in ldirs] == sorted(names)
    assert lfiles == hfiles == []
    for d in hdirs:
        files = hadoop.list(d.path)[1]
        assert [(os.path.basename(f.path), f.size) for f in files] == \
            [(f"part-{i}.parquet", i + 1) for i in range(3)]
        assert all(os.path.exists(f.path[len("file:"):]) for f in files)
    assert hadoop.calls.snapshot() == (1 + len(names), 0)
    assert hadoop.is_dir(uri) and not hadoop.is_dir(uri + "/nope")
    assert hadoop.calls.snapshot() == (1 + len(names), 2)


# ------------------------------------------------------------------ storage misbehaving

@pytest.mark.parametrize("lister_kind", ["local", "hadoop"], indirect=True)
def test_a_folder_removed_after_listing_is_an_error_naming_it(request, lister_kind,
                                                              tmp_path: Path,
                                                              monkeypatch) -> None:
    """Removed between the loader's listing of the root and of the partition: an error naming
    the folder (Spark's own listing fails the same way), never a silent loss of its rows."""
    import threading

    root = make_partitioned_table(tmp_path / "t", {(("d", str(i)),): {"x": [i]}
                                                   for i in range(4)})
    t = table_from_path(str(root), lister=make_lister(request, lister_kind))
    gone = root / "d=2"
    root_listed = threading.Event()
    cls = type(t.lister)
    real_list = cls.list

    def spy(self, folder):
        out = real_list(self, folder)
        if folder.rstrip("/").endswith("/t"):
            root_listed.set()
        return out

    monkeypatch.setattr(cls, "list", spy)

    def remove_then_answer(timeout: float):
        assert root_listed.wait(timeout)
        shutil.rmtree(gone)  # the root is listed (d=2 seen); now d=2 vanishes
        return answer(Domain.values(INT, [1, 2]))

    with pytest.raises(LayoutError, match=r"d=2.*does not exist"):
        SplitLoader(t, None, [DynamicFilter("f", "d", remove_then_answer)],
                    wait_timeout=5).load()


@pytest.mark.parametrize("lister_kind", ["local", "hadoop"], indirect=True)
def test_a_folder_removed_after_the_handoff_fails_the_query_like_spark(
        spark, request, lister_kind, tmp_path: Path) -> None:
    root = make_partitioned_table(tmp_path / "t", {(("d", str(i)),): {"x": [i]}
                                                   for i in range(4)})
    t = table_from_path(str(root), lister=make_lister(request, lister_kind))
    result = SplitLoader(t, TupleDomain.of({"d": Domain.values(INT, [1, 2])})).load()
    df = to_dataframe(spark, t, result)
    assert sorted(r.x for r in df.collect()) == [1, 2]
    shutil.rmtree(root / "d=2")
    with pytest.raises(Exception, match="(?i)(FileNotFound|does not exist|No such file)"):
        df.collect()


_PERMISSION_SCRIPT = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {repo!r})
    from dpp.core.domain import INT, Domain, TupleDomain
    from dpp.core.errors import LayoutError
    from hive_splits import SplitLoader, table_from_path
    t = table_from_path({root!r}, partition_types={{"d": "int"}})
    # the unreadable folder is pruned: nothing to read there, the load succeeds
    r = SplitLoader(t, TupleDomain.of({{"d": Domain.values(INT, [1])}})).load()
    assert [s.partition_values["d"] for s in r.splits] == [1], r.splits
    try:
        SplitLoader(t, TupleDomain.of({{"d": Domain.values(INT, [1, 2])}})).load()
    except LayoutError as exc:
        print("ERROR:", exc)
    else:
        print("NO ERROR")
""")


def test_a_partition_folder_that_may_not_be_read_is_an_error_naming_it(tmp_path: Path) -> None:
    """Run as an unprivileged user (root reads every folder whatever its mode): the kept
    partition the user may not list is named in the error; pruned, it costs nothing."""
    root = make_partitioned_table(tmp_path / "t", {(("d", str(i)),): {"x": [i]}
                                                   for i in range(3)})
    locked = root / "d=2"
    os.chmod(locked, 0)
    for p in [tmp_path, *tmp_path.parents]:
        if p != Path("/"):
            os.chmod(p, os.stat(p).st_mode | 0o005)  # others may traverse to the table
    for dirpath, dirnames, filenames in os.walk(root):
        if Path(dirpath) != locked:
            os.chmod(dirpath, 0o755)
    script = _PERMISSION_SCRIPT.format(repo=str(Path(__file__).resolve().parents[1]),
                                       root=str(root))
    cmd = [sys.executable, "-c", script]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root and setpriv (util-linux) is missing: cannot drop "
                        "privileges to test a permission error")
        cmd = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"] + cmd
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                             env={**os.environ, "HOME": str(tmp_path)})
    finally:
        os.chmod(locked, 0o755)
    assert out.returncode == 0, out.stderr
    assert "ERROR:" in out.stdout and "d=2" in out.stdout and "ermission" in out.stdout, \
        out.stdout


# ------------------------------------------------------------------ the metastore

@pytest.fixture()
def catalog_table(spark, tmp_path: Path):
    name = "ls_metastore_t"
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    data = [(i, i % 20, None if i % 7 == 0 else f"s{i % 3}") for i in range(200)]
    (spark.createDataFrame(data, "x int, p int, q string")
     .write.partitionBy("p", "q").saveAsTable(name))
    yield name
    spark.sql(f"DROP TABLE IF EXISTS {name}")


def _source_table(spark, name: str):
    import dataclasses

    shape = table_from_catalog(spark, name, partitions=False)
    return dataclasses.replace(shape, partition_source=MetastorePartitions(
        spark, name, shape.partition_columns))


@pytest.mark.parametrize("with_null, where, fetched_where", [
    # the metastore evaluates both columns' terms: exactly the survivors leave it
    (False, "p IN (3,4,5) AND q = 's1'", "p IN (3,4,5) AND q = 's1'"),
    # a Hive metastore cannot filter on the default (NULL) partition: Spark drops the q term
    # it cannot convert, so every partition of p in (3,4,5) is fetched; the loader re-tests
    (True, "p IN (3,4,5) AND (q = 's1' OR q IS NULL)", "p IN (3,4,5)"),
])
def test_the_metastore_returns_only_surviving_partitions(spark, catalog_table, with_null,
                                                         where, fetched_where) -> None:
    t = _source_table(spark, catalog_table)
    total = len(spark.sql(f"SHOW PARTITIONS {catalog_table}").collect())
    static = TupleDomain.of({"p": Domain.values(INT, [3, 4, 5])})
    qdom = Domain.values(STRING, ["s1"])
    if with_null:
        qdom = qdom.union(Domain.only_null(STRING))
    dyn = DynamicFilter("fq", "q", lambda timeout: answer(qdom))
    before = partitions_fetched_metric(spark)
    r = SplitLoader(t, static, [dyn], wait_timeout=5).load()
    after = partitions_fetched_metric(spark)

    def partitions(cond: str) -> set:
        return {(p, q) for p, q in spark.sql(f"SELECT DISTINCT p, q FROM {catalog_table} "
                                             f"WHERE {cond}").collect()}

    assert {(v["p"], v["q"]) for v in (kp.values for kp in r.partitions)} == partitions(where)
    assert r.partitions_total == total and r.metastore["names_listed"] == total
    assert r.metastore["pushed"] is True
    # counted by Spark's own Hive client: what left the metastore
    assert after - before == r.metastore["fetched"] == len(partitions(fetched_where)) < total
    got = to_dataframe(spark, t, r)
    assert rows(got) == rows(spark.table(catalog_table).where(where))


def test_with_no_domain_on_a_partition_column_every_object_comes_in_one_call(
        spark, catalog_table, monkeypatch) -> None:
    """Nothing can prune a partition (no domain, or one on a data column only): the names
    call is skipped, every partition object comes in one fetch, and the rows are the
    table's, the default (NULL) partition included."""
    t = _source_table(spark, catalog_table)
    total = len(spark.sql(f"SHOW PARTITIONS {catalog_table}").collect())
    calls = {"names": 0}
    real_rows = MetastorePartitions.rows   # the names call (one row of texts per partition)

    def counted(self):
        calls["names"] += 1
        return real_rows(self)

    monkeypatch.setattr(MetastorePartitions, "rows", counted)
    for static in (TupleDomain.all(), TupleDomain.of({"x": Domain.values(INT, [1, 2])})):
        before = partitions_fetched_metric(spark)
        r = SplitLoader(t, static, stats_pruning=False).load()
        after = partitions_fetched_metric(spark)
        assert calls["names"] == 0
        assert r.metastore["names_listed"] is None and r.metastore["pushed"] is False
        assert after - before == r.metastore["fetched"] == total
        assert r.partitions_total == r.partitions_kept == total
        assert rows(to_dataframe(spark, t, r)) == rows(spark.table(catalog_table))
    # a domain on a partition column still lists names first and fetches survivors only
    r = SplitLoader(t, TupleDomain.of({"p": Domain.values(INT, [7])})).load()
    assert calls["names"] == 1 and r.metastore["names_listed"] == total
    assert {kp.values["p"] for kp in r.partitions} == {7}


def test_when_the_metastore_cannot_evaluate_the_filter_all_partitions_are_fetched(
        spark, catalog_table, monkeypatch) -> None:
    t = _source_table(spark, catalog_table)
    total = len(spark.sql(f"SHOW PARTITIONS {catalog_table}").collect())

    def refuse(self, predicate):
        raise RuntimeError("MetaException: Filtering is supported only on partition keys "
                           "of type string")

    monkeypatch.setattr(MetastorePartitions, "_by_filter", refuse)
    static = TupleDomain.of({"p": Domain.values(INT, [7])})
    r = SplitLoader(t, static).load()
    assert r.metastore["pushed"] is False
    assert "could not evaluate" in r.metastore["note"]
    assert r.metastore["fetched"] == total       # every partition came back...
    assert {kp.values["p"] for kp in r.partitions} == {7}   # ...and the loader kept its own
    assert rows(to_dataframe(spark, t, r)) == rows(spark.table(catalog_table).where("p = 7"))


def test_a_session_on_a_catalog_table_reports_the_metastore_counts(spark, catalog_table) -> None:
    from dpp import DppSession

    dpp = DppSession(spark, config=DppConfig(wait_timeout=60.0, filter_cache=False))
    spark.createDataFrame([(3, "a"), (4, "a"), (5, "b")], "k int, tag string") \
        .createOrReplaceTempView("ls_keys")
    q = (f"SELECT count(*), sum(x) FROM {catalog_table} JOIN ls_keys ON p = k "
         f"WHERE tag = 'a'")
    got = dpp.collect(q)
    assert [tuple(r) for r in got] == [tuple(r) for r in spark.sql(q).collect()]
    t = [x for x in dpp.last_report.to_dict()["tables"] if x["table"] == catalog_table][0]
    total = len(spark.sql(f"SHOW PARTITIONS {catalog_table}").collect())
    kept = len(spark.sql(f"SHOW PARTITIONS {catalog_table}").where(
        "partition LIKE 'p=3/%' OR partition LIKE 'p=4/%'").collect())
    assert t["pruning"] == "applied" and t["partitions_kept"] == kept
    assert t["metastore_names"] == total and t["metastore_fetched"] == kept
    assert t["metastore_pushed"] is True


@pytest.mark.parametrize("lister_kind", ["local", "hadoop"], indirect=True)
def test_handoff_requests_are_counted_and_fewer_than_sparks_own_listing(
        spark, request, lister_kind, tmp_path) -> None:
    """The listing handoff (``to_dataframe``: a table read through the loader's listing,
    as ``spark.dpp.listWholeCatalogTables`` reads one) asks the storage for little: kept
    folders given whole as paths cost about one LIST and one HEAD per folder; none at all
    when the Hadoop lister's statuses are handed over — against Spark's own opening of the
    path table, which lists every folder. (A declared table off the hook is Spark's reader
    of its folder, which lists every folder: see tests/test_sql_text_declared_handoff.py.)"""
    from hive_splits.storage_calls import storage_calls

    if os.environ.get("DPP_TEST_NO_COUNTING"):
        pytest.skip(f"no counting filesystem: {os.environ['DPP_TEST_NO_COUNTING']}")
    root = make_partitioned_table(tmp_path / "fact", {(("d", str(i)),): {"x": [i, i + 1]}
                                                      for i in range(30)})
    t = table_from_path(str(root), lister=make_lister(request, lister_kind))
    result = SplitLoader(t, TupleDomain.of({"d": Domain.values(INT, [4, 5, 6])})).load()
    assert result.partitions_kept == 3 and result.list_calls == 1 + 3 \
        and result.head_calls == 0
    calls0 = storage_calls(spark)
    df = to_dataframe(spark, t, result)
    calls1 = storage_calls(spark)
    lists, heads = calls1[0] - calls0[0], calls1[1] - calls0[1]
    assert sorted(r.x for r in df.collect()) == [4, 5, 5, 6, 6, 7]
    if lister_kind == "local":   # Spark is handed the kept folders: it checks and lists each
        assert 1 <= lists <= 3 and heads <= 2 * 3 + 1
    else:  # handed Hadoop's statuses as listed: Spark lists nothing again; its one HEAD is
        # the check that basePath is a folder (PartitioningAwareFileIndex), per table
        assert (lists, heads) == (0, 1)
    before = storage_calls(spark)
    spark.read.parquet(str(root))
    after = storage_calls(spark)
    assert after[0] - before[0] >= 1 + 30   # Spark's own opening lists every folder


def test_string_partitions_with_quotes_and_escapes_reach_the_metastore_filter(spark) -> None:
    """Surviving values with quotes, backslashes, spaces and Hive escapes are written into
    the metastore filter as literals that match them exactly: pushed, and only those come
    back."""
    name = "ls_metastore_s"
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    values = ["a'b", "c\\d", "e f", "g:h", "plain", "x=y"]
    try:
        (spark.createDataFrame([(i, v) for i, v in enumerate(values * 3)], "x int, s string")
         .write.partitionBy("s").saveAsTable(name))
        t = _source_table(spark, name)
        wanted = ["a'b", "c\\d", "g:h", "x=y"]
        dyn = DynamicFilter("fs", "s", lambda timeout: answer(Domain.values(STRING, wanted)))
        r = SplitLoader(t, None, [dyn], wait_timeout=5).load()
        assert sorted(kp.values["s"] for kp in r.partitions) == sorted(wanted)
        assert r.metastore["pushed"] is True and r.metastore["note"] is None
        assert r.metastore["fetched"] == len(wanted)
        got = to_dataframe(spark, t, r)
        assert rows(got) == rows(spark.table(name).where(
            spark.table(name)["s"].isin(wanted)))
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_partition_names_come_back_whole_with_newlines_and_escapes(spark) -> None:
    """The names are fetched as one joined string: a value holding the separator (a newline),
    a percent sign, a slash or an equals sign must still come back as one partition, equal
    to what Spark lists; a table without partitions gives none."""
    name = "ls_metastore_n"
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    values = ["line1\nline2", "100%", "a/b", "k=v", "\t tab", "plain"]
    try:
        (spark.createDataFrame([(i, v) for i, v in enumerate(values)], "x int, s string")
         .write.partitionBy("s").saveAsTable(name))
        t = _source_table(spark, name)
        got = sorted(spec[0][1] for spec in t.partition_source.names())
        assert got == sorted(values)
        assert len(got) == len(spark.sql(f"SHOW PARTITIONS {name}").collect())
        spark.sql(f"ALTER TABLE {name} DROP PARTITION (s='plain')")
        assert "plain" not in {spec[0][1] for spec in t.partition_source.names()}
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.sql(f"CREATE TABLE {name} (x int, s string) USING parquet PARTITIONED BY (s)")
    try:
        assert _source_table(spark, name).partition_source.names() == []
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_surviving_values_become_runs_of_neighbours_in_the_metastore_filter() -> None:
    from hive_splits.metastore import MAX_TERMS
    from hive_splits.table import PartitionColumn

    src = MetastorePartitions(None, "t", [PartitionColumn("d", INT)])
    every = [(v, str(v)) for v in range(0, 400, 2)]          # the table's values: even only
    kept = [v for v in range(0, 400, 2) if 100 <= v <= 160 or v in (200, 300, 302)]
    survivors = [(("d", str(v)),) for v in kept] + [(("d", None),)]
    typed = [{"d": v} for v in kept] + [{"d": None}]
    pred = src._predicate(survivors, typed, [every])
    # neighbours among the table's values form one range (101 is no partition: exact)
    assert pred == ("((`d` >= CAST('100' AS int) AND `d` <= CAST('160' AS int)) OR "
                    "`d` = CAST('200' AS int) OR "
                    "(`d` >= CAST('300' AS int) AND `d` <= CAST('302' AS int)) OR `d` IS NULL)")
    # scattered survivors: at most MAX_TERMS terms, the closest runs merged (a superset)
    scattered = [v for v in range(0, 400, 2) if v % 8 == 0]
    pred = src._predicate([(("d", str(v)),) for v in scattered],
                          [{"d": v} for v in scattered], [every])
    assert pred.count(" OR ") + 1 <= MAX_TERMS
    assert "CAST('0' AS int)" in pred and "CAST('392' AS int)" in pred
    # without the table's values: an IN list, or one range past IN_LIST_LIMIT
    many = [(("d", str(v)),) for v in range(1500)]
    assert src._predicate(many, [{"d": v} for v in range(1500)]) == \
        "((`d` >= CAST('0' AS int) AND `d` <= CAST('1499' AS int)))"
    # every value of the column survives: no term for it
    assert src._predicate(survivors[:3], typed[:3], [every[50:53]]) is None
    assert src._predicate(many[:2], [{"d": 0}, {"d": 1}]) == \
        "(`d` IN (CAST('0' AS int), CAST('1' AS int)))"


# ------------------------------------------------------------------ bytes read

def test_the_counting_filesystem_counts_what_a_vectored_read_fetches(spark, tmp_path) -> None:
    """Spark's task input metric reads Hadoop's per-thread statistics, which miss what
    Parquet's vectored reads fetch on other threads; the bench's filesystem counts each read
    at the call. Reading one column of a file: its bytes are counted (and no more than the
    file), by a task, with vectored reads on and off alike."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from hive_splits.storage_calls import bytes_read

    if os.environ.get("DPP_TEST_NO_COUNTING"):
        pytest.skip(f"no counting filesystem: {os.environ['DPP_TEST_NO_COUNTING']}")
    path = tmp_path / "wide.parquet"
    n = 400_000
    pq.write_table(pa.table({"a": pa.array(range(n), pa.int64()),
                             "b": pa.array([i * 7919 % 1_000_003 for i in range(n)],
                                           pa.int64())}),
                   path, compression="NONE", use_dictionary=False)
    column_b = pq.ParquetFile(path).metadata.row_group(0).column(1).total_compressed_size
    size = path.stat().st_size
    hconf = spark.sparkContext._jsc.hadoopConfiguration()
    saved = hconf.get("parquet.hadoop.vectored.io.enabled")
    try:
        for vectored in ("true", "false"):
            hconf.set("parquet.hadoop.vectored.io.enabled", vectored)
            before = bytes_read(spark)
            assert before is not None
            assert spark.read.parquet(str(path)).selectExpr("sum(b)").collect()[0][0] > 0
            after = bytes_read(spark)
            build, tasks, _driver = (a - b for a, b in zip(after, before))
            assert build == 0
            assert column_b * 0.9 <= tasks <= size, (vectored, tasks, column_b, size)
    finally:
        if saved is None:
            hconf.unset("parquet.hadoop.vectored.io.enabled")
        else:
            hconf.set("parquet.hadoop.vectored.io.enabled", saved)
