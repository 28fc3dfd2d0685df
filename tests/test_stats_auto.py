"""``spark.dpp.statsPruning.enabled=auto`` without Spark: the footer-sample verdict per table
and column, the loader's early stop when a first sample of kept files skips nothing, the
setting's parsing, and the decision asking its policy once per table and column."""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpp.core.refusals import Code, Refusal
from dpp.runtime.config import DppConfig
from dpp.core.domain import BIGINT, Domain
from dpp.core.errors import ConfigError
from dpp.runtime.decision import decide
from dpp.frontends.sql.planner import analyze
from hive_splits import DynamicFilter, FooterCache, SplitLoader, table_from_path
from hive_splits.listing import LocalLister
from hive_splits.profile import (MIN_ROW_GROUPS, SPREAD_LIMIT, key_profile, profile_column,
                                 sample_files)
from tests.conftest import answer
from tests.test_decision import SALES, resolve

PARTS = 6
FILES = 4          # files per partition
ROWS = 40          # rows per file


def _write(root: Path, clustered: bool, key_type: pa.DataType = pa.int64(),
           convert=lambda k: k) -> Path:
    """PARTS partitions of FILES files; keys 0..FILES*ROWS-1 in every partition, either sorted
    and cut into FILES slices (clustered) or dealt round-robin in arrival order (every file,
    and every row group of it, spans them all)."""
    keys = list(range(FILES * ROWS))
    for p in range(PARTS):
        folder = root / f"d={p}"
        folder.mkdir(parents=True)
        for f in range(FILES):
            part = keys[f * ROWS:(f + 1) * ROWS] if clustered else keys[f::FILES]
            if not clustered:   # 7 is prime to ROWS: a permutation, neighbours far apart
                part = [part[(i * 7) % len(part)] for i in range(len(part))]
            pq.write_table(pa.table({"k": pa.array([convert(k) for k in part], key_type),
                                     "v": list(range(len(part)))}),
                           folder / f"part-{f:05d}.parquet", row_group_size=10)
    return root


@pytest.mark.parametrize("key_type,convert", [
    (pa.int64(), lambda k: k),
    (pa.string(), lambda k: f"item-{k:06d}"),
    (pa.date32(), lambda k: dt.date(2000, 1, 1) + dt.timedelta(days=k)),
    (pa.decimal128(10, 2), lambda k: __import__("decimal").Decimal(k) / 4),
], ids=["bigint", "string", "date", "decimal"])
def test_sorted_files_can_pay_and_files_in_arrival_order_cannot(tmp_path, key_type, convert):
    sorted_t = table_from_path(str(_write(tmp_path / "s", True, key_type, convert)))
    mixed_t = table_from_path(str(_write(tmp_path / "m", False, key_type, convert)))
    good = profile_column(sorted_t, "k")
    bad = profile_column(mixed_t, "k")
    assert good.can_pay and good.spread is not None and good.spread <= 0.3, good
    assert not bad.can_pay and bad.spread is not None and bad.spread > SPREAD_LIMIT, bad
    assert good.files_sampled == 8 and "used" in good.describe()
    assert "not used" in bad.describe() and "s.k" not in bad.describe()


def test_the_sample_spans_the_table_and_lists_only_what_it_samples(tmp_path):
    t = table_from_path(str(_write(tmp_path / "t", True)))
    lister = LocalLister()
    picked = sample_files(t, lister)
    folders = {Path(f.path).parent.name for f in picked}
    assert len(picked) == 8 and {"d=0", f"d={PARTS - 1}"} <= folders and len(folders) == 4
    assert lister.calls.snapshot()[0] == 1 + 4   # the root, then the four sampled partitions


def test_unknown_columns_and_empty_tables_are_not_used_and_say_why(tmp_path):
    t = table_from_path(str(_write(tmp_path / "t", True)))
    p = profile_column(t, "no_such_column")
    assert not p.can_pay and p.spread is None and "at least 2 needed" in p.why
    meta = pq.read_metadata(next((tmp_path / "t" / "d=0").iterdir()))
    assert key_profile("t", "k", [meta]).spread is None        # one file is no evidence


