"""The one-pass judgement of a level of integer partition names against the per-name test.

Random levels and domains: wherever the one pass answers, its verdicts are the domains' own
answers name by name (``Domain.contains`` of the value Spark reads from the text); wherever
one name is not an integer as Spark writes it, it declines and the loader's per-name path
judges. Then the loader itself, over folders and a catalog-shaped source, with the pass and
without it (forced off), keeps the same partitions.
"""
from __future__ import annotations

import random
from typing import Any, Optional

import pytest

from dpp.core.domain import Domain
from dpp.core.types import DataType
from hive_splits.name_verdicts import integral_name_verdicts

TYPES = ("tinyint", "smallint", "int", "bigint")


def _reference(texts: list[Optional[str]], static: Optional[Domain],
               dynamic: Optional[Domain]) -> list[str]:
    out = []
    for raw in texts:
        v = None if raw is None else int(raw)
        if static is not None and not static.contains(v):
            out.append("static")
        elif dynamic is not None and not dynamic.contains(v):
            out.append("dynamic")
        else:
            out.append("keep")
    return out


def _domain(rng: random.Random, type_: str, pool: list[int]) -> Optional[Domain]:
    kind = rng.choice(["none-given", "values", "range", "open", "bloom", "all", "empty",
                       "ranges", "null-only", "values-or-null"])
    if kind == "none-given":
        return None
    if kind == "null-only":
        return Domain.only_null(type_)
    if kind == "values-or-null":
        return Domain.values(type_, rng.sample(pool, min(len(pool), 5)), null_allowed=True)
    if kind == "values":
        return Domain.values(type_, rng.sample(pool, min(len(pool), rng.randint(1, 40))))
    if kind == "range":
        a, b = sorted(rng.sample(pool, 2)) if len(pool) > 1 else (pool[0], pool[0])
        return Domain.range(type_, a, b, rng.random() < 0.5, rng.random() < 0.5)
    if kind == "open":
        v = rng.choice(pool)
        return (Domain.range(type_, low=v, low_inclusive=rng.random() < 0.5)
                if rng.random() < 0.5 else
                Domain.range(type_, high=v, high_inclusive=rng.random() < 0.5))
    if kind == "bloom":
        return Domain.bloom(type_, rng.sample(pool, min(len(pool), rng.randint(1, 60))), 0.2)
    if kind == "all":
        return Domain.all(type_)
    if kind == "empty":
        return Domain.none(type_)
    top = max(pool)
    parts = [Domain.range(type_, v, min(top, v + rng.randint(0, 5)))
             for v in rng.sample(pool, min(3, len(pool)))]
    d = parts[0]
    for p in parts[1:]:
        d = d.union(p)
    return d


@pytest.mark.parametrize("seed", range(60))
def test_one_pass_verdicts_are_the_domains_answers(seed: int) -> None:
    rng = random.Random(seed)
    col_type = rng.choice(TYPES)
    lo, hi = DataType.parse(col_type).integral_bounds
    span = rng.choice([50, 1000, 10 ** 6])
    base = rng.randint(max(lo, -span), min(hi, span) - 1) if hi - lo > 2 * span else lo
    values = sorted({max(lo, min(hi, base + rng.randint(-span, span))) for _ in range(300)})
    texts = [str(v) for v in values]
    rng.shuffle(texts)
    dom_type = rng.choice([t for t in TYPES if TYPES.index(t) >= TYPES.index(col_type)])
    static = _domain(rng, dom_type, values)
    dynamic = _domain(rng, dom_type, values)
    prefix = rng.choice(["", "day=", "d_é="])
    names: list[Any] = [prefix + t for t in texts]
    raws: list[Optional[str]] = list(texts)
    if not prefix and seed % 2:   # raw values: the NULL partition among them
        raws.insert(rng.randrange(len(raws) + 1), None)
        names = list(raws)
    got = integral_name_verdicts(names, prefix, (lo, hi), static, dynamic)
    assert got is not None
    want = _reference(raws, static, dynamic)
    kept = [i for i, v in enumerate(want) if v == "keep"]
    assert got.kept == kept
    assert got.values == [None if raws[i] is None else int(raws[i]) for i in kept]
    assert got.static_pruned == want.count("static")
    assert [v for v, _t in got.sorted_values(raws)] == sorted(int(t) for t in texts)


