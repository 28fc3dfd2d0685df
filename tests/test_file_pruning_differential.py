"""Dynamic file pruning by Parquet statistics on a non-partition join key, against Spark with
every pruning off: int, bigint, decimal, string and date keys; files sorted by the key
(``clustered``: each file its own slice of the key range) and in arrival order (every file
spans the whole range); NULL keys on both sides and a file of NULL keys only; empty build
sides; build sides past ``maxDistinctValues`` (a range); a semi join; and an outer join that
must not prune. ``spark.dpp.statsPruning.enabled`` = ``true`` and ``auto``.
"""
from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.differential import Checks, Fact

N = 48            # distinct keys
FILES = 4         # files per partition (clustered: N / FILES consecutive keys each)
PARTS = 3
STATS_MODES = ["true", "auto"]

KEYS = {
    "int": (pa.int32(), lambda i: i - 20),
    "bigint": (pa.int64(), lambda i: (i - 20) * 10_000_000_000),
    "decimal": (pa.decimal128(10, 2), lambda i: decimal.Decimal(i * 37 - 500) / 100),
    "string": (pa.string(), lambda i: f"k{i:03d}"),
    "date": (pa.date32(), lambda i: dt.date(1969, 12, 1) + dt.timedelta(days=i * 3)),
}


def _write_fact(root: Path, key_type, value, clustered: bool) -> None:
    keys = list(range(N))
    for p in range(PARTS):
        folder = root / f"p={p}"
        folder.mkdir(parents=True)
        for f in range(FILES):
            ids = keys[f * N // FILES:(f + 1) * N // FILES] if clustered else keys[f::FILES]
            if not clustered:   # arrival order inside the file too: every row group spans
                ids = [ids[(i * 5) % len(ids)] for i in range(len(ids))]   # the range
            pq.write_table(pa.table({"k": pa.array([value(i) for i in ids], key_type),
                                     "v": pa.array([p * 1000 + i for i in ids], pa.int64())}),
                           folder / f"part-{f:05d}.parquet", row_group_size=4)
        if p == 0:   # a file of NULL keys only: no inner join can use it
            pq.write_table(pa.table({"k": pa.array([None, None], key_type),
                                     "v": pa.array([-1, -2], pa.int64())}),
                           folder / "part-nulls.parquet")


@pytest.fixture(scope="module")
def tables(spark, tmp_path_factory):
    """(key type, layout) → (fact root, dimension view name)."""
    base = tmp_path_factory.mktemp("filepruning")
    out = {}
    for name, (key_type, value) in KEYS.items():
        dim = f"fp_dim_{name}"
        dpath = base / f"dim_{name}"
        dpath.mkdir()
        pq.write_table(pa.table({
            "d_k": pa.array([value(i) for i in range(N)] + [None], key_type),
            "band": pa.array([i * FILES // N for i in range(N)] + [1], pa.int32()),
            "d_name": [f"n{i}" for i in range(N)] + ["null key"]}), dpath / "d.parquet")
        spark.read.parquet(str(dpath)).createOrReplaceTempView(dim)
        for layout in ("clustered", "arrival"):
            root = base / f"fact_{name}_{layout}"
            _write_fact(root, key_type, value, layout == "clustered")
            out[(name, layout)] = (str(root), dim)
    yield out
    for name in KEYS:
        spark.catalog.dropTempView(f"fp_dim_{name}")


def _fact_reports(check, name):
    (_, rep), *_ = check.runs
    return [t for t in rep["tables"] if t["table"] == name]


def _settings(mode: str, **extra: str) -> dict:
    return {"spark.dpp.statsPruning.enabled": mode, **extra}


@pytest.mark.parametrize("mode", STATS_MODES)
@pytest.mark.parametrize("key", list(KEYS))
def test_sorted_files_are_skipped_and_rows_are_exact(spark, tables, key, mode):
    root, dim = tables[(key, "clustered")]
    fact = Fact("path", f"fp_{key}_c_{mode}", root)
    tz = {"spark.sql.session.timeZone": "America/Los_Angeles"} if key == "date" else {}
    with Checks(spark) as checks:
        # band 1: the keys of one file per partition (plus the dimension's NULL key)
        c = checks.sql([fact], f"SELECT f.p, f.k, f.v, d.d_name FROM {{f0}} f JOIN {dim} d "
                               f"ON f.k = d.d_k WHERE d.band = 1", cache=False,
                       settings=_settings(mode, **tz))
        c.verify()
        assert c.expected_count == PARTS * N // FILES
        (t,) = _fact_reports(c, fact.name)
        # every partition keeps its band-1 file; the other files and the NULL file go
        assert t["files_pruned_stats"] == PARTS * (FILES - 1) + 1, t
        assert t["files_kept"] == PARTS and t["pruning"] == "applied", t
        checks.sql([fact], f"SELECT p, count(*), sum(v) FROM {{f0}} WHERE k IN "
                           f"(SELECT d_k FROM {dim} WHERE band IN (0, 3)) GROUP BY p",
                   cache=False, settings=_settings(mode, **tz))
        e = checks.sql([fact], f"SELECT count(*) FROM {{f0}} f JOIN {dim} d ON f.k = d.d_k "
                               f"WHERE d.band = 99", cache=False, settings=_settings(mode, **tz))
        e.verify()
        (t,) = _fact_reports(e, fact.name)
        assert t["files_kept"] == 0, t                  # an empty build side reads nothing


@pytest.mark.parametrize("key", ["int", "string", "date"])
def test_a_build_side_past_max_distinct_values_prunes_by_its_range(spark, tables, key):
    root, dim = tables[(key, "clustered")]
    fact = Fact("path", f"fp_{key}_range", root)
    with Checks(spark) as checks:
        c = checks.sql([fact], f"SELECT f.k, f.v FROM {{f0}} f JOIN {dim} d ON f.k = d.d_k "
                               f"WHERE d.band = 2", cache=False,
                       settings=_settings("true", **{"spark.dpp.maxDistinctValues": "3",
                                                     "spark.dpp.bloomFilter.enabled": "false",
                                                     "spark.sql.ansi.enabled": "true"}))
        c.verify()
        (t,) = _fact_reports(c, fact.name)
        assert t["files_kept"] == PARTS, t             # the range [min, max] of band 2


@pytest.mark.parametrize("mode", STATS_MODES)
@pytest.mark.parametrize("key", list(KEYS))
def test_files_in_arrival_order_keep_everything_but_null_files(spark, tables, key, mode):
    root, dim = tables[(key, "arrival")]
    fact = Fact("path", f"fp_{key}_a_{mode}", root)
    with Checks(spark) as checks:
        c = checks.sql([fact], f"SELECT f.k, f.v FROM {{f0}} f JOIN {dim} d ON f.k = d.d_k "
                               f"WHERE d.band = 1", cache=False, settings=_settings(mode))
        c.verify()
        (t,) = _fact_reports(c, fact.name)
        if mode == "true":      # read every footer: only the NULL-only file can go
            assert t["files_pruned_stats"] == 1 and t["files_kept"] == PARTS * FILES, t
        else:                   # auto: every file spans the range, no filter is even built
            assert t["pruning"] == "none" and "auto judged" in t["reason"], t
            assert not [f for f in c.runs[0][1]["filters"] if f["build_column"].endswith("d_k")]


@pytest.mark.parametrize("key", ["int", "decimal"])
def test_the_preserved_side_of_an_outer_join_is_never_pruned(spark, tables, key):
    root, dim = tables[(key, "clustered")]
    fact = Fact("path", f"fp_{key}_outer", root)
    with Checks(spark) as checks:
        c = checks.sql([fact], f"SELECT f.k, f.v, d.d_name FROM {{f0}} f LEFT JOIN {dim} d "
                               f"ON f.k = d.d_k AND d.band = 1", cache=False,
                       settings=_settings("true"))
        c.verify()
        for t in _fact_reports(c, fact.name):
            assert t["files_pruned_stats"] == 0, t