def test_one_file_sorted_into_many_row_groups_can_pay_by_its_row_groups(tmp_path):
    """An unpartitioned table of one file sorted by the key (TPC-DS inventory by date): no
    file-level evidence, but each row group holds one slice, so a filter pays (its values
    reach Parquet's row groups); the same file in arrival order does not."""
    keys = list(range(40 * MIN_ROW_GROUPS))
    for name, order in (("sorted", keys), ("mixed", [keys[(i * 97) % len(keys)]
                                                      for i in range(len(keys))])):
        (tmp_path / name).mkdir()
        pq.write_table(pa.table({"k": pa.array(order, pa.int64())}),
                       tmp_path / name / "part-0.parquet", row_group_size=40)
    good = profile_column(table_from_path(str(tmp_path / "sorted")), "k")
    bad = profile_column(table_from_path(str(tmp_path / "mixed")), "k")
    assert good.spread is None and good.row_groups == MIN_ROW_GROUPS, good
    assert good.row_group_spread is not None and good.row_group_spread < 0.1, good
    assert good.can_pay and "a row group spans" in good.describe() and ": used" in good.describe()
    assert not bad.can_pay and bad.row_group_spread > SPREAD_LIMIT, bad
    # fewer row groups than MIN_ROW_GROUPS are no evidence
    (tmp_path / "few").mkdir()
    pq.write_table(pa.table({"k": pa.array(keys[:40 * 3], pa.int64())}),
                   tmp_path / "few" / "part-0.parquet", row_group_size=40)
    few = profile_column(table_from_path(str(tmp_path / "few")), "k")
    assert few.row_group_spread is None and not few.can_pay, few


def _filter(values):
    return DynamicFilter("fk", "k", lambda timeout: answer(Domain.values(BIGINT, values)))


def test_loader_stops_reading_footers_when_a_first_sample_skips_nothing(tmp_path):
    """Scattered values (one in every file's range) on sorted files: the sample of 4 skips
    nothing, so no further footer is read, every file is kept, and the report says why."""
    t = table_from_path(str(_write(tmp_path / "t", True)))
    scattered = [f * ROWS + 3 for f in range(FILES)]
    r = SplitLoader(t, None, [_filter(scattered)], wait_timeout=5, stats_pruning=True,
                    stats_sample=4, max_workers=1).load()
    assert r.files_kept == PARTS * FILES and r.files_pruned_stats == 0
    assert r.stats_note and "none could be skipped" in r.stats_note
    assert r.footers_read <= 4 + 1     # the sample, plus at most one prefetch in flight


def test_loader_reads_on_when_the_sample_skips_files(tmp_path):
    t = table_from_path(str(_write(tmp_path / "t", True)))
    cache = FooterCache()
    r = SplitLoader(t, None, [_filter([5])], wait_timeout=5, stats_pruning=True,
                    stats_sample=4, footer_cache=cache).load()
    assert r.stats_note is None
    assert r.files_kept == PARTS and r.files_pruned_stats == PARTS * (FILES - 1)
    assert r.footers_read == PARTS * FILES and r.stats_seconds >= 0.0
    # every footer cached: a second load reads none from storage
    hits = cache.hits
    SplitLoader(t, None, [_filter([5])], wait_timeout=5, stats_pruning=True,
                stats_sample=4, footer_cache=cache).load()
    assert cache.hits - hits == PARTS * FILES


@pytest.mark.parametrize("raw,mode", [("auto", "auto"), ("AUTO", "auto"), ("true", "true"),
                                      ("on", "true"), ("false", "false"), ("0", "false")])
def test_stats_mode_setting(raw, mode):
    assert DppConfig.from_mapping({"spark.dpp.statsPruning.enabled": raw}).stats_pruning == mode


def test_stats_mode_default_is_auto_and_bad_values_name_the_key():
    assert DppConfig.from_mapping({}).stats_pruning == "auto"
    with pytest.raises(ConfigError, match=r"statsPruning.enabled='sometimes'.*auto, true or false"):
        DppConfig.from_mapping({"spark.dpp.statsPruning.enabled": "sometimes"})


