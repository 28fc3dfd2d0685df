"""tpcds.generate: Hive layout of the facts, manifest skip / force, row counts checked.

Generating scale 0.01 (the smallest dsdgen accepts) costs tens of seconds on a busy machine,
so each layout is generated once: the default layout is the session's ``tpcds_sf001`` (exactly
``gen.generate(SF, out)``), copied because tests here change it; tests that must start from a
generated folder copy one instead of generating it again; the clustered layout is generated
once, by switching a copy of the default folder (what ``test_switching_layout_rewrites_the_folder``
checks), and the clustered tests read that folder.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import spark_conf
from tpcds import generate as gen

SF = 0.01
# Spark lists a folder of more than 32 partitions with a Spark job of one task per partition
# (~1,800 here) by default; in the shared local session the driver lists the same files far
# sooner (as tests/test_tpcds_bench.py does)
DRIVER_LISTING = {"spark.sql.sources.parallelPartitionDiscovery.threshold": "100000"}


def _copy_generated(src: Path, dest: Path) -> Path:
    """A copy of a generated folder: every table and the manifest (files keep their times),
    nothing else (not the answer cache other modules may have left in the session's data)."""
    dest.mkdir(parents=True)
    for t in gen.TABLES:
        shutil.copytree(src / t, dest / t)
    shutil.copy2(src / gen.MANIFEST, dest / gen.MANIFEST)
    return dest


@pytest.fixture(scope="module")
def data(tpcds_sf001: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default layout at SF, as ``gen.generate(SF, out)`` wrote it (conftest)."""
    return _copy_generated(tpcds_sf001, tmp_path_factory.mktemp("tpcds") / "sf001")


def test_every_table_is_written_with_its_generator_row_count(data: Path) -> None:
    manifest = json.loads((data / "manifest.json").read_text())
    assert manifest["sf"] == SF and manifest["complete"] is True
    assert set(manifest["tables"]) == set(gen.TABLES)
    assert "reason" in manifest["tables"]            # query 9 reads it
    assert manifest["generator"]["duckdb"] == "1.5.5"
    assert gen.verify(data) == {t: e["rows"] for t, e in manifest["tables"].items()}


def test_fact_tables_are_hive_partitioned_by_their_date_key(data: Path) -> None:
    for table, column in gen.FACT_PARTITIONS.items():
        dirs = [p for p in (data / table).iterdir() if p.is_dir()]
        assert dirs, table
        assert all(p.name.startswith(f"{column}=") for p in dirs), table
        assert not list((data / table).glob("*.parquet")), f"{table}: files outside partitions"
    null_dir = data / "store_sales" / "ss_sold_date_sk=__HIVE_DEFAULT_PARTITION__"
    assert null_dir.is_dir() and list(null_dir.glob("*.parquet"))


def test_partition_column_lives_in_the_path_not_in_the_files(data: Path) -> None:
    import pyarrow.parquet as pq

    f = next((data / "store_sales").glob("ss_sold_date_sk=*/*.parquet"))
    assert "ss_sold_date_sk" not in pq.read_schema(f).names
    assert "ss_item_sk" in pq.read_schema(f).names


def test_dimensions_and_inventory_are_plain_folders(data: Path) -> None:
    for t in ("date_dim", "item", "inventory", "reason"):
        assert not [p for p in (data / t).iterdir() if p.is_dir()], t
        assert list((data / t).glob("*.parquet")), t


def test_second_run_skips_what_the_manifest_records(data: Path) -> None:
    stamp = (data / "store_sales").stat().st_mtime_ns
    said: list[str] = []
    gen.generate(SF, data, progress=said.append)
    assert any("skipped" in s for s in said)
    assert (data / "store_sales").stat().st_mtime_ns == stamp


def test_missing_table_folder_is_regenerated(data: Path) -> None:
    import shutil

    shutil.rmtree(data / "reason")
    said: list[str] = []
    gen.generate(SF, data, progress=said.append)
    assert (data / "reason").is_dir()
    assert [s for s in said if "writing" in s] == ["[1/1] reason: writing ..."]


def test_force_rewrites_every_table(data: Path, tmp_path: Path) -> None:
    out = _copy_generated(data, tmp_path / "small")      # a complete folder, as generated
    assert gen.read_manifest(out)["complete"] is True
    marker = out / "store" / "stale.parquet"
    marker.write_bytes(b"")
    said: list[str] = []
    gen.generate(SF, out, force=True, progress=said.append)
    assert not marker.exists()
    assert len([s for s in said if "writing" in s]) == len(gen.TABLES)


def test_row_count_mismatch_is_an_error_naming_the_table(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gen, "count_parquet_rows", lambda con, out, table: -1)
    with pytest.raises(gen.GenerateError, match="call_center"):
        gen.generate(SF, tmp_path / "bad")


def test_out_of_memory_names_the_table_and_the_next_run_continues_from_the_generator(
        data: Path, tmp_path: Path) -> None:
    """DuckDB is held to ``memory_limit`` and keeps the generator's tables in a database file:
    a limit too low for a partitioned write fails naming the table and the limit, the next run
    writes the missing tables from that file without generating again, and the file is gone
    once the folder is complete. Same row counts as the in-memory generation of ``data``."""
    out = tmp_path / "bounded"
    with pytest.raises(gen.GenerateError,
                       match=r"table \w+: DuckDB ran out of its memory limit 100MB"):
        gen.generate(SF, out, memory_limit="100MB")
    assert (out / gen.WORK_DIR / "tpcds.duckdb").is_file()
    partial = gen.read_manifest(out)
    assert partial is not None and partial["complete"] is False
    said: list[str] = []
    manifest = gen.generate(SF, out, memory_limit="2GB", progress=said.append)
    assert any("from an earlier run" in s for s in said), said
    assert not any("dsdgen (" in s for s in said), said
    assert manifest["complete"] is True and not (out / gen.WORK_DIR).exists()
    expected = json.loads((data / "manifest.json").read_text())["tables"]
    assert gen.verify(out) == {t: e["rows"] for t, e in expected.items()}


def test_ensure_generated_returns_the_manifest(data: Path) -> None:
    m = gen.ensure_generated(SF, data)
    assert m["tables"]["store_sales"]["rows"] > 0
    assert gen.ensure_generated(SF, str(data)) == m


def test_spark_reads_decimals_and_partition_keys(spark, data: Path) -> None:
    with spark_conf(spark, DRIVER_LISTING):
        df = spark.read.parquet(str(data / "store_sales"))
    types = dict(df.dtypes)
    assert types["ss_ext_sales_price"] == "decimal(7,2)"
    assert types["ss_sold_date_sk"] in ("int", "bigint")
    n = df.count()
    nulls = df.where("ss_sold_date_sk IS NULL").count()
    manifest = json.loads((data / "manifest.json").read_text())
    assert n == manifest["tables"]["store_sales"]["rows"]
    assert nulls > 0                                   # the default partition reads as NULL


# ---------------------------------------------------------------- the clustered layout (issue 15)
# the generator's optional layouts (clustered, bucketed) are benchmark data: their tests
# write thousands of small files and take minutes, so they run under `make test-all` only
# (marker full); the default layout above is what every other TPC-DS test reads
CLUSTERED = gen.Layout("clustered", rows_per_file=8, row_group_rows=4)


@pytest.fixture(scope="module")
def switched(data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A copy of the default layout, generated again with the clustered layout (the folder
    and what generate said): the module's one clustered generation."""
    out = _copy_generated(data, tmp_path_factory.mktemp("tpcds") / "sf001-clustered")
    assert gen.read_manifest(out)["layout"] == {"name": "default"}
    said: list[str] = []
    gen.generate(SF, out, layout=CLUSTERED, progress=said.append)
    return out, said


@pytest.fixture(scope="module")
def clustered(switched: tuple[Path, list[str]]) -> Path:
    return switched[0]


@pytest.mark.full
def test_clustered_layout_is_recorded_and_counts_equal_the_default(data: Path,
                                                                   clustered: Path) -> None:
    m = json.loads((clustered / "manifest.json").read_text())
    d = json.loads((data / "manifest.json").read_text())
    assert m["layout"] == {"name": "clustered", "rows_per_file": 8, "row_group_rows": 4,
                           "cluster_keys": gen.CLUSTER_KEYS}
    assert {t: e["rows"] for t, e in m["tables"].items()} == \
        {t: e["rows"] for t, e in d["tables"].items()}
    assert gen.verify(clustered) == {t: e["rows"] for t, e in m["tables"].items()}


@pytest.mark.full
def test_clustered_facts_hold_the_same_rows_as_the_default_layout(data: Path,
                                                                  clustered: Path) -> None:
    for table in gen.CLUSTER_KEYS:
        _assert_same_rows(data, clustered, table)


def _assert_same_rows(one: Path, other: Path, table: str) -> None:
    """Every row of ``table``, partition column included, in both folders, both ways (DuckDB;
    EXCEPT ALL keeps duplicates)."""
    con = gen.connect()
    try:
        a, b = (gen._sql_str(gen.parquet_glob(x, table)) for x in (one, other))
        # each folder read once (thousands of small files), then compared both ways
        for name, glob in (("one", a), ("other", b)):
            con.execute(f"CREATE TEMP TABLE {name} AS SELECT * FROM read_parquet('{glob}', "
                        f"hive_partitioning = true)")
        for (x, tx), (y, ty) in (((a, "one"), (b, "other")), ((b, "other"), (a, "one"))):
            n = con.execute(f"SELECT count(*) FROM (SELECT * FROM {tx} EXCEPT ALL "
                            f"SELECT * FROM {ty})").fetchone()[0]
            assert n == 0, f"{table}: {n} rows of {x} missing from {y}"
    finally:
        con.close()


@pytest.mark.full
def test_clustered_partitions_split_the_key_range_into_sorted_files(data: Path,
                                                                    clustered: Path) -> None:
    import pyarrow.parquet as pq

    for table, key in gen.CLUSTER_KEYS.items():
        part = gen.FACT_PARTITIONS[table]
        folders = sorted(p.name for p in (clustered / table).iterdir() if p.is_dir())
        assert folders == sorted(p.name for p in (data / table).iterdir() if p.is_dir())
        several = 0
        for folder in (clustered / table).iterdir():
            files = sorted(folder.glob("*.parquet"))
            several += len(files) > 1
            last_max = None
            for f in files:
                meta = pq.read_metadata(f)
                assert part not in meta.schema.names, f"{f}: partition column in the file"
                assert 0 < meta.num_rows <= CLUSTERED.rows_per_file, f
                assert all(meta.row_group(i).num_rows <= CLUSTERED.row_group_rows
                           for i in range(meta.num_row_groups)), f
                keys = pq.read_table(f, columns=[key]).column(key).to_pylist()
                valued = [k for k in keys if k is not None]
                assert valued == sorted(valued), f"{f}: {key} not sorted"
                if valued:  # files follow one another along the key range
                    assert last_max is None or valued[0] >= last_max, f
                    last_max = valued[-1]
        assert several > 0, f"{table}: no partition was split into several files"


@pytest.mark.full
def test_switching_layout_rewrites_the_folder(switched: tuple[Path, list[str]]) -> None:
    out, said = switched            # a default-layout folder, generated again as clustered
    assert len([s for s in said if "writing" in s]) == len(gen.TABLES)
    assert gen.read_manifest(out)["layout"]["name"] == "clustered"
    assert len(list((out / "web_sales").glob("*/part-*.parquet"))) > \
        len([p for p in (out / "web_sales").iterdir() if p.is_dir()])


def test_a_bad_layout_is_an_error_naming_it() -> None:
    with pytest.raises(gen.GenerateError, match="zorder"):
        gen.Layout("zorder")
    with pytest.raises(gen.GenerateError, match="rows_per_file"):
        gen.Layout("clustered", rows_per_file=0)


@pytest.mark.full
def test_spark_reads_the_clustered_layout_with_the_default_layout_types(
        spark, data: Path, clustered: Path) -> None:
    for table in gen.CLUSTER_KEYS:
        with spark_conf(spark, DRIVER_LISTING):
            a = spark.read.parquet(str(data / table))
            b = spark.read.parquet(str(clustered / table))
        assert sorted(b.dtypes) == sorted(a.dtypes), table
        assert b.count() == a.count()


BUCKETED = gen.Layout("bucketed", buckets=4)


@pytest.fixture(scope="module")
def bucketed(spark, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tpcds") / "sf001-bucketed"
    with spark_conf(spark, DRIVER_LISTING):   # the generator's Spark reads its ~1,800 folders
        gen.generate(SF, out, layout=BUCKETED)
    return out


# Spark writes ~21k bucket files at SF 0.01 (one per date and bucket): minutes; the bucket
# pruning itself is tested over buckets of its own (tests/test_bucket_pruning.py)
@pytest.mark.slow
@pytest.mark.full
def test_bucketed_facts_hold_the_same_rows_in_their_buckets(data: Path, bucketed: Path) -> None:
    """Same rows as the default layout (DuckDB, both ways), every fact file named with its
    bucket, and every row of it hashing (Spark's hash) to that bucket."""
    import pyarrow.dataset as ds

    from dpp.core.domain import INT, BIGINT
    from hive_splits.buckets import bucket_id, bucket_of_file

    m = gen.read_manifest(bucketed)
    assert m["layout"] == {"name": "bucketed", "buckets": 4, "bucket_keys": gen.CLUSTER_KEYS}
    assert gen.verify(bucketed) == {t: e["rows"] for t, e in m["tables"].items()}
    for table, key in gen.CLUSTER_KEYS.items():
        _assert_same_rows(data, bucketed, table)
        bucket_of = {str(f): bucket_of_file(f.name) for f in (bucketed / table).rglob("*.parquet")}
        assert bucket_of
        for f, b_id in bucket_of.items():
            assert b_id is not None and 0 <= b_id < 4, f
        # every file in one scan (thousands of small files), each row with its file's name
        rows = ds.dataset(sorted(bucket_of), format="parquet").to_table(
            columns=[key, "__filename"])
        t = BIGINT if str(rows.schema.field(key).type) == "int64" else INT
        for v, f in zip(rows.column(key).to_pylist(), rows.column("__filename").to_pylist()):
            assert bucket_id(v, t, 4) == bucket_of[f], f"{f}: {key}={v} hashes to another bucket"


@pytest.mark.slow
@pytest.mark.full
def test_bucketed_catalog_tables_are_declared_bucketed(spark, bucketed: Path) -> None:
    from hive_splits import table_from_catalog
    from hive_splits.buckets import BucketSpec
    from tpcds.bench import ensure_catalog_tables

    db = ensure_catalog_tables(spark, bucketed, tables=["catalog_sales", "item"])
    t = table_from_catalog(spark, f"{db}.catalog_sales", partitions=False)
    assert t.bucketing == BucketSpec(4, ("cs_item_sk",), ())
    assert table_from_catalog(spark, f"{db}.item", partitions=False).bucketing is None
    assert spark.table(f"{db}.catalog_sales").count() == \
        gen.read_manifest(bucketed)["tables"]["catalog_sales"]["rows"]


def test_facts_are_written_in_chunks_one_file_per_partition(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """Past DuckDB's open-writer bound a partitioned COPY closes a writer and starts a new
    file when its partition gets rows again (700,000 files for store_sales at SF10 with 32
    open writers): a fact is written in chunks of partitions whose writers are all open at
    once, so each partition folder holds one file (here 100 dates + NULL in chunks of 16, the
    rows interleaved across dates as dsdgen's are), and every row is written once."""
    import duckdb

    monkeypatch.setattr(gen, "_CHUNK_PARTITIONS", 16)
    con = duckdb.connect()
    con.execute("SET threads = 1")
    con.execute("SET partitioned_write_max_open_files = 24")
    con.execute("SET partitioned_write_flush_threshold = 1024")   # (one COPY: 7,570 files)
    con.execute("CREATE TABLE t AS SELECT i AS v, CASE WHEN i % 97 = 0 THEN NULL "
                "ELSE 2450000 + i % 100 END AS d FROM range(200000) r(i)")
    dest = tmp_path / "t"
    gen._copy_partitioned(con, "t", dest, "d")
    folders = sorted(p.name for p in dest.iterdir())
    assert len(folders) == 101 and "d=__HIVE_DEFAULT_PARTITION__" in folders
    assert all(len(list((dest / f).glob("*.parquet"))) == 1 for f in folders), \
        {f: len(list((dest / f).glob("*.parquet"))) for f in folders}
    got = con.execute(f"SELECT count(*), count(DISTINCT v), sum(v) FROM "
                      f"read_parquet('{dest}/*/*.parquet')").fetchone()
    assert got == (200000, 200000, sum(range(200000)))