@pytest.mark.parametrize("odd", ["007", "+1", "1.0", " 1", "1 ", "", "__HIVE_DEFAULT_PARTITION__",
                                 "1234567890123456789", "-", "0x10", "١٢", "1e3", "%31"])
def test_a_name_not_written_as_spark_writes_an_integer_declines(odd: str) -> None:
    names = ["day=1", "day=2", "day=" + odd, "day=3"]
    assert integral_name_verdicts(names, "day=", (-(1 << 31), (1 << 31) - 1),
                                  None, Domain.values("int", [1])) is None


def test_a_value_outside_the_column_type_declines() -> None:
    # Spark reads it, the per-name test keeps it (never pruned): not this pass's to answer
    names = ["p=1", "p=300"]
    assert integral_name_verdicts(names, "p=", (-128, 127), None,
                                  Domain.values("tinyint", [1])) is None
    # a domain of a narrower type bounds the pass too
    assert integral_name_verdicts(["p=1", "p=40000"], "p=", (-(1 << 31), (1 << 31) - 1),
                                  None, Domain.values("smallint", [1])) is None


def test_names_of_another_column_or_a_domain_of_another_kind_decline() -> None:
    assert integral_name_verdicts(["day=1", "dax=2"], "day=", (0, 10), None,
                                  Domain.values("int", [1])) is None
    assert integral_name_verdicts(["day=1"], "day=", (0, 10), None,
                                  Domain.values("string", ["1"])) is None
    assert integral_name_verdicts([], "day=", (0, 10), None, None) is None


def _folders(tmp_path: Any, values: list[str]) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path / "t"
    for v in values:
        d = root / f"day={v}"
        d.mkdir(parents=True)
        pq.write_table(pa.table({"x": [1]}), d / "part-0.parquet")
    return str(root)


@pytest.mark.parametrize("seed", range(6))
def test_the_loader_keeps_the_same_partitions_with_and_without_the_pass(
        tmp_path: Any, monkeypatch: Any, seed: int) -> None:
    import dataclasses

    from dpp.core.domain import TupleDomain
    from hive_splits import loader as L
    from hive_splits.listing import LocalLister, PrelistedLister
    from hive_splits.table import table_from_path
    from tests.conftest import answer

    rng = random.Random(seed)
    values = sorted(rng.sample(range(-50, 400), 60))
    texts = [str(v) for v in values]
    if seed % 3 == 2:   # one name the pass cannot read: every name judged on its own
        texts.append("0" + str(values[-1]))
    root = _folders(tmp_path, texts)
    static = TupleDomain.of({"day": Domain.range("int", -10, 300)}) if seed % 2 else None
    dynamic = Domain.values("int", rng.sample(values, 12) + [1000])
    rels = [f"day={t}" for t in texts]
    rng.shuffle(rels)
    calls = []
    real = L.integral_name_verdicts

    def spy(*a: Any, **k: Any) -> Any:
        got = real(*a, **k)
        calls.append(got is not None)
        return got

    def load(enabled: bool) -> Any:
        table = table_from_path(root, "t", partition_types={"day": "int"})
        inner = LocalLister()
        table = dataclasses.replace(
            table, lister=PrelistedLister(inner, inner.location(root), rels))
        monkeypatch.setattr(L, "integral_name_verdicts",
                            spy if enabled else (lambda *a, **k: None))
        f = L.DynamicFilter("f1", "day", lambda _t: answer(dynamic))
        return L.SplitLoader(table, static=static, dynamic=[f], wait_timeout=5).load()

    fast, slow = load(True), load(False)
    assert calls == [seed % 3 != 2]   # the pass answered unless a name was odd

    def key(r: Any) -> Any:
        return ([(k.path, k.values, k.relative) for k in r.partitions], sorted(r.pruned_folders),
                r.partitions_total, r.pruned_static, r.pruned_dynamic,
                sorted(s.path for s in r.splits))

    assert key(fast) == key(slow)
    assert fast.partitions_kept == slow.partitions_kept > 0