def test_the_decision_asks_its_policy_once_per_table_and_column():
    asked = []

    def policy(table, column):
        asked.append((table.name, column))
        return column == "item"

    sql = ("SELECT s.amt FROM sales s JOIN items i ON s.item = i.i_id "
           "JOIN sales s2 ON s2.item = i.i_id WHERE i.color = 'red' AND s.amt > 3")
    d = decide(analyze(sql, resolve), {"sales": SALES}, query_id="q1", stats_pruning=policy,
               mentions=lambda text: ["sales"] if "sales" in text.lower() else [])
    assert sorted(set(asked)) == sorted(asked) == [("sales", "amt"), ("sales", "item")]
    assert len(d.filters) == 1 and d.groups          # the item filter is built
    for g in d.groups:                               # amt's static domain left out
        assert "amt" not in (g.static.domains or {})
    no = decide(analyze(sql, resolve), {"sales": SALES}, query_id="q1",
                stats_pruning=lambda t, c: False, mentions=lambda text: ["sales"])
    assert no.filters == () and no.groups == ()
    assert all("auto judged" in why.words() for _, why in no.unpruned)


# ---------------------------------------------------------------------------- through Spark
def _session_case(spark, tmp_path, clustered):
    from dpp import DppSession
    from tests.differential import PRUNING_OFF
    from tests.conftest import spark_conf

    root = _write(tmp_path / ("sorted" if clustered else "mixed"), clustered)
    dim = tmp_path / "dim"
    dim.mkdir(exist_ok=True)
    pq.write_table(pa.table({"i_k": pa.array(list(range(FILES * ROWS)), pa.int64()),
                             "i_pick": [k in (5, 7) for k in range(FILES * ROWS)]}),
                   dim / "d.parquet")
    spark.read.parquet(str(dim)).createOrReplaceTempView("auto_dim")
    spark.read.parquet(str(root)).createOrReplaceTempView("auto_fact_ref")
    q = ("SELECT f.d, f.k, f.v FROM {fact} f JOIN auto_dim i ON f.k = i.i_k "
         "WHERE i.i_pick")
    with spark_conf(spark, PRUNING_OFF):
        expected = sorted(tuple(r) for r in spark.sql(q.format(fact="auto_fact_ref")).collect())
    dpp = DppSession(spark)
    try:
        dpp.register_table("auto_fact", str(root))
        with spark_conf(spark, {"spark.dpp.statsPruning.enabled": None}):   # the default
            got = sorted(tuple(r) for r in dpp.collect(q.format(fact="auto_fact")))
        return expected, got, dpp.last_report
    finally:
        dpp.close()
        spark.catalog.dropTempView("auto_dim")
        spark.catalog.dropTempView("auto_fact_ref")


def test_auto_prunes_files_sorted_by_the_join_key(spark, tmp_path):
    expected, got, report = _session_case(spark, tmp_path, clustered=True)
    assert got == expected and len(got) == 2 * PARTS
    (t,) = report.tables
    assert t.files_pruned_stats == PARTS * (FILES - 1) and t.files_kept == PARTS
    assert t.footers_read == PARTS * FILES
    assert any("statistics pruning (auto): auto_fact.k" in n and ": used" in n
               for n in report.analysis_notes), report.analysis_notes


def test_auto_builds_nothing_for_files_in_arrival_order(spark, tmp_path):
    expected, got, report = _session_case(spark, tmp_path, clustered=False)
    assert got == expected and len(got) == 2 * PARTS
    assert report.filters == []                          # no build side for k at all
    (t,) = report.tables
    assert t.pruning == "none" and "auto judged" in (t.reason or "")
    assert any("auto_fact.k" in n and "not used" in n for n in report.analysis_notes)


def test_auto_builds_no_data_column_filter_whose_build_side_scans_a_fact():
    """Pruning r's files by item needs a scan of sales s: not under auto, only when forced."""
    sql = ("SELECT s.amt, r.amt FROM sales s LEFT JOIN sales r ON r.item = s.item "
           "WHERE s.d = 3")

    def run(stats):
        return decide(analyze(sql, resolve), {"sales": SALES}, query_id="q1",
                      stats_pruning=stats, mentions=lambda text: ["sales"])

    auto = run(lambda table, column: True)
    assert not any("item" in f.build_label for f in auto.filters)
    assert any("scans fact table sales" in n for n in auto.notes), auto.notes
    forced = run(True)
    assert any("item" in f.build_label for f in forced.filters)
