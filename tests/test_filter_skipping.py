"""A build side that pruned nothing last time, over the same dimension files, is not built
again (outcome ``skipped``, reported); a changed dimension, or a run whose static domain had
already pruned, never leads to a skip. Rows are always Spark's. The memory shares the filter
cache's proof that the dimension is unchanged, and is on only with it
(``spark.dpp.filterCache.enabled=true``; off by default).
"""
from __future__ import annotations

import os
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpp import DppSession
from tests.conftest import spark_conf

SKIP_ON = {"spark.dpp.filterCache.enabled": "true", "spark.dpp.filterTtl": "1ms"}

PARTS = 5


@pytest.fixture
def star(spark, tmp_path):
    for p in range(PARTS):
        folder = tmp_path / "fact" / f"k={p}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"v": [p, p]}), folder / "f.parquet")
    dim = tmp_path / "dim"
    dim.mkdir()
    _write_dim(dim, range(PARTS))
    spark.read.parquet(str(dim)).createOrReplaceTempView("skip_dim")
    dpp = DppSession(spark)
    dpp.register_table("skip_fact", str(tmp_path / "fact"))
    yield dpp, dim
    spark.catalog.dropTempView("skip_dim")
    dpp.close()


def _write_dim(folder, keys):
    keys = list(keys)
    pq.write_table(pa.table({"d_k": pa.array(keys, pa.int32()),
                             "d_flag": ["y"] * len(keys)}), folder / "d.parquet")


Q = ("SELECT count(*) AS n FROM skip_fact JOIN skip_dim ON k = d_k "
     "WHERE d_flag = 'y'{extra}")


def _jobs(spark, filter_id):
    return spark.sparkContext.statusTracker().getJobIdsForGroup(f"dpp-build-{filter_id}")


def test_a_filter_that_pruned_nothing_is_skipped_next_time(spark, star):
    dpp, _ = star
    q = Q.format(extra="")
    # the memory is kept with the filter cache (it shares its fingerprint, off by default);
    # a 1 ms TTL leaves no cached filter to hide the skip
    with spark_conf(spark, SKIP_ON):
        assert dpp.collect(q)[0]["n"] == 2 * PARTS
        (first,) = dpp.last_report.filters
        assert first.outcome == "complete" and _jobs(spark, first.filter_id)
        assert dpp.last_report.tables[0].partitions_kept == PARTS
        time.sleep(0.01)
        assert dpp.collect(q)[0]["n"] == 2 * PARTS
        (second,) = dpp.last_report.filters
        assert second.outcome == "skipped" and "pruned nothing" in second.reason
        assert not _jobs(spark, second.filter_id)              # no build job ran
        assert dpp.last_report.tables[0].partitions_kept == PARTS


def test_a_changed_dimension_is_built_again(spark, star):
    dpp, dim = star
    q = Q.format(extra="")
    with spark_conf(spark, SKIP_ON):
        dpp.collect(q)
        time.sleep(0.01)
        _write_dim(dim, [1, 3])
        st = os.stat(dim / "d.parquet")
        os.utime(dim / "d.parquet", (st.st_atime, st.st_mtime + 5))
        spark.read.parquet(str(dim)).createOrReplaceTempView("skip_dim")
        assert dpp.collect(q)[0]["n"] == 4
        (f,) = dpp.last_report.filters
        assert f.outcome == "complete"
        assert dpp.last_report.tables[0].partitions_kept == 2


def test_no_skip_is_learned_where_a_static_domain_had_pruned(spark, star):
    dpp, _ = star
    with spark_conf(spark, SKIP_ON):
        # the static k < 2 prunes 3 partitions; the dynamic filter then prunes nothing more,
        # which says nothing of what it would do without the static domain
        assert dpp.collect(Q.format(extra=" AND k < 2"))[0]["n"] == 4
        time.sleep(0.01)
        assert dpp.collect(Q.format(extra=" AND k < 2"))[0]["n"] == 4
        (f,) = dpp.last_report.filters
        assert f.outcome == "complete"
