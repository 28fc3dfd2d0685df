"""The split loader: exact counters, soundness against brute force, bad layouts, filters."""
from __future__ import annotations

import datetime as dt
import decimal
import logging
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any, Optional

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dpp.core.domain import BIGINT, DATE, INT, STRING, DataType, Domain, TupleDomain, decimal_type
from dpp.core.errors import LayoutError
from hive_splits import (DynamicFilter, FooterCache, SplitLoader, escape_path_name,
                         partition_folder_name, table_from_path)
from hive_splits.naming import DEFAULT_PARTITION_NAME, is_hidden, unescape_path_name

from hive_splits import table as _table_module
from hive_splits.listing import LocalLister
from tests.conftest import answer, make_lister, make_partitioned_table, write_parquet


@pytest.fixture(autouse=True)
def _every_lister(request: pytest.FixtureRequest, lister_kind: str,
                  monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test of this suite runs with both listers: the tables it makes are listed with
    ``os.scandir`` and with Hadoop's FileSystem on ``file:`` URIs, and must give the same
    splits and counters."""
    lister = make_lister(request, lister_kind)

    def with_lister(path: str, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("lister", lister.fresh())
        return _table_module.table_from_path(path, *args, **kwargs)

    monkeypatch.setitem(globals(), "table_from_path", with_lister)
    return lister_kind


def _local(path: str) -> str:
    """A split's path as a local path (the Hadoop lister names files ``file:/...``)."""
    return path[len("file:"):] if path.startswith("file:") else path


def ready(domain: Optional[Domain], outcome: str = "complete", reason: Optional[str] = None):
    """A dynamic filter's wait() that answers at once."""
    return lambda timeout: answer(domain, outcome, reason)


def single_level(root: Path, n: int = 40) -> Path:
    return make_partitioned_table(root, {(("d", str(i)),): {"x": [i, i + 100]}
                                         for i in range(n)})


# ------------------------------------------------------------------ counters

def test_counters_single_level_exact(tmp_path: Path) -> None:
    root = single_level(tmp_path / "t")
    (root / "_SUCCESS").write_text("")
    (root / "d=3" / ".part-00000.parquet.crc").write_text("x")
    t = table_from_path(str(root))
    assert [(c.name, c.type) for c in t.partition_columns] == [("d", INT)]
    assert t.columns == (("x", "bigint"),)
    r = SplitLoader(t, TupleDomain.of({"d": Domain.values(INT, range(7))})).load()
    assert (r.partitions_total, r.partitions_kept, r.pruned_static, r.pruned_dynamic) == \
        (40, 7, 33, 0)
    assert r.folders_listed == 7 + 1
    assert (r.files_listed, r.files_kept, r.files_skipped) == (7, 7, 0)
    assert r.bytes_kept == sum(s.size for s in r.splits)
    assert sorted(s.partition_values["d"] for s in r.splits) == list(range(7))


def test_counters_two_levels_count_pruned_folders_per_level(tmp_path: Path) -> None:
    parts = {(("a", str(a)), ("b", f"v{b}")): {"x": [1]} for a in range(5) for b in range(4)}
    t = table_from_path(str(make_partitioned_table(tmp_path / "t", parts)))
    static = TupleDomain.of({"a": Domain.values(INT, [1, 2])})
    dyn = DynamicFilter("f", "b", ready(Domain.values(STRING, ["v0"])))
    r = SplitLoader(t, static, [dyn], wait_timeout=5).load()
    assert [(lv.seen, lv.kept, lv.pruned_static, lv.pruned_dynamic) for lv in r.levels] == \
        [(5, 2, 3, 0), (8, 2, 0, 6)]
    assert (r.partitions_total, r.partitions_kept, r.pruned_static, r.pruned_dynamic) == \
        (13, 2, 3, 6)
    assert r.folders_listed == 1 + 2 + 2  # root, two kept a= folders, two kept leaves
    assert r.filters[0].arrived and r.filters[0].used and r.filters[0].outcome == "complete"


def test_static_none_reads_nothing(tmp_path: Path) -> None:
    t = table_from_path(str(single_level(tmp_path / "t", 3)))
    r = SplitLoader(t, TupleDomain.none()).load()
    assert r.splits == [] and r.folders_listed == 0


def test_null_partition_kept_only_when_null_allowed(tmp_path: Path) -> None:
    root = make_partitioned_table(tmp_path / "t", {(("d", "1"),): {"x": [1]},
                                                  (("d", DEFAULT_PARTITION_NAME),): {"x": [2]}})
    t = table_from_path(str(root))
    assert t.partition_columns[0].type == INT
    kept = lambda d: sorted((s.partition_values["d"] for s in  # noqa: E731
                             SplitLoader(t, TupleDomain.of({"d": d})).load().splits),
                            key=lambda v: (v is not None, v))
    assert kept(Domain.values(INT, [1])) == [1]
    assert kept(Domain.values(INT, [1], null_allowed=True)) == [None, 1]
    assert kept(Domain.only_null(INT)) == [None]
    assert kept(Domain.range(INT, 0, None)) == [1]


def test_all_null_column_is_string(tmp_path: Path) -> None:
    root = make_partitioned_table(tmp_path / "t", {(("d", DEFAULT_PARTITION_NAME),): {"x": [1]}})
    assert table_from_path(str(root)).partition_columns[0].type == STRING


# ------------------------------------------------------------------ dynamic filters

def test_multiple_filters_on_one_column_are_intersected(tmp_path: Path) -> None:
    t = table_from_path(str(single_level(tmp_path / "t", 10)))
    fs = [DynamicFilter("f1", "d", ready(Domain.range(INT, 2, 6))),
          DynamicFilter("f2", "d", ready(Domain.values(INT, [1, 5, 6, 9])))]
    r = SplitLoader(t, None, fs, wait_timeout=5).load()
    assert sorted(s.partition_values["d"] for s in r.splits) == [5, 6]
    assert r.pruned_dynamic == 8


def test_filter_of_another_type_is_not_used(tmp_path: Path) -> None:
    t = table_from_path(str(single_level(tmp_path / "t", 5)))
    r = SplitLoader(t, None, [DynamicFilter("f", "d", ready(Domain.values(BIGINT, [1])))],
                    wait_timeout=5).load()
    assert r.partitions_kept == 5
    assert r.filters[0].outcome == "type_mismatch" and "bigint" in r.filters[0].reason
    assert not r.filters[0].used


def test_filter_that_times_out_prunes_nothing(tmp_path: Path) -> None:
    t = table_from_path(str(single_level(tmp_path / "t", 5)))
    release = threading.Event()

    def never(timeout: float):  # ignores its timeout on purpose: the loader must not wait
        release.wait(30)
        return answer(Domain.values(INT, [1]))

    try:
        r = SplitLoader(t, None, [DynamicFilter("late", "d", never)], wait_timeout=0.2).load()
    finally:
        release.set()
    assert r.partitions_kept == 5 and r.pruned_dynamic == 0
    assert r.filters[0].outcome == "timeout" and not r.filters[0].arrived
    assert r.wait_seconds <= 0.2 + 0.5


def test_filter_reporting_timeout_or_failure_prunes_nothing(tmp_path: Path) -> None:
    t = table_from_path(str(single_level(tmp_path / "t", 5)))

    def boom(timeout: float):
        raise RuntimeError("redis down")

    fs = [DynamicFilter("a", "d", ready(None, "timeout", "build side slow")),
          DynamicFilter("b", "d", boom),
          DynamicFilter("c", "d", ready(None, "too_large", "over max bytes"))]
    r = SplitLoader(t, None, fs, wait_timeout=5).load()
    assert r.partitions_kept == 5
    assert [(f.outcome, f.arrived) for f in r.filters] == \
        [("timeout", False), ("failed", False), ("too_large", False)]
    assert "redis down" in r.filters[1].reason


def test_filter_on_level_two_arrives_while_level_one_is_listed(tmp_path: Path,
                                                               monkeypatch) -> None:
    parts = {(("a", str(a)), ("b", str(b))): {"x": [1]} for a in range(3) for b in range(3)}
    root = make_partitioned_table(tmp_path / "t", parts)
    t = table_from_path(str(root))
    listed: list[str] = []
    lister_class = type(t.lister)
    real_list = lister_class.list

    def spy(self, path):
        listed.append(os.path.basename(str(path)))
        return real_list(self, path)

    monkeypatch.setattr(lister_class, "list", spy)
    level_one_listed = threading.Event()

    def wait_until_level_one_listed(timeout: float):
        # answers only once the loader has listed a level-1 folder: proof that it enumerates
        # level 1 while this level-2 filter is pending
        if level_one_listed.wait(timeout):
            return answer(Domain.values(INT, [2]))
        return answer(None, "timeout", "level 1 was never listed")

    def watch():
        while not level_one_listed.is_set():
            if any(n.startswith("a=") for n in list(listed)):
                level_one_listed.set()
            threading.Event().wait(0.005)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        r = SplitLoader(t, None, [DynamicFilter("b2", "b", wait_until_level_one_listed)],
                        wait_timeout=10).load()
    finally:
        level_one_listed.set()
    assert r.filters[0].outcome == "complete" and r.filters[0].used
    assert sorted((s.partition_values["a"], s.partition_values["b"]) for s in r.splits) == \
        [(0, 2), (1, 2), (2, 2)]
    assert r.folders_listed == 1 + 3 + 3


def test_unknown_and_data_column_filters(tmp_path: Path) -> None:
    t = table_from_path(str(single_level(tmp_path / "t", 3)))
    fs = [DynamicFilter("u", "nope", ready(Domain.values(INT, [1]))),
          DynamicFilter("x", "x", ready(Domain.values(BIGINT, [1])))]
    r = SplitLoader(t, None, fs, wait_timeout=1, stats_pruning=False).load()
    assert [f.outcome for f in r.filters] == ["unknown_column", "unused"]
    assert r.files_kept == 3


# ------------------------------------------------------------------ statistics

def test_stats_pruning_skips_files_whose_min_max_cannot_match(tmp_path: Path) -> None:
    root = make_partitioned_table(tmp_path / "t", {
        (("d", "1"),): {"x": [1, 5]}, (("d", "2"),): {"x": [10, 20]},
        (("d", "3"),): {"x": [None, None]}, (("d", "4"),): {"x": [30, None]}},
        schema=pa.schema([("x", pa.int64())]))
    t = table_from_path(str(root))
    assert t.columns == (("x", "bigint"),)
    cache = FooterCache(max_entries=16)
    dyn = DynamicFilter("fx", "x", ready(Domain.values(BIGINT, [3, 15])))
    r = SplitLoader(t, None, [dyn], wait_timeout=5, stats_pruning=True,
                    footer_cache=cache, max_workers=2).load()
    assert sorted(s.partition_values["d"] for s in r.splits) == [1, 2]
    assert (r.files_pruned_stats, r.files_skipped, r.files_listed) == (2, 2, 4)
    # footers are kept for later loads only where the listing shows a file unchanged beyond
    # size and time (a local file's inode and change time; Hadoop's file: gives neither)
    proof = isinstance(t.lister, LocalLister)
    assert r.bytes_skipped > 0 and r.footers_read == 4 and len(cache) == (4 if proof else 0)
    # NULLs allowed: the files holding NULLs may match again
    static = TupleDomain.of({"x": Domain.values(BIGINT, [3], null_allowed=True)})
    r2 = SplitLoader(t, static, stats_pruning=True, footer_cache=cache).load()
    assert sorted(s.partition_values["d"] for s in r2.splits) == [1, 3, 4]
    assert cache.hits >= (4 if proof else 0)
    # off: nothing skipped
    r3 = SplitLoader(t, static, stats_pruning=False).load()
    assert r3.files_kept == 4


def test_corrupt_footers_are_kept_counted_and_warned(tmp_path: Path, caplog) -> None:
    root = make_partitioned_table(tmp_path / "t", {(("d", "1"),): {"x": [1]},
                                                  (("d", "2"),): {"x": [2]}})
    (root / "d=1" / "empty.parquet").write_bytes(b"")
    (root / "d=2" / "garbage.parquet").write_bytes(b"not a parquet file at all" * 10)
    t = table_from_path(str(root))
    static = TupleDomain.of({"x": Domain.values(BIGINT, [99])})
    with caplog.at_level(logging.WARNING, logger="hive_splits.loader"):
        r = SplitLoader(t, static, stats_pruning=True).load()
    assert sorted(os.path.basename(s.path) for s in r.splits) == ["empty.parquet",
                                                                  "garbage.parquet"]
    assert r.footers_unreadable == 2 and r.files_pruned_stats == 2
    assert "garbage.parquet" in caplog.text and "empty.parquet" in caplog.text


def test_a_file_rewritten_with_its_size_and_mtime_is_judged_by_its_new_footer(
        tmp_path: Path) -> None:
    """Size and modification time do not show a file unchanged: rewritten in place with both
    kept, it must not be skipped by the statistics of its old footer (Spark reads the new)."""
    import pyarrow.parquet as pq

    folder = tmp_path / "t" / "d=1"
    folder.mkdir(parents=True)
    f = folder / "part-0.parquet"
    pq.write_table(pa.table({"x": pa.array([1, 5], pa.int64())}), f, compression="NONE")
    t = table_from_path(str(tmp_path / "t"))
    cache = FooterCache()
    static = TupleDomain.of({"x": Domain.values(BIGINT, [42])})
    r = SplitLoader(t, static, stats_pruning=True, footer_cache=cache).load()
    proof = isinstance(t.lister, LocalLister)
    assert r.files_kept == 0 and r.files_pruned_stats == 1 and len(cache) == int(proof)
    st = f.stat()
    pq.write_table(pa.table({"x": pa.array([42, 5], pa.int64())}), f, compression="NONE")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (f.stat().st_size, f.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    r2 = SplitLoader(t, static, stats_pruning=True, footer_cache=cache).load()
    assert r2.files_kept == 1, "judged by the old footer"


def test_footer_cache_is_bounded_and_keyed_by_mtime(tmp_path: Path) -> None:
    c = FooterCache(max_entries=2)
    c.put(("a", 1, 1), "A")
    c.put(("b", 1, 1), "B")
    assert c.get(("a", 1, 1)) == "A"
    c.put(("c", 1, 1), "C")  # evicts b, the least recently used
    assert c.get(("b", 1, 1)) is None and c.get(("a", 1, 1)) == "A"
    assert c.get(("a", 1, 2)) is None and len(c) == 2


# ------------------------------------------------------------------ bad layouts

def _mk(root: Path, *rel: str) -> Path:
    for r in rel:
        write_parquet(root / r / "part-0.parquet", {"x": [1]})
    return root


@pytest.mark.parametrize("folders, types, column, culprit", [
    (["d=1", "d=abc"], {"d": "int"}, "d", "d=abc"),
    (["a=1/b=2", "a=1/c=3"], None, "b", "c=3"),
    (["a=1", "x=1"], None, "a", "x=1"),
    (["a=1", "oops"], None, "a", "oops"),
    (["a=1/b=2", "a=2/notkv"], None, "b", "notkv"),
])
def test_bad_layouts_raise_layout_error_naming_path_and_column(tmp_path, folders, types,
                                                                column, culprit) -> None:
    root = _mk(tmp_path / "t", *folders)
    with pytest.raises(LayoutError) as ei:
        t = table_from_path(str(root), partition_types=types)
        SplitLoader(t).load()
    msg = str(ei.value)
    assert culprit in msg and repr(column) in msg


@pytest.mark.parametrize("empty", ["d=1.50", "d=3000000000", "d=1.50/e=2"])
def test_a_folder_holding_no_file_is_passed_over_whatever_its_value(tmp_path: Path,
                                                                    empty: str) -> None:
    """Spark's discovery infers ``d`` from the folders that hold files (int here) and ignores
    an empty one; its value, unreadable as int, must not fail the listing either."""
    root = _mk(tmp_path / "t", "d=3", "d=7")
    (root / empty).mkdir(parents=True)
    t = table_from_path(str(root))
    assert t.partition_columns[0].type.simple_string() == "int"
    res = SplitLoader(t, TupleDomain.of({"d": Domain.values(t.partition_columns[0].type,
                                                             [3])})).load()
    assert [s.partition_values["d"] for s in res.splits] == [3]
    (root / empty / "part-0.parquet").write_bytes((root / "d=3" / "part-0.parquet").read_bytes())
    with pytest.raises(LayoutError, match=empty.split("/")[0]):
        SplitLoader(table_from_path(str(root), partition_types={"d": "int"})).load()


def test_value_of_wrong_type_raises_even_when_a_filter_is_waiting(tmp_path: Path) -> None:
    root = _mk(tmp_path / "t", "d=1", "d=2020-01-01")
    t = table_from_path(str(root), partition_types={"d": "date"})
    with pytest.raises(LayoutError, match=r"d=1.*'d'.*date"):
        SplitLoader(t, TupleDomain.of({"d": Domain.values(DATE, [dt.date(2020, 1, 1)])})).load()


def test_missing_location_raises(tmp_path: Path) -> None:
    with pytest.raises(LayoutError, match="nowhere"):
        table_from_path(str(tmp_path / "nowhere"))
    root = single_level(tmp_path / "t", 2)
    t = table_from_path(str(root))
    shutil.rmtree(root)
    with pytest.raises(LayoutError, match=str(root)):
        SplitLoader(t).load()


def test_data_file_among_partition_folders_raises(tmp_path: Path) -> None:
    root = _mk(tmp_path / "t", "d=1")
    write_parquet(root / "stray.parquet", {"x": [1]})
    with pytest.raises(LayoutError, match=r"stray\.parquet.*'d'|'d'.*stray"):
        SplitLoader(table_from_path(str(root), partition_types={"d": "int"})).load()


# ------------------------------------------------------------------ soundness (hypothesis)

_TYPES = [INT, BIGINT, STRING, DATE, decimal_type(5, 2)]
_STRINGS = ["a", "b", "a:b", "a/b", "50%", "x y", "ünï", "#", "=", "%41", "-1", "Z"]


def _values(t: DataType) -> st.SearchStrategy:
    if t == INT:
        return st.integers(-5, 5)
    if t == BIGINT:
        return st.sampled_from([-(2 ** 40), -1, 0, 3, 2 ** 35, 2 ** 62])
    if t == STRING:
        return st.sampled_from(_STRINGS)
    if t == DATE:
        return st.dates(dt.date(1999, 12, 25), dt.date(2000, 1, 5))
    return st.integers(-300, 300).map(lambda n: decimal.Decimal(n).scaleb(-2))


def _text(t: DataType, v: Any) -> str:
    if t == DATE:
        return v.isoformat()
    if t.name == "decimal":
        return format(v, "f")
    return str(v)


@st.composite
def _domain(draw, t: DataType) -> tuple[Domain, bool]:
    """(domain, exact)"""
    null = draw(st.booleans())
    kind = draw(st.sampled_from(["values", "range", "all", "none", "bloom"]))
    if kind == "values":
        return Domain.values(t, draw(st.lists(_values(t), max_size=4)), null), True
    if kind == "range":
        a, b = sorted([draw(_values(t)), draw(_values(t))])
        lo = draw(st.sampled_from([a, None]))
        return Domain.range(t, lo, b, draw(st.booleans()), draw(st.booleans()), null), True
    if kind == "bloom":
        return Domain.bloom(t, draw(st.lists(_values(t), min_size=1, max_size=4)), 0.3,
                            null_allowed=null), False
    return (Domain.all(t) if kind == "all" else Domain.none(t)), True


@st.composite
def _layout(draw):
    levels = draw(st.integers(1, 2))
    types = [draw(st.sampled_from(_TYPES)) for _ in range(levels)]
    names = ["p", "q"][:levels]
    leaves = set()
    for _ in range(draw(st.integers(1, 8))):
        leaves.add(tuple(draw(st.one_of(st.none(), _values(t))) if draw(st.integers(0, 5)) == 0
                         else draw(_values(t)) for t in types))
    # typed values that are equal must share a folder: normalise through the text form
    doms = {}
    exact = True
    for n, t in zip(names, types):
        if draw(st.booleans()):
            d, ex = draw(_domain(t))
            doms[n] = (d, draw(st.booleans()))  # (domain, is dynamic)
            exact &= ex
    return names, types, sorted(leaves, key=repr), doms, exact


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(_layout())
def test_kept_partitions_are_sound_against_brute_force(layout) -> None:
    names, types, leaves, doms, exact = layout
    with tempfile.TemporaryDirectory(prefix="hs-prop-") as tmp:
        root = Path(tmp) / "t"
        folders = {}
        for leaf in leaves:
            rel = [partition_folder_name(n, None if v is None else _text(t, v))
                   for n, t, v in zip(names, types, leaf)]
            folders["/".join(rel)] = leaf
            (root.joinpath(*rel)).mkdir(parents=True, exist_ok=True)
            (root.joinpath(*rel) / "part-0.parquet").write_bytes(b"x")
        t = table_from_path(str(root), partition_types=dict(zip(names, types)),
                            schema=[("x", "int")])
        static = TupleDomain.of({n: d for n, (d, dyn) in doms.items() if not dyn})
        dynamic = [DynamicFilter(f"f{n}", n, ready(d)) for n, (d, dyn) in doms.items() if dyn]
        r = SplitLoader(t, static, dynamic, wait_timeout=5).load()
        kept = {os.path.relpath(os.path.dirname(_local(s.path)), root) for s in r.splits}
        matching = {rel for rel, leaf in folders.items()
                    if all(doms[n][0].contains(v) for n, v in zip(names, leaf) if n in doms)}
        assert matching <= kept
        if exact:
            assert kept == matching
        for s in r.splits:  # typed values read back from the folder names
            rel = os.path.relpath(os.path.dirname(_local(s.path)), root)
            assert tuple(s.partition_values[n] for n in names) == folders[rel]
        for lv in r.levels:
            assert lv.seen == lv.kept + lv.pruned_static + lv.pruned_dynamic
        assert r.partitions_kept == len(kept) == r.levels[-1].kept
        if static.is_none():  # nothing can match: nothing is listed
            assert r.folders_listed == 0 and not r.splits
        else:
            assert r.folders_listed == 1 + sum(lv.kept for lv in r.levels)


def test_hidden_names() -> None:
    for n in ["_SUCCESS", ".part.crc", "x.crc", "_metadata", ".hidden", "a._COPYING_"]:
        assert is_hidden(n)
    for n in ["part-0.parquet", "_col=1", "d=1"]:
        assert not is_hidden(n)


def test_escape_round_trip_is_identity() -> None:
    for s in _STRINGS + ["\x01\x7f{[]^}", "a\\b", "'\"*?"]:
        assert unescape_path_name(escape_path_name(s)) == s
    assert escape_path_name("a:b/c%") == "a%3Ab%2Fc%25"
    assert unescape_path_name("%%41%4") == "%A%4"


# ------------------------------------------------------------------ expression keys

def _sum_key(rows: list[list[Optional[str]]]) -> list[Any]:
    """What the JVM evaluator answers for ``a + b`` over int folder texts (a Python stand-in
    for Spark's evaluation; the loader's contract is the texts in, texts/None/errors out)."""
    out: list[Any] = []
    for a, b in rows:
        if a is None or b is None:
            out.append(None)
        elif a == "4":
            out.append(RuntimeError("overflow"))
        else:
            out.append(str(int(a) + int(b)))
    return out


def test_expression_key_prunes_at_its_last_column_and_keeps_what_it_cannot_compute(
        tmp_path: Path) -> None:
    from hive_splits import KeyExpression

    parts = {(("a", str(a)), ("b", str(b))): {"x": [1]} for a in range(5) for b in range(3)}
    parts[(("a", DEFAULT_PARTITION_NAME), ("b", "0"))] = {"x": [1]}
    t = table_from_path(str(make_partitioned_table(tmp_path / "t", parts)))
    calls: list[int] = []

    def evaluate(rows: list[list[Optional[str]]]) -> list[Any]:
        calls.append(len(rows))
        return _sum_key(rows)

    key = KeyExpression(columns=("a", "b"), type=INT, evaluate=evaluate)
    dyn = DynamicFilter("f", "(a + b)", ready(Domain.values(INT, [3])), expression=key)
    r = SplitLoader(t, None, [dyn], wait_timeout=5).load()
    kept = sorted((s.partition_values["a"], s.partition_values["b"]) for s in r.splits)
    # a + b = 3: (1,2) (2,1) (3,0); a=4 fails to compute: kept; NULL never matches
    assert kept == [(1, 2), (2, 1), (3, 0), (4, 0), (4, 1), (4, 2)]
    assert [(lv.seen, lv.kept, lv.pruned_dynamic) for lv in r.levels] == \
        [(6, 6, 0), (16, 6, 10)]
    assert calls == [16]   # one batch for the level, each distinct row once
    assert r.filters[0].used and r.filters[0].outcome == "complete"


def test_expression_key_that_cannot_be_evaluated_prunes_nothing(tmp_path: Path) -> None:
    from hive_splits import KeyExpression

    t = table_from_path(str(single_level(tmp_path / "t", 6)))

    def broken(rows: list[list[Optional[str]]]) -> list[Any]:
        raise ConnectionError("the JVM is gone")

    key = KeyExpression(columns=("d",), type=INT, evaluate=broken)
    dyn = DynamicFilter("f", "(d + 1)", ready(Domain.values(INT, [2])), expression=key)
    r = SplitLoader(t, None, [dyn], wait_timeout=5).load()
    assert r.partitions_kept == 6 and not r.filters[0].used
    assert "could not be evaluated" in (r.filters[0].reason or "")


def test_expression_key_over_a_data_column_is_refused_by_name(tmp_path: Path) -> None:
    from hive_splits import KeyExpression

    t = table_from_path(str(single_level(tmp_path / "t", 4)))
    key = KeyExpression(columns=("x",), type=BIGINT, evaluate=_sum_key)
    dyn = DynamicFilter("f", "(x + 1)", ready(Domain.values(BIGINT, [2])), expression=key)
    r = SplitLoader(t, None, [dyn], wait_timeout=5).load()
    assert r.partitions_kept == 4
    assert r.filters[0].outcome == "unknown_column" and "['x']" in r.filters[0].reason


_INT_TYPES = [DataType.from_catalog(t) for t in ("tinyint", "smallint", "int", "bigint")]
_INT_TEXTS = st.one_of(
    st.integers(-(2 ** 64), 2 ** 64).map(str),                       # in and out of range
    st.sampled_from(["0", "-0", "+1", "007", " 7", "7 ", "1_000", "٣", "", "-", "1e3",
                     "9223372036854775808", "-9223372036854775809", "128", "-129"]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(column=BIGINT, data=st.data(), texts=["1099511627776", "1", "2", "0012"],
         picks=[(None, Domain.values(INT, [1]))])
@example(column=INT, data=st.data(), texts=["5", "7"],
         picks=[(Domain.values(STRING, ["5"]), None)])
@given(column=st.sampled_from(_INT_TYPES), data=st.data(), picks=st.just(None),
       texts=st.lists(_INT_TEXTS, min_size=1, max_size=20))
def test_integral_fast_reading_gives_the_rules_answer_for_every_text(
        column: DataType, data: Any, picks: Optional[list], texts: list[str]) -> None:
    """The loader's fast reading of integral partition texts (one pass over 100,000 names)
    gives, for every text it answers, the typed value and verdict the general test gives
    (Spark's reading of the text, then each domain's own test), whatever the domains' types;
    texts it does not answer are left to the general test."""
    from dpp.core.spark_rules import DEFAULT_RULES
    from dpp.core.errors import DomainError, ValueOutOfRange
    from hive_splits.loader import _integral_answers
    from tests.domain_strategies import TYPES, any_domains

    def maybe_domain() -> Optional[Domain]:   # of the column's type or of any other
        if not data.draw(st.booleans()):
            return None
        return data.draw(any_domains(data.draw(st.sampled_from(TYPES))))

    static, dynamic = picks[0] if picks else (maybe_domain(), maybe_domain())

    def slow(raw: str) -> Optional[tuple[Any, str]]:
        try:
            value = DEFAULT_RULES.read_text(column, raw)
        except (DomainError, ValueOutOfRange):
            return None
        try:
            if static is not None and not static.contains(value):
                return value, "static"
            if dynamic is not None and not dynamic.contains(value):
                return value, "dynamic"
        except DomainError:
            return None
        return value, "keep"

    def test(raw: str, where: Any) -> Any:   # the general test's shape: memo and domains
        raise AssertionError("not called")
    test.memo = {}             # type: ignore[attr-defined]
    test.domains = (static, dynamic)   # type: ignore[attr-defined]
    _integral_answers(test, column, texts)
    for raw, answer in test.memo.items():   # type: ignore[attr-defined]
        assert slow(raw) == answer, (raw, column, static, dynamic)
        assert type(answer[0]) is int
    # canonical, in-range texts of an integral domain are answered (the fast path is taken)
    if all(d is None or d.type.integral_bounds for d in (static, dynamic)):
        assert "0" not in texts or "0" in test.memo   # type: ignore[attr-defined]


@pytest.mark.parametrize("stats", [False, True])
def test_a_filter_wanted_for_the_rows_only_reads_no_footer_and_gives_its_domain(
        tmp_path: Path, stats: bool) -> None:
    """A data column's filter built for the rows it removes (``rows_only``): its domain comes
    back for the caller's row filter whether statistics pruning is on or off, every file is
    kept, and no footer is read for it (statistics were judged unable to skip a file)."""
    root = single_level(tmp_path / "t", 6)
    t = table_from_path(str(root))
    dom = Domain.values(BIGINT, [1, 104])
    dyn = DynamicFilter("f1", "x", ready(dom), rows_only=True)
    r = SplitLoader(t, None, [dyn], wait_timeout=5, stats_pruning=stats).load()
    assert r.data_domains == {"x": dom}
    assert (r.files_kept, r.files_skipped, r.footers_read) == (6, 0, 0)
    assert r.filters[0].used and r.filters[0].outcome == "complete"
    # the same filter for statistics: footers are read and files skipped
    dyn = DynamicFilter("f2", "x", ready(dom))
    r = SplitLoader(t, None, [dyn], wait_timeout=5, stats_pruning=True).load()
    assert r.footers_read > 0 and r.files_skipped == 2   # d=2, d=3: [2, 102], [3, 103]
