"""``lagfs:``, the local disk with an object store's latency (hive_splits/jvm/
LaggedLocalFileSystem.java): Spark's reader and dpp's Hadoop lister both read through it, each
LIST and HEAD is counted once and delayed once, and the delay can be changed at runtime.

Nothing here times anything: the delay is checked by the total the filesystem says it
injected, request by request."""
from __future__ import annotations

import os
import pwd
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hive_splits.storage_calls import lag_conf, lag_uri, storage_calls

LIST, HEAD, OPEN = 0, 1, 2


# ------------------------------------------------------------------ without a JVM

def test_lag_uri_names_the_same_local_path_under_lagfs(tmp_path: Path, monkeypatch) -> None:
    assert lag_uri("/tmp/x") == "lagfs:///tmp/x"
    assert lag_uri(Path("/tmp/x/")) == "lagfs:///tmp/x"
    assert lag_uri("file:///tmp/x") == lag_uri("file:/tmp/x") == "lagfs:///tmp/x"
    assert lag_uri("//tmp//k=a%3Ab") == "lagfs:///tmp/k=a%3Ab"   # kept as spelt, not encoded
    assert lag_uri("/") == "lagfs:///"
    monkeypatch.chdir(tmp_path)
    assert lag_uri("rel") == "lagfs://" + str(tmp_path / "rel")
    with pytest.raises(ValueError, match="host"):
        lag_uri("file://otherhost/x")


def test_lag_conf_gives_hadoop_settings_in_milliseconds() -> None:
    assert lag_conf(200, 0.5) == {"spark.hadoop.fs.lagfs.list.ms": "200.0",
                                  "spark.hadoop.fs.lagfs.head.ms": "0.5"}
    with pytest.raises(ValueError, match="list delay"):
        lag_conf(-1, 0)
    with pytest.raises(ValueError, match="head delay"):
        lag_conf(0, float("nan"))


# ------------------------------------------------------------------ through the session

@pytest.fixture
def lagfs(spark) -> Any:
    """The JVM class ``dpp.hadoop.LaggedLocalFileSystem`` of the shared session."""
    reason = os.environ.get("DPP_TEST_NO_COUNTING")
    if reason:
        pytest.skip(f"no counting filesystem jar, so no lagfs: scheme: {reason}")
    if spark.sparkContext.getConf().get("spark.hadoop.fs.lagfs.impl", None) is None:
        pytest.skip("the session was started without fs.lagfs.impl (counting_conf)")
    cls = spark._jvm.dpp.hadoop.LaggedLocalFileSystem
    cls.clearDelays()
    yield cls
    cls.clearDelays()


@pytest.fixture
def fact(tmp_path: Path) -> Path:
    """A Hive-partitioned Parquet folder: p=1 with two files, p=2 with one, and a hidden file
    as Spark writes them."""
    root = tmp_path / "fact"
    files = {("1", 0): [1, 2, 3], ("1", 1): [4, 5], ("2", 0): [6, 7, 8, 9]}
    for (p, i), xs in files.items():
        folder = root / f"p={p}"
        folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"x": pa.array(xs, pa.int64()),
                                 "s": [f"v{x}" for x in xs]}),
                       folder / f"part-{i:05d}.parquet")
    (root / "_SUCCESS").write_text("")
    return root


def rows(df) -> Counter:
    return Counter(tuple(r) for r in df.collect())


def counts(lagfs) -> list[int]:
    return [int(c) for c in lagfs.counts()]


def delta(after: list[int], before: list[int]) -> list[int]:
    return [a - b for a, b in zip(after, before)]


def hadoop_fs(spark, uri: str) -> Any:
    """The (cached) Hadoop FileSystem Spark and dpp get for ``uri``."""
    path = spark._jvm.org.apache.hadoop.fs.Path(uri)
    return path.getFileSystem(spark._jsparkSession.sessionState().newHadoopConf())


def test_spark_reads_the_same_rows_through_lagfs(spark, lagfs, fact: Path) -> None:
    local = spark.read.parquet(str(fact))
    lagged = spark.read.parquet(lag_uri(fact))
    assert lagged.columns == local.columns == ["x", "s", "p"]
    assert rows(lagged) == rows(local)
    assert rows(lagged.where("p = 2")) == Counter((x, f"v{x}", 2) for x in (6, 7, 8, 9))