@pytest.mark.parametrize("null_allowed", [True, False])
@pytest.mark.parametrize("kind", ["values", "range", "bloom", "all", "none"])
def test_the_null_partition_is_kept_exactly_where_the_domain_holds_null(
        kind: str, null_allowed: bool) -> None:
    texts = [None, "1", "5", "9", None]
    d = {"values": lambda: Domain.values("int", [5], null_allowed=null_allowed),
         "range": lambda: Domain.range("int", 4, 6, null_allowed=null_allowed),
         "bloom": lambda: Domain.bloom("int", [5], 0.01, null_allowed=null_allowed),
         "all": lambda: Domain.all("int") if null_allowed else Domain.not_null("int"),
         "none": lambda: (Domain.only_null("int") if null_allowed else Domain.none("int"))}[kind]()
    for static, dynamic in ((None, d), (d, None), (d, d)):
        got = integral_name_verdicts(texts, "", (-(1 << 31), (1 << 31) - 1), static, dynamic)
        assert got is not None
        want = _reference(texts, static, dynamic)
        assert got.kept == [i for i, v in enumerate(want) if v == "keep"], (static, dynamic)
        assert (0 in got.kept) == null_allowed
        assert got.static_pruned == want.count("static")


@pytest.mark.parametrize("seed", range(4))
def test_a_catalog_tables_partitions_are_kept_the_same_with_and_without_the_pass(
        tmp_path: Any, monkeypatch: Any, seed: int) -> None:
    """A one-column catalog table (its partitions as the catalog lists them, the NULL
    partition among them): the loader keeps the same partitions, files and counts."""
    from dpp.core.domain import TupleDomain
    from hive_splits import loader as L
    from hive_splits.naming import DEFAULT_PARTITION_NAME
    from hive_splits.table import CatalogPartition, PartitionColumn, Table
    from tests.conftest import answer

    rng = random.Random(100 + seed)
    values = sorted(rng.sample(range(0, 300), 40))
    texts: list[Optional[str]] = [str(v) for v in values] + [None]
    root = _folders(tmp_path, [str(v) for v in values] + [DEFAULT_PARTITION_NAME])
    parts = tuple(CatalogPartition((("day", t),), f"{root}/day={t or DEFAULT_PARTITION_NAME}")
                  for t in texts)
    table = Table(name="t", location=root, columns=(("x", "bigint"),),
                  partition_columns=(PartitionColumn("day", "int"),),
                  catalog_partitions=parts, catalog_name="default.t")
    dynamic = Domain.values("int", rng.sample(values, 8), null_allowed=seed % 2 == 1)
    static = TupleDomain.of({"day": Domain.range("int", 20, 250, null_allowed=True)}) \
        if seed >= 2 else None
    calls = []

    def spy(*a: Any, **k: Any) -> Any:
        got = integral_name_verdicts(*a, **k)
        calls.append(got is not None)
        return got

    def load(enabled: bool) -> Any:
        monkeypatch.setattr(L, "integral_name_verdicts",
                            spy if enabled else (lambda *a, **k: None))
        f = L.DynamicFilter("f1", "day", lambda _t: answer(dynamic))
        return L.SplitLoader(table, static=static, dynamic=[f], wait_timeout=5).load()

    fast, slow = load(True), load(False)
    assert calls == [True]

    def key(r: Any) -> Any:
        return ([(k.path, k.values, k.relative) for k in r.partitions],
                r.partitions_total, r.pruned_static, r.pruned_dynamic,
                sorted(s.path for s in r.splits))

    assert key(fast) == key(slow)
    assert any(k.values["day"] is None for k in fast.partitions) == (seed % 2 == 1)