def test_spark_lists_through_lagfs_and_every_request_is_counted(spark, lagfs,
                                                                fact: Path) -> None:
    from pyspark.sql import functions as F

    before, calls_before = counts(lagfs), storage_calls(spark)
    df = spark.read.parquet(lag_uri(fact))   # lists the folder, the partitions
    listed = delta(counts(lagfs), before)
    files = [r.f for r in df.select(F.input_file_name().alias("f")).distinct().collect()]
    got = delta(counts(lagfs), before)
    calls_after = storage_calls(spark)

    assert listed[LIST] >= 3   # root, p=1, p=2 (one LIST each: see the lister's test)
    assert got[OPEN] >= len(files)    # the read opened each file through lagfs
    # storage_calls sees lagfs's requests (it may also see file:'s, made meanwhile)
    assert calls_after is not None and calls_before is not None
    assert calls_after[0] - calls_before[0] >= got[LIST]
    assert calls_after[1] - calls_before[1] >= got[HEAD]
    assert sorted(files) == sorted(
        f"lagfs://{fact}/p={p}/part-{i:05d}.parquet" for p, i in [(1, 0), (1, 1), (2, 0)])
    assert all(os.path.isfile(f[len("lagfs://"):]) for f in files)


def test_dpp_hadoop_lister_lists_lagfs_like_the_local_folder(spark, lagfs, fact: Path) -> None:
    from hive_splits.listing import HadoopLister
    from hive_splits.listers import lister_for

    lister = lister_for(lag_uri(fact), spark=spark)
    assert isinstance(lister, HadoopLister)
    root = lister.location(lag_uri(fact))
    assert root == f"lagfs:{fact}"

    before = counts(lagfs)
    dirs, files = lister.list(root)
    assert [d.name for d in dirs] == ["p=1", "p=2"] and files == []
    listed: dict[str, list[tuple[str, int]]] = {}
    for d in dirs:
        sub_dirs, sub_files = lister.list(d.path)
        assert sub_dirs == []
        listed[d.name] = [(os.path.basename(f.path), f.size) for f in sub_files]
        assert all(f.path.startswith(f"lagfs:{fact}/{d.name}/") for f in sub_files)
    on_disk = {d: sorted((n, (fact / d / n).stat().st_size) for n in os.listdir(fact / d))
               for d in ("p=1", "p=2")}
    assert listed == on_disk
    # one LIST a folder, exactly, and no HEAD: the status RawLocalFileSystem.listStatus takes
    # of each child is part of the listing
    assert delta(counts(lagfs), before) == [3, 0, 0]
    assert lister.calls.snapshot() == (3, 0)

    # a footer read opens the file: one OPEN, and the status check inside open is no HEAD
    first = lister.list(dirs[0].path)[1][0]
    before = counts(lagfs)
    meta = lister.read_footer(first.path, first.size)
    assert meta.num_rows == pq.read_metadata(fact / "p=1" / "part-00000.parquet").num_rows
    assert delta(counts(lagfs), before) == [0, 0, 1]

    before = counts(lagfs)
    assert lister.is_dir(dirs[0].path) and not lister.is_dir(root + "/nope")
    assert delta(counts(lagfs), before) == [0, 2, 0]


def test_dpp_loads_and_hands_off_a_lagfs_table(spark, lagfs, fact: Path) -> None:
    """The loader's listing and Spark's read of what it hands off both go through lagfs."""
    from pyspark.sql import functions as F

    from dpp.core.domain import INT, Domain, TupleDomain
    from hive_splits import SplitLoader, table_from_path, to_dataframe
    from hive_splits.listers import lister_for

    t = table_from_path(lag_uri(fact), lister=lister_for(lag_uri(fact), spark=spark))
    before = counts(lagfs)
    result = SplitLoader(t, TupleDomain.of({"p": Domain.values(INT, [2])})).load()
    assert delta(counts(lagfs), before)[LIST] >= 2   # the root and p=2, not p=1
    df = to_dataframe(spark, t, result)
    got = df.select("x", "s", "p", F.input_file_name().alias("f")).collect()
    assert Counter((r.x, r.s, r.p) for r in got) == \
        rows(spark.read.parquet(str(fact)).where("p = 2"))
    assert {r.f for r in got} == {f"lagfs://{fact}/p=2/part-00000.parquet"}


def test_statuses_have_the_local_files_owner_and_permissions(spark, lagfs, fact: Path) -> None:
    """Hadoop's local statuses read these from a file: URI, which fails under lagfs:; lagfs
    reads them with java.nio instead."""
    path = fact / "p=1" / "part-00000.parquet"
    os.chmod(path, 0o640)
    st = os.stat(path)
    fs = hadoop_fs(spark, lag_uri(fact))
    status = fs.getFileStatus(spark._jvm.org.apache.hadoop.fs.Path(lag_uri(path)))
    assert status.getPath().toString() == f"lagfs:{path}"
    assert status.getLen() == st.st_size and not status.isDirectory()
    assert status.getPermission().toShort() == 0o640
    assert status.getOwner() == pwd.getpwuid(st.st_uid).pw_name
    assert fs.getWorkingDirectory().toString().startswith("lagfs:/")
    assert fs.makeQualified(spark._jvm.org.apache.hadoop.fs.Path("/a/b")).toString() == \
        "lagfs:/a/b"


def test_delays_set_at_runtime_are_injected_once_per_request(spark, lagfs,
                                                             fact: Path) -> None:
    from hive_splits.listers import lister_for

    fs = hadoop_fs(spark, lag_uri(fact))
    assert (fs.listDelayMillis(), fs.headDelayMillis()) == (0.0, 0.0)
    try:
        lagfs.setDelays(200.0, 0.0)
        # the instance Hadoop cached (Spark's and dpp's) takes it at once
        assert (fs.listDelayMillis(), fs.headDelayMillis()) == (200.0, 0.0)
        before, injected = counts(lagfs), float(lagfs.injectedMillis())
        lister = lister_for(lag_uri(fact), spark=spark)
        lister.list(lister.location(lag_uri(fact)))
        assert spark.read.parquet(lag_uri(fact)).count() == 9
        got = delta(counts(lagfs), before)
        assert got[LIST] >= 1 + 3
        assert float(lagfs.injectedMillis()) - injected == pytest.approx(got[LIST] * 200.0)

        lagfs.setDelays(200.0, 5.5)
        before, injected = counts(lagfs), float(lagfs.injectedMillis())
        assert spark.read.parquet(lag_uri(fact)).where("p = 1").count() == 5
        got = delta(counts(lagfs), before)
        assert got[HEAD] >= 1
        assert float(lagfs.injectedMillis()) - injected == \
            pytest.approx(got[LIST] * 200.0 + got[HEAD] * 5.5)
        with pytest.raises(Exception, match="must be a finite number"):
            lagfs.setDelays(-1.0, 0.0)
    finally:
        lagfs.clearDelays()
    assert (fs.listDelayMillis(), fs.headDelayMillis()) == (0.0, 0.0)
    before, injected = counts(lagfs), float(lagfs.injectedMillis())
    spark.read.parquet(lag_uri(fact)).count()
    assert delta(counts(lagfs), before)[LIST] >= 3
    assert float(lagfs.injectedMillis()) == injected


def test_delays_from_the_hadoop_configuration(spark, lagfs, fact: Path) -> None:
    """``fs.lagfs.list.ms``/``head.ms`` (what :func:`lag_conf` sets) are read when the
    filesystem is created; an uncached instance shows it in a running session."""
    jvm = spark._jvm
    conf = spark._jsparkSession.sessionState().newHadoopConf()
    for key, value in lag_conf(12.5, 3.0).items():
        conf.set(key[len("spark.hadoop."):], value)
    conf.setBoolean("fs.lagfs.impl.disable.cache", True)
    fs = jvm.org.apache.hadoop.fs.Path(lag_uri(fact)).getFileSystem(conf)
    try:
        assert (fs.listDelayMillis(), fs.headDelayMillis()) == (12.5, 3.0)
        assert hadoop_fs(spark, lag_uri(fact)).listDelayMillis() == 0.0   # the cached one
        before, injected = counts(lagfs), float(lagfs.injectedMillis())
        fs.listStatus(jvm.org.apache.hadoop.fs.Path(lag_uri(fact)))
        assert fs.exists(jvm.org.apache.hadoop.fs.Path(lag_uri(fact / "p=1")))
        assert delta(counts(lagfs), before) == [1, 1, 0]
        assert float(lagfs.injectedMillis()) - injected == pytest.approx(12.5 + 3.0)
    finally:
        fs.close()
